// Ops that read their input at computed positions (index_select, embedding,
// gather, index.Tensor: one gather shader driven by index tensors), pad and
// repeat, and the creation ops (full, full_like, arange, scalar_tensor).
#include <cmath>
#include <functional>

#include "op_utils.h"
#include "shader_params.h"  // IndexGatherParams, FillParams, PadRepeatParams: glsl/index_gather, fill, pad_repeat.glsl

namespace vkd {

namespace {

constexpr int kMaxIndexTensors = 4;

void require_index(ComputeGraph& g, int id) {
  const DType t = g.tensor(id).dtype;
  if (t != DType::Int32 && t != DType::Int64) {
    g.fail(std::string("index tensors must be int32 or int64, not ") + dtype_name(t));
  }
}

// How the gather reads: for each output dim, the stride in `in` and the stride
// in each index tensor; for each index tensor, the stride, size and number of
// the dim of `in` it selects along.
struct IndexPlan {
  Sizes out_sizes;
  Sizes in_strides;
  std::vector<Sizes> idx_strides;
  Sizes sel_strides;
  Sizes sel_sizes;
  Sizes sel_dims;
};
using PlanFn = std::function<IndexPlan(ComputeGraph&)>;

// index_gather.glsl's block holds kMaxIndexTensors index tensors.
static_assert(sizeof(IndexGatherParams::sel_strides) == 4 * kMaxIndexTensors &&
              sizeof(IndexGatherParams::sel_dims) == 4 * kMaxIndexTensors &&
              sizeof(IndexGatherParams::idx_strides) == 4 * 8 * kMaxIndexTensors);

// Whether a negative index counts from the end of its dim (as eager PyTorch:
// index.Tensor wraps; embedding, index_select and gather raise). Out of range
// is a fault either way (glsl/fault.glslh).
enum class Negative { Wrap, Fault };

void add_index_gather(ComputeGraph& g, int out, int in, const std::vector<int>& indices, Negative negative,
                      PlanFn plan, int64_t window_begin = 0, int64_t window_rows = 0) {
  require_same_dtype(g, {in, out});
  for (int id : indices) require_index(g, id);
  const int nidx = static_cast<int>(indices.size());
  if (nidx < 1 || nidx > kMaxIndexTensors) {
    g.fail("between 1 and " + std::to_string(kMaxIndexTensors) + " index tensors are supported");
  }
  std::vector<int> tensors{out, in};
  tensors.insert(tensors.end(), indices.begin(), indices.end());
  const std::string base = "index_gather" + std::to_string(nidx);
  const std::string shader = with_fault_slot(g, tensors, base, base + "_nocheck") + "_" +
                             storage_suffix(g.tensor(out).storage_type);
  int32_t words = 0;  // bit k: index tensor k has two words per element
  for (int k = 0; k < nidx; ++k) words |= (index_words(g.tensor(indices[k])) - 1) << k;
  Node& node = g.add_node(g.current_op(), shader, kLocal1D, tensors,
                          [out, plan, negative, window_begin, window_rows, words](ComputeGraph& g, Node& node) {
    const IndexPlan pl = plan(g);
    if (pl.out_sizes.size() > static_cast<size_t>(kMaxRank)) g.fail("the output would have rank above 8");
    for (int64_t s : pl.sel_sizes) {
      if (s == 0) g.fail("cannot index into a dim of size 0");
    }
    Tensor& o = g.tensor(out);
    o.sizes = pl.out_sizes;
    IndexGatherParams p{};
    pack8(p.out_sizes, pl.out_sizes);
    pack8(p.in_strides, pl.in_strides);
    for (size_t k = 0; k < pl.idx_strides.size(); ++k) {
      pack8(p.idx_strides + 8 * k, pl.idx_strides[k]);
      p.sel_strides[k] = static_cast<int32_t>(pl.sel_strides[k]);
      p.sel_sizes[k] = static_cast<int32_t>(pl.sel_sizes[k]);
      p.sel_dims[k] = static_cast<int32_t>(pl.sel_dims[k]);
    }
    p.wrap_negative = negative == Negative::Wrap;
    p.index_words = words;
    p.numel = static_cast<int32_t>(o.numel());
    p.rank = static_cast<int32_t>(o.dim());
    p.window_begin = static_cast<int32_t>(window_begin);
    p.window_rows = static_cast<int32_t>(window_rows);
    node.set_params(p);
    node.set_groups_1d(o.numel(), kLocal1D[0]);
  });
  if (window_rows > 0) {
    const Tensor& t = g.tensor(in);
    const VkDeviceSize row_bytes = static_cast<VkDeviceSize>(numel_of(t.max_sizes) / t.max_sizes[0]) *
                                   storage_size(t.storage_type);
    node.set_window(1, window_begin * row_bytes,
                    std::min<int64_t>(window_rows, t.max_sizes[0] - window_begin) * row_bytes);
  }
}

// A gather whose index tensor 0 selects rows (dim 0) of `in`: when `in` is
// larger than one binding may be (maxStorageBufferRange; an LLM's embedding
// table), one dispatch per window of rows, each writing the outputs whose
// index falls in its window.
void add_row_gather(ComputeGraph& g, int out, int in, const std::vector<int>& indices, Negative negative,
                    PlanFn plan) {
  const Tensor& t = g.tensor(in);
  const DeviceInfo& info = g.context().info();
  const VkDeviceSize bytes = t.max_storage_nbytes();
  if (t.dim() == 0 || bytes <= info.max_storage_buffer_range) {
    add_index_gather(g, out, in, indices, negative, plan);
    return;
  }
  const int64_t rows = t.max_sizes[0];
  const VkDeviceSize row_bytes = bytes / static_cast<VkDeviceSize>(rows);
  // Windows start at multiples of the offset alignment.
  const VkDeviceSize align = std::max<VkDeviceSize>(info.min_storage_offset_alignment, 1);
  int64_t step = static_cast<int64_t>(info.max_storage_buffer_range / row_bytes);
  while (step > 0 && (static_cast<VkDeviceSize>(step) * row_bytes) % align != 0) --step;
  if (step <= 0) {
    g.fail("one row of " + std::to_string(row_bytes) + " bytes is larger than this device's binding range (" +
           std::to_string(info.max_storage_buffer_range) + " bytes)");
  }
  for (int64_t begin = 0; begin < rows; begin += step) {
    add_index_gather(g, out, in, indices, negative, plan, begin, step);
  }
}

// index_select(self, dim, index): index is 0-d or 1-D.
void add_index_select(ComputeGraph& g, const OpArgs& a) {
  const int in = a.at(0), index = a.at(2), out = a.back();
  const int64_t dim = g.get_int(a.at(1));
  if (g.tensor(in).dim() == 0) g.fail("index_select of a 0-d tensor is not supported");
  if (g.tensor(index).dim() > 1) g.fail("index_select needs a 0-d or 1-D index");
  const int64_t d0 = normalize_dim(g, dim, g.tensor(in).dim());
  auto gather = d0 == 0 ? add_row_gather : [](ComputeGraph& g, int out, int in, const std::vector<int>& indices,
                                             Negative negative, PlanFn plan) {
    add_index_gather(g, out, in, indices, negative, plan);
  };
  gather(g, out, in, {index}, Negative::Fault, [=](ComputeGraph& g) {
    const Tensor& t = g.tensor(in);
    const int64_t d = normalize_dim(g, dim, t.dim());
    IndexPlan pl;
    pl.out_sizes = t.sizes;
    pl.out_sizes[d] = g.tensor(index).numel();
    pl.in_strides = t.strides();
    pl.sel_strides = {pl.in_strides[d]};
    pl.sel_sizes = {t.sizes[d]};
    pl.sel_dims = {d};
    pl.in_strides[d] = 0;
    Sizes is(t.dim(), 0);
    is[d] = 1;
    pl.idx_strides = {is};
    return pl;
  });
}

// embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): rows of weight.
void add_embedding(ComputeGraph& g, const OpArgs& a) {
  const int weight = a.at(0), indices = a.at(1), out = a.back();
  if (g.tensor(weight).dim() != 2) g.fail("embedding weight must be 2-D");
  add_row_gather(g, out, weight, {indices}, Negative::Fault, [=](ComputeGraph& g) {
    const Tensor& w = g.tensor(weight);
    const Tensor& idx = g.tensor(indices);
    IndexPlan pl;
    pl.out_sizes = idx.sizes;
    pl.out_sizes.push_back(w.sizes[1]);
    pl.in_strides.assign(pl.out_sizes.size(), 0);
    pl.in_strides.back() = 1;
    Sizes is = idx.strides();
    is.push_back(0);
    pl.idx_strides = {is};
    pl.sel_strides = {w.sizes[1]};
    pl.sel_sizes = {w.sizes[0]};
    pl.sel_dims = {0};
    return pl;
  });
}

// gather(self, dim, index, *, sparse_grad): out[c] = self[c with c[dim] = index[c]].
void add_gather_op(ComputeGraph& g, const OpArgs& a) {
  const int in = a.at(0), index = a.at(2), out = a.back();
  const int64_t dim = g.get_int(a.at(1));
  if (std::max<int64_t>(g.tensor(index).dim(), 1) != std::max<int64_t>(g.tensor(in).dim(), 1)) {
    g.fail("gather needs an index of the input's rank");
  }
  normalize_dim(g, dim, g.tensor(in).dim());
  add_index_gather(g, out, in, {index}, Negative::Fault, [=](ComputeGraph& g) {
    const Tensor& t = g.tensor(in);
    const Tensor& idx = g.tensor(index);
    IndexPlan pl;
    pl.out_sizes = idx.sizes;
    pl.idx_strides = {idx.strides()};
    if (t.dim() == 0) {
      pl.in_strides.assign(idx.dim(), 0);
      pl.sel_strides = {1};
      pl.sel_sizes = {1};
      pl.sel_dims = {0};
      return pl;
    }
    const int64_t d = normalize_dim(g, dim, t.dim());
    for (int64_t k = 0; k < t.dim(); ++k) {
      if (k != d && idx.sizes[k] > t.sizes[k]) {
        g.fail("gather index " + sizes_str(idx.sizes) + " is larger than the input " + sizes_str(t.sizes));
      }
    }
    pl.in_strides = t.strides();
    pl.sel_strides = {pl.in_strides[d]};
    pl.sel_sizes = {t.sizes[d]};
    pl.sel_dims = {d};
    pl.in_strides[d] = 0;
    return pl;
  });
}

// index.Tensor(self, indices: Tensor?[]): advanced indexing. The index tensors
// broadcast to one shape B; B replaces the indexed dims where they are adjacent,
// and leads the output otherwise (NumPy's rule).
void add_index_tensor(ComputeGraph& g, const OpArgs& a) {
  const int in = a.at(0), out = a.back();
  const std::vector<int> items = g.get_value_list(a.at(1)).ids;
  std::vector<int> positions, indices;
  for (size_t k = 0; k < items.size(); ++k) {
    if (g.is_null(items[k])) continue;
    positions.push_back(static_cast<int>(k));
    indices.push_back(items[k]);
  }
  if (indices.empty()) g.fail("index needs at least one index tensor");
  if (static_cast<int64_t>(items.size()) > g.tensor(in).dim()) g.fail("too many indices for the input's rank");
  bool adjacent = true;
  for (size_t k = 1; k < positions.size(); ++k) adjacent &= positions[k] == positions[k - 1] + 1;
  add_index_gather(g, out, in, indices, Negative::Wrap, [=](ComputeGraph& g) {
    const Tensor& t = g.tensor(in);
    const Sizes st = t.strides();
    Sizes b;  // the broadcast shape of the index tensors
    for (int id : indices) b = broadcast_sizes(g, b, g.tensor(id).sizes);
    std::vector<bool> indexed(t.dim(), false);
    for (int pos : positions) indexed[pos] = true;
    const size_t K = indices.size();
    IndexPlan pl;
    pl.idx_strides.assign(K, Sizes());
    auto add_b_dims = [&]() {
      for (size_t d = 0; d < b.size(); ++d) {
        pl.out_sizes.push_back(b[d]);
        pl.in_strides.push_back(0);
        for (size_t k = 0; k < K; ++k) {
          pl.idx_strides[k].push_back(broadcast_strides(g.tensor(indices[k]), b)[d]);
        }
      }
    };
    auto add_self_dim = [&](int64_t d) {
      pl.out_sizes.push_back(t.sizes[d]);
      pl.in_strides.push_back(st[d]);
      for (size_t k = 0; k < K; ++k) pl.idx_strides[k].push_back(0);
    };
    if (!adjacent) add_b_dims();
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (adjacent && d == positions.front()) add_b_dims();
      if (!indexed[d]) add_self_dim(d);
    }
    for (int pos : positions) {
      pl.sel_strides.push_back(st[pos]);
      pl.sel_sizes.push_back(t.sizes[pos]);
      pl.sel_dims.push_back(pos);
    }
    return pl;
  });
}

// A fill value (full, constant_pad_nd) or arange's start and step for an integer
// tensor: exact where the argument is an int; int32 storage must hold it.
int64_t int_fill(ComputeGraph& g, int out, const Value& v, const char* what) {
  int64_t x;
  if (const auto* s = std::get_if<SymInt>(&v)) return int_fill(g, out, Value(s->value), what);
  if (const auto* i = std::get_if<int64_t>(&v)) {
    x = *i;
  } else if (const auto* b = std::get_if<bool>(&v)) {
    x = *b;
  } else {
    if (!std::holds_alternative<double>(v)) g.fail(std::string(what) + " must be a number");
    const double d = std::get<double>(v);
    if (!(std::fabs(d) < 9223372036854775808.0)) g.fail(std::string(what) + " " + std::to_string(d) + " does not fit in int64");
    x = static_cast<int64_t>(d);
  }
  check_int_storage(g, out, x, what);
  return x;
}

// constant_pad_nd(self, pad, value): pad[2i], pad[2i+1] go before and after dim rank-1-i.
void add_constant_pad(ComputeGraph& g, const OpArgs& a) {
  const int in = a.at(0), out = a.back();
  require_same_dtype(g, {in, out});
  const IntList pad = g.get_int_list(a.at(1));
  const double value = g.get_double(a.at(2));
  const Value value_arg = g.value(a.at(2));
  if (pad.size() % 2 != 0) g.fail("pad needs pairs of (before, after)");
  for (int64_t p : pad) int32_arg(g, p, "pad");
  if (static_cast<int64_t>(pad.size()) > 2 * g.tensor(in).dim()) g.fail("pad has more pairs than the input has dims");
  const bool is_float = is_float_dtype(g.tensor(out).dtype);
  const int64_t ivalue = is_float ? 0 : int_fill(g, out, value_arg, "fill value");
  g.add_node(g.current_op(), variant(g, "constant_pad", out), kLocal1D, {out, in},
             [=](ComputeGraph& g, Node& node) {
               const Tensor& t = g.tensor(in);
               const int64_t rank = t.dim();
               Sizes before(rank, 0), sizes = t.sizes;
               for (size_t i = 0; i < pad.size() / 2; ++i) {
                 const int64_t d = rank - 1 - static_cast<int64_t>(i);
                 before[d] = pad[2 * i];
                 sizes[d] += pad[2 * i] + pad[2 * i + 1];
                 if (sizes[d] < 0) g.fail("pad makes dim " + std::to_string(d) + " negative");
               }
               Tensor& o = g.tensor(out);
               o.sizes = sizes;
               PadRepeatParams p{};
               pack8(p.out_sizes, sizes);
               pack8(p.in_sizes, t.sizes);
               for (int64_t d = 0; d < 8; ++d) p.before[d] = d < rank ? static_cast<int32_t>(before[d]) : 0;
               p.numel = static_cast<int32_t>(o.numel());
               p.rank = static_cast<int32_t>(rank);
               p.fvalue = static_cast<float>(value);
               split_int(ivalue, p.ivalue, p.ivalue_hi);
               node.set_params(p);
               node.set_groups_1d(o.numel(), kLocal1D[0]);
             });
}

// repeat(self, repeats): the input, aligned right, tiled repeats[d] times along each dim.
void add_repeat(ComputeGraph& g, const OpArgs& a) {
  const int in = a.at(0), out = a.back();
  require_same_dtype(g, {in, out});
  const IntList repeats = g.get_int_list(a.at(1));
  if (static_cast<int64_t>(repeats.size()) < g.tensor(in).dim()) g.fail("repeat needs one count per input dim at least");
  for (int64_t r : repeats) {
    if (r < 0) g.fail("repeat counts must not be negative");
  }
  g.add_node(g.current_op(), variant(g, "repeat", out), kLocal1D, {out, in},
             [=](ComputeGraph& g, Node& node) {
               const Tensor& t = g.tensor(in);
               const size_t rank = repeats.size();
               Sizes in_sizes(rank, 1), sizes(rank);
               for (size_t d = 0; d < t.sizes.size(); ++d) in_sizes[rank - t.sizes.size() + d] = t.sizes[d];
               for (size_t d = 0; d < rank; ++d) sizes[d] = checked_mul(in_sizes[d], repeats[d]);
               Tensor& o = g.tensor(out);
               o.sizes = sizes;
               PadRepeatParams p{};
               pack8(p.out_sizes, sizes);
               pack8(p.in_sizes, in_sizes);
               p.numel = static_cast<int32_t>(o.numel());
               p.rank = static_cast<int32_t>(rank);
               node.set_params(p);
               node.set_groups_1d(o.numel(), kLocal1D[0]);
             });
}

// roll(self, shifts, dims): out[c] = in[(c - shift) mod size] along each dim;
// without dims, over the flattened tensor.
void add_roll(ComputeGraph& g, const OpArgs& a) {
  const int in = a.at(0), out = a.back();
  require_same_dtype(g, {in, out});
  const IntList shifts = g.get_int_list(a.at(1));
  const IntList dims = g.get_int_list(a.at(2));
  if (dims.empty() ? shifts.size() != 1 : shifts.size() != dims.size()) {
    g.fail("roll needs one shift per dim (or one shift and no dims)");
  }
  for (int64_t d : dims) normalize_dim(g, d, g.tensor(in).dim());
  g.add_node(g.current_op(), variant(g, "repeat", out), kLocal1D, {out, in},
             [=](ComputeGraph& g, Node& node) {
               const Tensor& t = g.tensor(in);
               Tensor& o = g.tensor(out);
               o.sizes = t.sizes;
               // Without dims the flattened tensor rolls: view it as 1-D.
               const Sizes sizes = dims.empty() ? Sizes{t.numel()} : t.sizes;
               Sizes shift(sizes.size(), 0);
               for (size_t i = 0; i < shifts.size(); ++i) {
                 const int64_t d = dims.empty() ? 0 : normalize_dim(g, dims[i], t.dim());
                 if (sizes[d] == 0) continue;
                 shift[d] = ((shift[d] + shifts[i]) % sizes[d] + sizes[d]) % sizes[d];
               }
               PadRepeatParams p{};
               pack8(p.out_sizes, sizes);
               pack8(p.in_sizes, sizes);
               for (size_t d = 0; d < shift.size(); ++d) p.before[d] = static_cast<int32_t>(shift[d]);
               p.numel = static_cast<int32_t>(o.numel());
               p.rank = static_cast<int32_t>(sizes.size());
               node.set_params(p);
               node.set_groups_1d(o.numel(), kLocal1D[0]);
             });
}

// out[i] = start + i * step, with sizes from `sizes_of` (run at every update);
// `last`: the index of the last element where it is known at build (arange), whose
// value the output's integer storage must hold too.
void add_fill(ComputeGraph& g, int out, const Value& start_arg, const Value& step_arg,
              std::function<Sizes(ComputeGraph&)> sizes_of, int64_t last = 0) {
  const bool is_float = is_float_dtype(g.tensor(out).dtype);
  if (!is_float && !is_int_storage(g.tensor(out).storage_type)) {
    g.fail(std::string("filling ") + dtype_name(g.tensor(out).dtype) + " tensors is not supported");
  }
  const auto as_double = [&](const Value& v) {
    if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    if (const auto* s = std::get_if<SymInt>(&v)) return static_cast<double>(s->value);
    if (const auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
    if (const auto* d = std::get_if<double>(&v)) return *d;
    g.fail("fill values must be numbers");
  };
  const double start = as_double(start_arg), step = as_double(step_arg);
  int64_t istart = 0, istep = 0;
  if (g.tensor(out).dtype == DType::Bool) {
    istart = start != 0.0;
  } else if (!is_float) {
    istart = int_fill(g, out, start_arg, "fill value");
    istep = int_fill(g, out, step_arg, "step");
    int64_t end;
    if (__builtin_mul_overflow(last, istep, &end) || __builtin_add_overflow(end, istart, &end)) {
      g.fail("the last value of the fill leaves int64");
    }
    check_int_storage(g, out, end, "the last value");
  }
  g.add_node(g.current_op(), variant(g, "fill", out), kLocal1D, {out}, [=](ComputeGraph& g, Node& node) {
    Tensor& o = g.tensor(out);
    o.sizes = sizes_of(g);
    FillParams p{};
    p.fstart = static_cast<float>(start);
    p.fstep = static_cast<float>(step);
    split_int(istart, p.istart, p.istart_hi);
    split_int(istep, p.istep, p.istep_hi);
    p.numel = static_cast<int32_t>(o.numel());
    node.set_params(p);
    node.set_groups_1d(o.numel(), kLocal1D[0]);
  });
}

}  // namespace

VKD_REGISTER_OPS(register_indexing_ops) {
  register_op("aten.index_select.default", add_index_select);
  register_op("aten.embedding.default", add_embedding);
  register_op("aten.gather.default", add_gather_op);
  register_op("aten.index.Tensor", add_index_tensor);
  register_op("aten.constant_pad_nd.default", add_constant_pad);
  register_op("aten.repeat.default", add_repeat);
  register_op("aten.roll.default", add_roll);
  // full(size, fill_value, *, dtype, layout, device, pin_memory)
  register_op("aten.full.default", [](ComputeGraph& g, const OpArgs& a) {
    const IntList size = g.get_int_list(a.at(0));
    for (int64_t s : size) {
      if (s < 0) g.fail("full sizes must not be negative");
    }
    add_fill(g, a.back(), g.value(a.at(1)), int64_t{0}, [size](ComputeGraph&) { return Sizes(size.begin(), size.end()); });
  });
  // full_like(self, fill_value, *, dtype, layout, device, pin_memory, memory_format)
  register_op("aten.full_like.default", [](ComputeGraph& g, const OpArgs& a) {
    const int in = a.at(0);
    add_fill(g, a.back(), g.value(a.at(1)), int64_t{0}, [in](ComputeGraph& g) { return g.tensor(in).sizes; });
  });
  // scalar_tensor(s, *, dtype, layout, device, pin_memory)
  register_op("aten.scalar_tensor.default", [](ComputeGraph& g, const OpArgs& a) {
    add_fill(g, a.back(), g.value(a.at(0)), int64_t{0}, [](ComputeGraph&) { return Sizes{}; });
  });
  // arange.start_step(start, end, step, *, dtype, layout, device, pin_memory)
  register_op("aten.arange.start_step", [](ComputeGraph& g, const OpArgs& a) {
    const double start = g.get_double(a.at(0)), end = g.get_double(a.at(1)), step = g.get_double(a.at(2));
    if (step == 0.0 || (end - start) / step < 0.0) g.fail("arange needs a step toward end");
    const int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
    add_fill(g, a.back(), g.value(a.at(0)), g.value(a.at(2)), [n](ComputeGraph&) { return Sizes{n}; },
             std::max<int64_t>(n - 1, 0));
  });
}

}  // namespace vkd
