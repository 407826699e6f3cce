// Ops that only move data or relabel it. Views (reshape, squeeze, unsqueeze,
// clone, same-dtype copies) share the input's storage: nothing in a delegate's
// graph writes in place, so no copy is needed. permute gathers with strides.
#include <functional>
#include <optional>

#include "op_utils.h"
#include "shader_params.h"  // ConvertParams, StridedCopyParams: glsl/convert.glsl, strided_copy.glsl

namespace vkd {

namespace {

// view_copy(self, size): sizes with one -1 inferred from the input's numel.
Sizes infer_view_sizes(ComputeGraph& g, const IntList& req, int64_t numel) {
  Sizes out(req.begin(), req.end());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) g.fail("view sizes have more than one -1");
      infer = static_cast<int>(i);
    } else if (out[i] < 0) {
      g.fail("invalid view size " + std::to_string(out[i]));
    } else {
      known = checked_mul(known, out[i]);
    }
  }
  if (infer >= 0) {
    if (known == 0) g.fail("cannot infer a -1 view dim next to a zero dim");
    out[infer] = numel / known;
    known *= out[infer];
  }
  if (known != numel) {
    g.fail("view sizes " + sizes_str(out) + " do not hold " + std::to_string(numel) + " elements");
  }
  return out;
}

// `sizes_id`: an int list, or a SymInt[] with dynamic entries, read at every resize.
void add_reshape(ComputeGraph& g, int in, int out, int sizes_id) {
  g.add_view_node(g.current_op(), out, in, [in, out, sizes_id](ComputeGraph& g, Node&) {
    g.tensor(out).sizes = infer_view_sizes(g, g.get_int_list(sizes_id), g.tensor(in).numel());
  });
}

// An output with the same sizes as its input.
void add_identity(ComputeGraph& g, int in, int out) {
  g.add_view_node(g.current_op(), out, in, [in, out](ComputeGraph& g, Node&) {
    g.tensor(out).sizes = g.tensor(in).sizes;
  });
}

void require_contiguous_dim_order(ComputeGraph& g, int id, int64_t rank) {
  if (g.is_null(id)) return;
  const IntList& order = g.get_int_list(id);
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int64_t>(i)) g.fail("only the contiguous dim order is supported");
  }
  if (!order.empty() && static_cast<int64_t>(order.size()) != rank) g.fail("dim order has the wrong rank");
}

// _to_copy and _to_dim_order_copy: a view for the same dtype, else a conversion
// shader, named by the storages (int32 <-> int64 where both are int32 storage: a copy).
void add_to_copy(ComputeGraph& g, int in, int out) {
  const DType from = g.tensor(in).dtype, to = g.tensor(out).dtype;
  auto supported = [](DType t) {
    return t == DType::Float32 || t == DType::Float16 || t == DType::Int32 || t == DType::Int64 ||
           t == DType::Bool;
  };
  if (!supported(from) || !supported(to)) {
    g.fail(std::string("dtype conversion ") + dtype_name(from) + " -> " + dtype_name(to) +
           " is not supported");
  }
  if (from == to) {
    add_identity(g, in, out);
    return;
  }
  if (g.tensor(in).storage == g.tensor(out).storage) {
    // A host cast (ComputeGraph::plan_input_host_casts): the input already holds the output's halves.
    g.add_scalar_node(g.current_op(), [in, out](ComputeGraph& g, Node&) { g.tensor(out).sizes = g.tensor(in).sizes; });
    return;
  }
  const bool to_bool = to == DType::Bool;
  const StorageType from_st = g.tensor(in).storage_type, to_st = g.tensor(out).storage_type;
  const std::string shader = std::string("convert_") + storage_suffix(from_st) + "_to_" +
                             (to_bool ? "bool" : storage_suffix(to_st));
  std::vector<int> tensors{out, in};
  // Float to int64 checks that the value fits the storage (glsl/convert.glsl): the
  // checking variant of int32 storage is _int64, of int64 storage the plain one.
  std::string name = shader;
  if (is_float_dtype(from) && to == DType::Int64) {
    name = to_st == StorageType::I32 ? with_fault_slot(g, tensors, shader + "_int64", shader)
                                     : with_fault_slot(g, tensors, shader, shader + "_nocheck");
  }
  g.add_node(g.current_op(), name, kLocal1D, tensors, [in, out](ComputeGraph& g, Node& node) {
    Tensor& o = g.tensor(out);
    o.sizes = g.tensor(in).sizes;
    node.set_params(ConvertParams{static_cast<int32_t>(o.numel()), 0, 0, 0});
    node.set_groups_1d(o.numel(), kLocal1D[0]);
  });
}

