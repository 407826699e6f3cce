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
  const StorageType in_st = g.tensor(in).storage_type, out_st = g.tensor(out).storage_type;
  if (!is_float_dtype(in_dt) && !is_int_storage(in_st)) {
    g.fail(std::string("dtype ") + dtype_name(in_dt) + " is not supported");
  }
  reduced_dims(g, dims, g.tensor(in).dim());  // checks the dims now, not at the first execute
  std::vector<int> tensors{out, in};
  // The output is stored like the input, but for positions (argmax, argmin) and for
  // int64 sums of int32 storage (int32, bool, int8) where int64 is int64.
  const bool arg = shader == "reduce_argmax" || shader == "reduce_argmin";
  const bool widening_sum = shader == "reduce_sum" && in_st == StorageType::I32 && out_st == StorageType::I64;
  if (!arg && !widening_sum && in_st != out_st) {
    g.fail(std::string("conversion ") + dtype_name(in_dt) + " -> " + dtype_name(g.tensor(out).dtype) +
           " in a reduction is not supported");
  }
  std::string name = variant(g, shader, in);
  if (widening_sum) {
    name = variant(g, "reduce_sum_of_i32", out);
  } else if (shader == "reduce_sum" && g.tensor(out).dtype == DType::Int64 && out_st == StorageType::I32) {
    // int64 stored as int32: the sum checks that its total fits (glsl/reduce.glsl).
    name = with_fault_slot(g, tensors, variant(g, "reduce_sum_int64", in), name);
  }
  const int32_t words = arg ? index_words(g.tensor(out)) : 1;
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
               p.index_words = words;
               node.set_params(p);
               node.set_groups_1d(o.numel(), 1);  // one workgroup per output element
             });
}

IntList optional_dims(ComputeGraph& g, int id) { return g.is_null(id) ? IntList{} : g.get_int_list(id); }

// A sum's output dtype: the input's, or int64 for the integers stored as int32 (int32,
// bool, int8: their sums are int64).
void require_sum_dtype(ComputeGraph& g, int in, int out) {
  const DType i = g.tensor(in).dtype, o = g.tensor(out).dtype;
  if (i != o && !(o == DType::Int64 && g.tensor(in).storage_type == StorageType::I32)) {
    g.fail(std::string("conversion ") + dtype_name(i) + " -> " + dtype_name(o) + " in a reduction is not supported");
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
    require_sum_dtype(g, a.at(0), a.back());
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
