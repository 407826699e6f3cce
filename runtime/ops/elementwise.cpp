// Elementwise ops: arithmetic, comparisons, logical and bitwise ops with
// broadcasting, where, unary math and activations.
#include <cmath>
#include <limits>
#include <variant>

#include "op_utils.h"
#include "shader_params.h"  // UnaryParams, ScalarParams, WhereParams, BinaryParams, CompareParams:
                            // glsl/unary, binary_scalar, where, binary, compare.glsl

namespace vkd {

namespace {

bool is_float(ComputeGraph& g, int id) { return is_float_dtype(g.tensor(id).dtype); }

// Float32, float16 and the dtypes stored as integers.
enum class Types { Any, FloatOnly, IntOnly };

void require_types(ComputeGraph& g, int id, Types types) {
  const DType dt = g.tensor(id).dtype;
  const bool is_int = is_int_storage(g.tensor(id).storage_type);
  const bool ok = types == Types::FloatOnly ? is_float_dtype(dt)
                  : types == Types::IntOnly ? is_int
                                            : is_float_dtype(dt) || is_int;
  if (!ok) g.fail(std::string("dtype ") + dtype_name(dt) + " is not supported");
}

// A Scalar argument applied to integer tensor `tensor_id`: an integer its storage holds
// (int32 storage: within int32).
int64_t int_scalar(ComputeGraph& g, int id, int tensor_id) {
  Value& v = g.value(id);
  int64_t x = 0;
  if (auto* i = std::get_if<int64_t>(&v)) {
    x = *i;
  } else if (auto* b = std::get_if<bool>(&v)) {
    x = *b ? 1 : 0;
  } else {
    g.fail("a non-integer scalar with an integer tensor is not supported (no type promotion)");
  }
  check_int_storage(g, tensor_id, x, "scalar");
  return x;
}

// Sets out's sizes (a and b broadcast) and the broadcast fields binary.glsl and
// compare.glsl share (BinaryParams, CompareParams).
template <typename Params>
void fill_broadcast(ComputeGraph& g, int a, int b, int out, Params& p) {
  const Tensor& ta = g.tensor(a);
  const Tensor& tb = g.tensor(b);
  Tensor& to = g.tensor(out);
  to.sizes = broadcast_sizes(g, ta.sizes, tb.sizes);
  pack8(p.out_sizes, to.sizes);
  pack8(p.a_strides, broadcast_strides(ta, to.sizes));
  pack8(p.b_strides, broadcast_strides(tb, to.sizes));
  p.numel = static_cast<int32_t>(to.numel());
  p.rank = static_cast<int32_t>(to.dim());
  p.same_shape = ta.sizes == to.sizes && tb.sizes == to.sizes;
}

// Same-shape operands: binary.glsl does kBinaryElems 4-vectors per invocation.
constexpr LocalSize kBinaryLocal{256, 1, 1};
constexpr int64_t kBinaryElems = 4;

// The variant of `shader` that checks for integer faults on tensor `id`
// (glsl/fault.glslh), or "" where it needs none: integer division by zero on any
// integer dtype, and for int64 stored as int32 results outside int32.
std::string checked_variant(ComputeGraph& g, const std::string& shader, int id) {
  const Tensor& t = g.tensor(id);
  if (!is_int_storage(t.storage_type) || t.dtype == DType::Bool) return "";
  for (const char* div : {"binary_div_trunc", "binary_div_floor"}) {
    if (shader == div) return shader + "_checked";
  }
  if (t.dtype != DType::Int64 || t.storage_type != StorageType::I32) return "";
  for (const char* op : {"binary_add", "binary_sub", "binary_mul", "binary_pow", "scalar_add", "scalar_sub",
                         "scalar_mul", "scalar_pow", "scalar_rpow", "unary_neg", "unary_abs"}) {
    if (shader == op) return shader + "_int64";
  }
  return "";
}

// `tensors` of a node running `shader` on values of tensor `id`'s dtype: the
// shader's variant, with a fault slot appended where it checks for faults.
std::string node_shader(ComputeGraph& g, const std::string& shader, int id, std::vector<int>& tensors) {
  const std::string checked = checked_variant(g, shader, id);
  if (checked.empty()) return variant(g, shader, id);
  return with_fault_slot(g, tensors, variant(g, checked, id), variant(g, shader, id));
}

// a OP b -> out, all of one dtype.
void add_binary(ComputeGraph& g, int a, int b, int out, const std::string& shader,
                Types types, float alpha = 1.0f) {
  require_same_dtype(g, {a, b, out});
  require_types(g, out, types);
  std::vector<int> tensors{out, a, b};
  const std::string name = node_shader(g, shader, out, tensors);
  const LocalSize local = local_1d_within(g.context().info(), kBinaryLocal[0]);
  g.add_node(g.current_op(), name, local, tensors,
             [a, b, out, alpha, local](ComputeGraph& g, Node& node) {
               BinaryParams p{};
               fill_broadcast(g, a, b, out, p);
               p.alpha = alpha;
               node.set_params(p);
               const int64_t n = g.tensor(out).numel();
               node.set_groups_1d(p.same_shape ? std::max<int64_t>((n / 4 + kBinaryElems - 1) / kBinaryElems, 1) : n, local[0]);
             });
}

// a OP b -> bool out; a and b of one dtype.
void add_compare(ComputeGraph& g, int a, int b, int out, const std::string& shader) {
  require_same_dtype(g, {a, b});
  require_types(g, a, Types::Any);
  if (g.tensor(out).dtype != DType::Bool) g.fail("the output must be bool");
  g.add_node(g.current_op(), variant(g, shader, a), kLocal1D, {out, a, b},
             [a, b, out](ComputeGraph& g, Node& node) {
               CompareParams p{};
               fill_broadcast(g, a, b, out, p);
               node.set_params(p);
               node.set_groups_1d(g.tensor(out).numel(), kLocal1D[0]);
             });
}

// a OP scalar -> bool out; `scalar_id` holds the scalar (or -1 for `fixed`).
void add_compare_scalar(ComputeGraph& g, int a, int scalar_id, int out, const std::string& shader,
                        double fixed = 0.0) {
  require_types(g, a, Types::Any);
  if (g.tensor(out).dtype != DType::Bool) g.fail("the output must be bool");
  CompareParams base{};
  if (is_float(g, a)) {
    base.scalar = static_cast<float>(scalar_id >= 0 ? g.get_double(scalar_id) : fixed);
  } else {
    split_int(scalar_id >= 0 ? int_scalar(g, scalar_id, a) : static_cast<int64_t>(fixed), base.int_scalar,
              base.int_scalar_hi);
  }
  g.add_node(g.current_op(), variant(g, shader, a), kLocal1D, {out, a},
             [a, out, base](ComputeGraph& g, Node& node) {
               Tensor& to = g.tensor(out);
               to.sizes = g.tensor(a).sizes;
               CompareParams p = base;
               p.numel = static_cast<int32_t>(to.numel());
               node.set_params(p);
               node.set_groups_1d(to.numel(), kLocal1D[0]);
             });
}

// where.self(condition, self, other)
void add_where(ComputeGraph& g, int cond, int a, int b, int out) {
  if (g.tensor(cond).dtype != DType::Bool) g.fail("the condition must be bool");
  require_same_dtype(g, {a, b, out});
  require_types(g, out, Types::Any);
  g.add_node(g.current_op(), variant(g, "where", out), kLocal1D, {out, cond, a, b},
             [cond, a, b, out](ComputeGraph& g, Node& node) {
               const Tensor& tc = g.tensor(cond);
               const Tensor& ta = g.tensor(a);
               const Tensor& tb = g.tensor(b);
               Tensor& to = g.tensor(out);
               to.sizes = broadcast_sizes(g, tc.sizes, broadcast_sizes(g, ta.sizes, tb.sizes));
               WhereParams p{};
               pack8(p.out_sizes, to.sizes);
               pack8(p.cond_strides, broadcast_strides(tc, to.sizes));
               pack8(p.a_strides, broadcast_strides(ta, to.sizes));
               pack8(p.b_strides, broadcast_strides(tb, to.sizes));
               p.numel = static_cast<int32_t>(to.numel());
               p.rank = static_cast<int32_t>(to.dim());
               node.set_params(p);
               node.set_groups_1d(to.numel(), kLocal1D[0]);
             });
}


UnaryParams unary_params(float a = 0, float b = 0, float c = 0) {
  return UnaryParams{0, a, b, c, 0, 0, 0, 0};
}

void add_unary(ComputeGraph& g, int in, int out, const std::string& shader, Types types,
               UnaryParams params = unary_params()) {
  require_same_dtype(g, {in, out});
  require_types(g, out, types);
  std::vector<int> tensors{out, in};
  const std::string name = node_shader(g, shader, out, tensors);
  g.add_node(g.current_op(), name, kLocal1D, tensors,
             [in, out, params](ComputeGraph& g, Node& node) {
               Tensor& to = g.tensor(out);
               to.sizes = g.tensor(in).sizes;
               UnaryParams p = params;
               p.numel = static_cast<int32_t>(to.numel());
               node.set_params(p);
               node.set_groups_1d(to.numel(), kLocal1D[0]);
             });
}


// tensor OP scalar -> out of the tensor's dtype.
void add_binary_scalar(ComputeGraph& g, int in, int scalar_id, int out, const std::string& shader,
                       Types types, float alpha = 1.0f) {
  require_same_dtype(g, {in, out});
  require_types(g, out, types);
  ScalarParams base{};
  base.alpha = alpha;
  if (is_float(g, in)) {
    base.scalar = static_cast<float>(g.get_double(scalar_id));
  } else {
    split_int(int_scalar(g, scalar_id, in), base.int_scalar, base.int_scalar_hi);
  }
  std::vector<int> tensors{out, in};
  const std::string name = node_shader(g, shader, out, tensors);
  g.add_node(g.current_op(), name, kLocal1D, tensors,
             [in, out, base](ComputeGraph& g, Node& node) {
               Tensor& to = g.tensor(out);
               to.sizes = g.tensor(in).sizes;
               ScalarParams p = base;
               p.numel = static_cast<int32_t>(to.numel());
               node.set_params(p);
               node.set_groups_1d(to.numel(), kLocal1D[0]);
             });
}

float get_float(ComputeGraph& g, int id) { return static_cast<float>(g.get_double(id)); }

// clamp(self, min=None, max=None) and hardtanh(self, min_val, max_val): bounds
// as the tensor's type (integer tensors need integer bounds).
void add_clamp(ComputeGraph& g, int in, int out, int min_id, int max_id) {
  const float inf = std::numeric_limits<float>::infinity();
  UnaryParams p = unary_params(-inf, inf);
  const bool has_min = !g.is_null(min_id), has_max = !g.is_null(max_id);
  if (is_float(g, in)) {
    if (has_min) p.a = get_float(g, min_id);
    if (has_max) p.b = get_float(g, max_id);
  } else {
    const bool wide = g.tensor(in).storage_type == StorageType::I64;
    const int64_t lowest = wide ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
    const int64_t highest = wide ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int32_t>::max();
    split_int(has_min ? int_scalar(g, min_id, in) : lowest, p.int_min, p.int_min_hi);
    split_int(has_max ? int_scalar(g, max_id, in) : highest, p.int_max, p.int_max_hi);
  }
  add_unary(g, in, out, "unary_clamp", Types::Any, p);
}

using Args = OpArgs;

}  // namespace

VKD_REGISTER_OPS(register_elementwise_ops) {
  // add.Tensor / sub.Tensor(self, other, *, alpha=1)
  for (const char* op : {"add", "sub"}) {
    const std::string shader = std::string("binary_") + op;
    register_op(std::string("aten.") + op + ".Tensor", [shader](ComputeGraph& g, const Args& a) {
      add_binary(g, a.at(0), a.at(1), a.back(), shader, Types::Any, get_float(g, a.at(2)));
    });
    register_op(std::string("aten.") + op + ".Scalar", [op](ComputeGraph& g, const Args& a) {
      add_binary_scalar(g, a.at(0), a.at(1), a.back(), std::string("scalar_") + op, Types::Any,
                        get_float(g, a.at(2)));
    });
  }
  register_op("aten.mul.Tensor", [](ComputeGraph& g, const Args& a) {
    add_binary(g, a.at(0), a.at(1), a.back(), "binary_mul", Types::Any);
  });
  register_op("aten.mul.Scalar", [](ComputeGraph& g, const Args& a) {
    add_binary_scalar(g, a.at(0), a.at(1), a.back(), "scalar_mul", Types::Any);
  });
  register_op("aten.div.Tensor", [](ComputeGraph& g, const Args& a) {
    add_binary(g, a.at(0), a.at(1), a.back(), "binary_div", Types::FloatOnly);
  });
  register_op("aten.div.Scalar", [](ComputeGraph& g, const Args& a) {
    add_binary_scalar(g, a.at(0), a.at(1), a.back(), "scalar_div", Types::FloatOnly);
  });
  // div.Tensor_mode(self, other, *, rounding_mode)
  register_op("aten.div.Tensor_mode", [](ComputeGraph& g, const Args& a) {
    if (g.is_null(a.at(2))) {
      add_binary(g, a.at(0), a.at(1), a.back(), "binary_div", Types::FloatOnly);
      return;
    }
    const std::string mode = g.get_string(a.at(2));
    if (mode != "trunc" && mode != "floor") g.fail("unknown rounding_mode '" + mode + "'");
    add_binary(g, a.at(0), a.at(1), a.back(), "binary_div_" + mode, Types::Any);
  });
  for (const char* op : {"minimum", "maximum"}) {
    const std::string shader = std::string("binary_") + op;
    register_op(std::string("aten.") + op + ".default", [shader](ComputeGraph& g, const Args& a) {
      add_binary(g, a.at(0), a.at(1), a.back(), shader, Types::Any);
    });
  }
  register_op("aten.pow.Tensor_Tensor", [](ComputeGraph& g, const Args& a) {
    add_binary(g, a.at(0), a.at(1), a.back(), "binary_pow", Types::Any);
  });
  register_op("aten.pow.Tensor_Scalar", [](ComputeGraph& g, const Args& a) {
    add_binary_scalar(g, a.at(0), a.at(1), a.back(), "scalar_pow", Types::Any);
  });
  // pow.Scalar(Scalar self, Tensor exponent)
  register_op("aten.pow.Scalar", [](ComputeGraph& g, const Args& a) {
    add_binary_scalar(g, a.at(1), a.at(0), a.back(), "scalar_rpow", Types::Any);
  });
  for (const char* op : {"and", "or", "xor"}) {
    const std::string shader = std::string("binary_bitwise_") + op;
    register_op(std::string("aten.bitwise_") + op + ".Tensor", [shader](ComputeGraph& g, const Args& a) {
      add_binary(g, a.at(0), a.at(1), a.back(), shader, Types::IntOnly);
    });
    register_op(std::string("aten.logical_") + op + ".default", [op](ComputeGraph& g, const Args& a) {
      add_compare(g, a.at(0), a.at(1), a.back(), std::string("compare_logical_") + op);
    });
  }
  // bitwise_not: logical on bool (stored as 0/1), two's complement on integers.
  register_op("aten.bitwise_not.default", [](ComputeGraph& g, const Args& a) {
    if (g.tensor(a.at(0)).dtype == DType::Bool) {
      add_compare_scalar(g, a.at(0), -1, a.back(), "compare_scalar_eq", 0.0);
    } else {
      add_unary(g, a.at(0), a.back(), "unary_bitwise_not", Types::IntOnly);
    }
  });
  register_op("aten.logical_not.default", [](ComputeGraph& g, const Args& a) {
    add_compare_scalar(g, a.at(0), -1, a.back(), "compare_scalar_eq", 0.0);
  });
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    register_op(std::string("aten.") + op + ".Tensor", [op](ComputeGraph& g, const Args& a) {
      add_compare(g, a.at(0), a.at(1), a.back(), std::string("compare_") + op);
    });
    register_op(std::string("aten.") + op + ".Scalar", [op](ComputeGraph& g, const Args& a) {
      add_compare_scalar(g, a.at(0), a.at(1), a.back(), std::string("compare_scalar_") + op);
    });
  }
  register_op("aten.where.self", [](ComputeGraph& g, const Args& a) {
    add_where(g, a.at(0), a.at(1), a.at(2), a.back());
  });