// How a gather reads its input: output sizes, the input stride of each output
// dim, and a start offset; computed from the input's current sizes.
struct Gather {
  Sizes sizes;
  Sizes strides;
  int64_t offset = 0;
};
using GatherFn = std::function<Gather(ComputeGraph&, const Tensor& in)>;

void add_gather(ComputeGraph& g, int in, int out, GatherFn fn) {
  require_same_dtype(g, {in, out});
  g.add_node(g.current_op(), variant(g, "strided_copy", out), kLocal1D, {out, in},
             [in, out, fn](ComputeGraph& g, Node& node) {
               const Gather ga = fn(g, g.tensor(in));
               Tensor& o = g.tensor(out);
               o.sizes = ga.sizes;
               StridedCopyParams p{};
               pack8(p.out_sizes, ga.sizes);
               pack8(p.in_strides, ga.strides);
               p.numel = static_cast<int32_t>(o.numel());
               p.rank = static_cast<int32_t>(o.dim());
               p.in_offset = static_cast<int32_t>(ga.offset);
               node.set_params(p);
               node.set_groups_1d(o.numel(), kLocal1D[0]);
             });
}

// permute_copy(self, dims)
void add_permute(ComputeGraph& g, int in, int out, const IntList& dims_in) {
  const int64_t rank = g.tensor(in).dim();
  if (static_cast<int64_t>(dims_in.size()) != rank) g.fail("permute dims do not match the rank");
  IntList dims;
  std::vector<bool> seen(rank, false);
  for (int64_t d : dims_in) {
    const int64_t nd = normalize_dim(g, d, rank);
    if (seen[nd]) g.fail("permute dims repeat dim " + std::to_string(nd));
    seen[nd] = true;
    dims.push_back(nd);
  }
  add_gather(g, in, out, [dims](ComputeGraph&, const Tensor& t) {
    const Sizes st = t.strides();
    Gather ga;
    for (int64_t d : dims) {
      ga.sizes.push_back(t.sizes[d]);
      ga.strides.push_back(st[d]);
    }
    return ga;
  });
}

// select_copy.int(self, dim, index); the index may be a SymInt, read at every resize.
void add_select(ComputeGraph& g, int in, int out, int64_t dim, int index_id) {
  normalize_dim(g, dim, g.tensor(in).dim());
  add_gather(g, in, out, [dim, index_id](ComputeGraph& g, const Tensor& t) {
    const int64_t d = normalize_dim(g, dim, t.dim());
    const int64_t index = g.get_int(index_id);
    const int64_t i = index < 0 ? index + t.sizes[d] : index;
    if (i < 0 || i >= t.sizes[d]) {
      g.fail("index " + std::to_string(index) + " is out of range for size " + std::to_string(t.sizes[d]));
    }
    const Sizes st = t.strides();
    Gather ga;
    ga.offset = i * st[d];
    for (int64_t k = 0; k < t.dim(); ++k) {
      if (k == d) continue;
      ga.sizes.push_back(t.sizes[k]);
      ga.strides.push_back(st[k]);
    }
    return ga;
  });
}

// Start and end of a slice (none: the dim's start or end), computed at every
// resize: they may be SymInts.
using SliceBounds = std::function<std::pair<std::optional<int64_t>, std::optional<int64_t>>(ComputeGraph&)>;

// slice_copy.Tensor(self, dim=0, start=None, end=None, step=1), with Python's
// clamping of start and end.
void add_slice(ComputeGraph& g, int in, int out, int64_t dim, SliceBounds bounds, int64_t step) {
  if (step <= 0) g.fail("slice step must be positive");
  int32_arg(g, step, "slice step");
  normalize_dim(g, dim, g.tensor(in).dim());
  add_gather(g, in, out, [=](ComputeGraph& g, const Tensor& t) {
    const int64_t d = normalize_dim(g, dim, t.dim());
    const int64_t n = t.sizes[d];
    auto clamp_index = [n](int64_t v) {
      if (v < 0) v += n;
      return std::min(std::max<int64_t>(v, 0), n);
    };
    const auto [start, end] = bounds(g);
    const int64_t s = start ? clamp_index(*start) : 0;
    const int64_t e = end ? clamp_index(*end) : n;
    const Sizes st = t.strides();
    Gather ga;
    ga.sizes = t.sizes;
    ga.strides = st;
    ga.sizes[d] = e > s ? (e - s + step - 1) / step : 0;
    ga.strides[d] = st[d] * step;
    ga.offset = s * st[d];
    return ga;
  });
}

