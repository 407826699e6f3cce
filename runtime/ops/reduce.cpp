// Reductions over a set of dims: sum, mean, amax, amin, argmax, argmin, max.dim, min.dim, var.
// The input is split into kept dims (one output element each) and reduced
// dims; one workgroup reduces one output element (glsl/reduce.glsl).
#include <variant>

#include "op_utils.h"
#include "shader_params.h"  // ReduceParams: glsl/reduce.glsl

namespace vkd {

namespace {

constexpr LocalSize kReduceLocal{128, 1, 1};

// Which dims to reduce: an empty list (or none) means all of them.
std::vector<bool> reduced_dims(ComputeGraph& g, const IntList& dims, int64_t rank) {
  std::vector<bool> reduce(rank, dims.empty());
  for (int64_t d : dims) {
    const int64_t nd = normalize_dim(g, d, rank);
    if (rank > 0) reduce[nd] = true;
  }
  return reduce;
}

enum class Divide { None, Count, CountLessCorrection };

void add_reduce(ComputeGraph& g, int in, int out, const std::string& shader, IntList dims, bool keepdim,
                Divide divide = Divide::None, double correction = 0.0) {
  const DType in_dt = g.tensor(in).dtype;
  if (!is_float_dtype(in_dt) && storage_type(in_dt) != StorageType::I32) {
    g.fail(std::string("dtype ") + dtype_name(in_dt) + " is not supported");
  }
  reduced_dims(g, dims, g.tensor(in).dim());  // checks the dims now, not at the first execute
  std::vector<int> tensors{out, in};
  // An int64 sum (int32 storage) checks that its total fits (glsl/reduce.glsl).
  const std::string name = shader == "reduce_sum" && g.tensor(out).dtype == DType::Int64
                               ? with_fault_slot(g, tensors, variant(g, "reduce_sum_int64", in), variant(g, shader, in))
                               : variant(g, shader, in);
  g.add_node(g.current_op(), name, kReduceLocal, tensors,
             [=](ComputeGraph& g, Node& node) {
               const Tensor& t = g.tensor(in);
               const std::vector<bool> reduce = reduced_dims(g, dims, t.dim());
               const Sizes st = t.strides();
               Sizes kept_sizes, kept_strides, red_sizes, red_strides, out_sizes;
               for (int64_t d = 0; d < t.dim(); ++d) {
                 if (reduce[d]) {
                   red_sizes.push_back(t.sizes[d]);
                   red_strides.push_back(st[d]);
                   if (keepdim) out_sizes.push_back(1);
                 } else {
                   kept_sizes.push_back(t.sizes[d]);
                   kept_strides.push_back(st[d]);
                   out_sizes.push_back(t.sizes[d]);
                 }
               }
               Tensor& o = g.tensor(out);
               o.sizes = out_sizes;
               const int64_t red_numel = numel_of(red_sizes);
               if (red_numel == 0 && divide == Divide::None && shader != "reduce_sum") {
                 g.fail("cannot reduce over an empty dim");
               }
               ReduceParams p{};
               pack8(p.kept_sizes, kept_sizes);
               pack8(p.kept_strides, kept_strides);
               pack8(p.red_sizes, red_sizes);
               pack8(p.red_strides, red_strides);
               p.out_numel = static_cast<int32_t>(o.numel());
               p.red_numel = static_cast<int32_t>(red_numel);
               p.kept_rank = static_cast<int32_t>(kept_sizes.size());
               p.red_rank = static_cast<int32_t>(red_sizes.size());
               p.divisor = divide == Divide::Count ? static_cast<float>(red_numel)
                           : divide == Divide::CountLessCorrection
                               ? static_cast<float>(std::max(0.0, static_cast<double>(red_numel) - correction))
                               : 1.0f;
               node.set_params(p);
               node.set_groups_1d(o.numel(), 1);  // one workgroup per output element
             });
}

IntList optional_dims(ComputeGraph& g, int id) { return g.is_null(id) ? IntList{} : g.get_int_list(id); }

// The reduced dtype must be stored like the input (sum of int32 or bool gives int64: both int32 storage).
void require_same_storage(ComputeGraph& g, int in, int out) {
  if (storage_type(g.tensor(in).dtype) != storage_type(g.tensor(out).dtype)) {
    g.fail(std::string("conversion ") + dtype_name(g.tensor(in).dtype) + " -> " +
           dtype_name(g.tensor(out).dtype) + " in a reduction is not supported");
  }
}

void require_float_in_out(ComputeGraph& g, int in, int out) {
  require_float_same(g, {in, out});
}

using Args = OpArgs;

}  // namespace

VKD_REGISTER_OPS(register_reduce_ops) {
  // sum.dim_IntList(self, dim?, keepdim=False, *, dtype=None)
  register_op("aten.sum.dim_IntList", [](ComputeGraph& g, const Args& a) {
    require_same_storage(g, a.at(0), a.back());
    add_reduce(g, a.at(0), a.back(), "reduce_sum", optional_dims(g, a.at(1)), g.get_bool(a.at(2)));
  });
  // mean.dim(self, dim?, keepdim=False, *, dtype=None), mean(self, *, dtype=None)
  register_op("aten.mean.dim", [](ComputeGraph& g, const Args& a) {
    require_float_in_out(g, a.at(0), a.back());
    add_reduce(g, a.at(0), a.back(), "reduce_mean", optional_dims(g, a.at(1)), g.get_bool(a.at(2)),
               Divide::Count);
  });
  register_op("aten.mean.default", [](ComputeGraph& g, const Args& a) {
    require_float_in_out(g, a.at(0), a.back());
    add_reduce(g, a.at(0), a.back(), "reduce_mean", {}, false, Divide::Count);
  });
  // amax / amin(self, dim=[], keepdim=False)
  for (const char* op : {"amax", "amin"}) {
    const std::string shader = std::string("reduce_") + op;
    register_op(std::string("aten.") + op + ".default", [shader](ComputeGraph& g, const Args& a) {
      require_same_dtype(g, {a.at(0), a.back()});
      add_reduce(g, a.at(0), a.back(), shader, g.get_int_list(a.at(1)), g.get_bool(a.at(2)));
    });
  }
  // argmax / argmin(self, dim=None, keepdim=False): over the flattened input without a dim.
  for (const char* op : {"argmax", "argmin"}) {
    const std::string shader = std::string("reduce_") + op;
    register_op(std::string("aten.") + op + ".default", [shader](ComputeGraph& g, const Args& a) {
      if (g.tensor(a.back()).dtype != DType::Int64) g.fail("the output must be int64");
      IntList dims;
      if (!g.is_null(a.at(1))) dims.push_back(g.get_int(a.at(1)));
      add_reduce(g, a.at(0), a.back(), shader, dims, g.get_bool(a.at(2)));
    });
  }
  // max.dim / min.dim(self, dim, keepdim=False) -> (values, indices): two reductions.
  for (const char* op : {"max", "min"}) {
    const std::string values_shader = std::string("reduce_a") + op;
    const std::string indices_shader = std::string("reduce_arg") + op;
    register_op(std::string("aten.") + op + ".dim", [=](ComputeGraph& g, const Args& a) {
      const int in = a.at(0), values = a.at(3), indices = a.at(4);
      require_same_dtype(g, {in, values});
      if (g.tensor(indices).dtype != DType::Int64) g.fail("the indices must be int64");
      const IntList dims{g.get_int(a.at(1))};
      const bool keepdim = g.get_bool(a.at(2));
      add_reduce(g, in, values, values_shader, dims, keepdim);
      add_reduce(g, in, indices, indices_shader, dims, keepdim);
    });
  }
  // var.correction(self, dim=None, *, correction=None, keepdim=False); correction None means 1.
  register_op("aten.var.correction", [](ComputeGraph& g, const Args& a) {
    require_float_in_out(g, a.at(0), a.back());
    const double correction = g.is_null(a.at(2)) ? 1.0 : g.get_double(a.at(2));
    add_reduce(g, a.at(0), a.back(), "reduce_var", optional_dims(g, a.at(1)), g.get_bool(a.at(3)),
               Divide::CountLessCorrection, correction);
  });
}

}  // namespace vkd