  for (const char* name : {"relu", "neg", "abs", "sign"}) {
    const std::string shader = std::string("unary_") + name;
    register_op(std::string("aten.") + name + ".default", [shader](ComputeGraph& g, const Args& a) {
      add_unary(g, a.at(0), a.back(), shader, Types::Any);
    });
  }
  for (const char* name : {"sigmoid", "tanh", "exp", "log", "log10", "sqrt", "rsqrt", "reciprocal",
                           "sin", "cos", "round", "erf", "silu", "hardswish", "hardsigmoid"}) {
    const std::string shader = std::string("unary_") + name;
    register_op(std::string("aten.") + name + ".default", [shader](ComputeGraph& g, const Args& a) {
      add_unary(g, a.at(0), a.back(), shader, Types::FloatOnly);
    });
  }
  // gelu(self, *, approximate='none')
  register_op("aten.gelu.default", [](ComputeGraph& g, const Args& a) {
    const std::string approx = g.get_string(a.at(1));
    if (approx != "none" && approx != "tanh") g.fail("unknown gelu approximation '" + approx + "'");
    add_unary(g, a.at(0), a.back(), approx == "tanh" ? "unary_gelu_tanh" : "unary_gelu", Types::FloatOnly);
  });
  register_op("aten.clamp.default", [](ComputeGraph& g, const Args& a) {
    add_clamp(g, a.at(0), a.back(), a.at(1), a.at(2));
  });
  register_op("aten.hardtanh.default", [](ComputeGraph& g, const Args& a) {
    add_clamp(g, a.at(0), a.back(), a.at(1), a.at(2));
  });
  // leaky_relu(self, negative_slope=0.01)
  register_op("aten.leaky_relu.default", [](ComputeGraph& g, const Args& a) {
    add_unary(g, a.at(0), a.back(), "unary_leaky_relu", Types::FloatOnly, unary_params(get_float(g, a.at(1))));
  });
  // softplus(self, beta=1, threshold=20)
  register_op("aten.softplus.default", [](ComputeGraph& g, const Args& a) {
    const float beta = get_float(g, a.at(1));
    if (beta == 0.0f) g.fail("softplus beta must be nonzero");
    add_unary(g, a.at(0), a.back(), "unary_softplus", Types::FloatOnly,
              unary_params(beta, get_float(g, a.at(2))));
  });
  // elu(self, alpha=1, scale=1, input_scale=1)
  register_op("aten.elu.default", [](ComputeGraph& g, const Args& a) {
    add_unary(g, a.at(0), a.back(), "unary_elu", Types::FloatOnly,
              unary_params(get_float(g, a.at(1)), get_float(g, a.at(2)), get_float(g, a.at(3))));
  });
}

}  // namespace vkd