// expand_copy(self, size, *, implicit=False): -1 keeps a dim; new dims on the
// left. `size_id` may hold SymInts; it is read at every resize.
void add_expand(ComputeGraph& g, int in, int out, int size_id) {
  add_gather(g, in, out, [size_id](ComputeGraph& g, const Tensor& t) {
    const IntList& size = g.get_int_list(size_id);
    const int64_t rank = static_cast<int64_t>(size.size());
    if (rank < t.dim()) g.fail("expand to fewer dims than the input has");
    const Sizes st = t.strides();
    Gather ga;
    ga.sizes.resize(rank);
    ga.strides.assign(rank, 0);
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t src = k - (rank - t.dim());
      const int64_t have = src >= 0 ? t.sizes[src] : 1;
      const int64_t want = size[k] == -1 ? have : size[k];
      if (src < 0 && size[k] == -1) g.fail("expand cannot use -1 for a new dim");
      if (have != want && have != 1) {
        g.fail("cannot expand " + sizes_str(t.sizes) + " to " + sizes_str(size));
      }
      ga.sizes[k] = want;
      ga.strides[k] = (src >= 0 && have == want) ? st[src] : 0;
    }
    return ga;
  });
}

// flip(self, dims): a gather with the flipped dims' strides negated.
void add_flip(ComputeGraph& g, int in, int out, const IntList& dims) {
  const int64_t rank = g.tensor(in).dim();
  std::vector<bool> flipped(std::max<int64_t>(rank, 1), false);
  for (int64_t d : dims) {
    const int64_t nd = normalize_dim(g, d, rank);
    if (flipped[nd]) g.fail("flip dims repeat dim " + std::to_string(nd));
    flipped[nd] = true;
  }
  add_gather(g, in, out, [flipped](ComputeGraph&, const Tensor& t) {
    Gather ga;
    ga.sizes = t.sizes;
    ga.strides = t.strides();
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (!flipped[d] || t.sizes[d] == 0) continue;
      ga.offset += (t.sizes[d] - 1) * ga.strides[d];
      ga.strides[d] = -ga.strides[d];
    }
    return ga;
  });
}

// unfold_copy(self, dimension, size, step): windows of `size` elements every
// `step` along `dimension`, in a new last dim.
void add_unfold(ComputeGraph& g, int in, int out, int64_t dim, int64_t size, int64_t step) {
  if (g.tensor(in).dim() == 0) g.fail("unfold of a 0-d tensor is not supported");
  if (step <= 0 || size < 0) g.fail("unfold needs size >= 0 and step > 0");
  int32_arg(g, step, "unfold step");
  int32_arg(g, size, "unfold size");
  normalize_dim(g, dim, g.tensor(in).dim());
  add_gather(g, in, out, [=](ComputeGraph& g, const Tensor& t) {
    const int64_t d = normalize_dim(g, dim, t.dim());
    if (size > t.sizes[d]) {
      g.fail("unfold size " + std::to_string(size) + " exceeds dim size " + std::to_string(t.sizes[d]));
    }
    const Sizes st = t.strides();
    Gather ga;
    ga.sizes = t.sizes;
    ga.strides = st;
    ga.sizes[d] = (t.sizes[d] - size) / step + 1;
    ga.strides[d] = st[d] * step;
    ga.sizes.push_back(size);
    ga.strides.push_back(st[d]);
    return ga;
  });
}

std::optional<int64_t> optional_int(ComputeGraph& g, int id) {
  if (g.is_null(id)) return std::nullopt;
  return g.get_int(id);
}

}  // namespace

VKD_REGISTER_OPS(register_view_ops) {
  // view_copy(self, size)
  register_op("aten.view_copy.default", [](ComputeGraph& g, const OpArgs& a) {
    add_reshape(g, a.at(0), a.back(), a.at(1));
  });
  // unsqueeze_copy(self, dim)
  register_op("aten.unsqueeze_copy.default", [](ComputeGraph& g, const OpArgs& a) {
    const int in = a.at(0), out = a.back();
    const int64_t dim = g.get_int(a.at(1));
    normalize_dim(g, dim, g.tensor(in).dim() + 1);
    g.add_view_node(g.current_op(), out, in, [in, out, dim](ComputeGraph& g, Node&) {
      Sizes s = g.tensor(in).sizes;
      const int64_t d = normalize_dim(g, dim, static_cast<int64_t>(s.size()) + 1);
      s.insert(s.begin() + d, 1);
      g.tensor(out).sizes = s;
    });
  });
  // squeeze_copy.dims(self, dim[]), squeeze_copy.dim(self, dim), squeeze_copy(self)
  auto squeeze = [](ComputeGraph& g, int in, int out, std::vector<int64_t> dims, bool all) {
    g.add_view_node(g.current_op(), out, in, [in, out, dims, all](ComputeGraph& g, Node&) {
      const Sizes& s = g.tensor(in).sizes;
      const int64_t rank = static_cast<int64_t>(s.size());
      std::vector<bool> drop(s.size(), false);
      if (all) {
        for (int64_t d = 0; d < rank; ++d) drop[d] = s[d] == 1;
      } else {
        for (int64_t d : dims) {
          if (rank == 0) continue;
          const int64_t nd = normalize_dim(g, d, rank);
          drop[nd] = s[nd] == 1;
        }
      }
      Sizes o;
      for (int64_t d = 0; d < rank; ++d) {
        if (!drop[d]) o.push_back(s[d]);
      }
      g.tensor(out).sizes = o;
    });
  };
  register_op("aten.squeeze_copy.dims", [squeeze](ComputeGraph& g, const OpArgs& a) {
    squeeze(g, a.at(0), a.back(), g.get_int_list(a.at(1)), false);
  });
  register_op("aten.squeeze_copy.dim", [squeeze](ComputeGraph& g, const OpArgs& a) {
    squeeze(g, a.at(0), a.back(), {g.get_int(a.at(1))}, false);
  });
  register_op("aten.squeeze_copy.default", [squeeze](ComputeGraph& g, const OpArgs& a) {
    squeeze(g, a.at(0), a.back(), {}, true);
  });
  // clone(self, *, memory_format=None), alias_copy(self)
  for (const char* name : {"aten.clone.default", "aten.alias_copy.default"}) {
    register_op(name, [](ComputeGraph& g, const OpArgs& a) {
      add_identity(g, a.at(0), a.back());
    });
  }
  // _clone_dim_order(self, *, non_blocking=False, dim_order=None)
  register_op("dim_order_ops._clone_dim_order.default", [](ComputeGraph& g, const OpArgs& a) {
    require_contiguous_dim_order(g, a.at(2), g.tensor(a.at(0)).dim());
    add_identity(g, a.at(0), a.back());
  });
  // _to_dim_order_copy(self, *, dtype, layout, device, pin_memory, non_blocking, dim_order)
  register_op("dim_order_ops._to_dim_order_copy.default", [](ComputeGraph& g, const OpArgs& a) {
    require_contiguous_dim_order(g, a.at(6), g.tensor(a.at(0)).dim());
    add_to_copy(g, a.at(0), a.back());
  });
  // _to_copy(self, *, dtype, layout, device, pin_memory, non_blocking, memory_format)
  register_op("aten._to_copy.default", [](ComputeGraph& g, const OpArgs& a) {
    add_to_copy(g, a.at(0), a.back());
  });
  // permute_copy(self, dims)
  register_op("aten.permute_copy.default", [](ComputeGraph& g, const OpArgs& a) {
    add_permute(g, a.at(0), a.back(), g.get_int_list(a.at(1)));
  });
  register_op("aten.select_copy.int", [](ComputeGraph& g, const OpArgs& a) {
    add_select(g, a.at(0), a.back(), g.get_int(a.at(1)), a.at(2));
  });
  register_op("aten.slice_copy.Tensor", [](ComputeGraph& g, const OpArgs& a) {
    const int start_id = a.at(2), end_id = a.at(3);
    add_slice(g, a.at(0), a.back(), g.get_int(a.at(1)),
              [start_id, end_id](ComputeGraph& g) {
                return std::make_pair(optional_int(g, start_id), optional_int(g, end_id));
              },
              g.get_int(a.at(4)));
  });
  register_op("aten.expand_copy.default", [](ComputeGraph& g, const OpArgs& a) {
    add_expand(g, a.at(0), a.back(), a.at(1));
  });
  register_op("aten.flip.default", [](ComputeGraph& g, const OpArgs& a) {
    add_flip(g, a.at(0), a.back(), g.get_int_list(a.at(1)));
  });
  register_op("aten.unfold_copy.default", [](ComputeGraph& g, const OpArgs& a) {
    add_unfold(g, a.at(0), a.back(), g.get_int(a.at(1)), g.get_int(a.at(2)), g.get_int(a.at(3)));
  });
  // split_with_sizes_copy(self, split_sizes, dim) -> Tensor[]: one slice per output.
  register_op("aten.split_with_sizes_copy.default", [](ComputeGraph& g, const OpArgs& a) {
    const int in = a.at(0);
    const IntList sizes = g.get_int_list(a.at(1));
    const int64_t dim = normalize_dim(g, g.get_int(a.at(2)), g.tensor(in).dim());
    if (a.size() != 3 + sizes.size()) g.fail("expected one output per split size");
    int64_t start = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 0) g.fail("split sizes must not be negative");
      const int64_t end = start + sizes[i];
      add_slice(g, in, a[3 + i], dim,
                [start, end](ComputeGraph&) {
                  return std::make_pair(std::optional<int64_t>(start), std::optional<int64_t>(end));
                },
                1);
      start += sizes[i];
    }
    if (g.tensor(in).dim() > 0 && start != g.tensor(in).sizes[dim]) {
      g.fail("split sizes " + sizes_str(sizes) + " do not add up to dim size " + std::to_string(g.tensor(in).sizes[dim]));
    }
  });
}

}  // namespace vkd
