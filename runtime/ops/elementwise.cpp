// Elementwise ops: binary arithmetic with broadcasting, unary activations.
#include <cmath>
#include <limits>

#include "op_utils.h"

namespace vkd {

namespace {

struct BinaryParams {
  int32_t out_sizes[8];
  int32_t a_strides[8];
  int32_t b_strides[8];
  int32_t numel;
  int32_t rank;
  float alpha;
  int32_t same_shape;
};

// args: self, other, [alpha], out
void add_binary(ComputeGraph& g, const std::vector<int>& args, const char* shader,
                bool has_alpha) {
  const int a = args.at(0), b = args.at(1), out = args.back();
  require_same_dtype(g, {a, b, out});
  const DType dt = g.tensor(out).dtype;
  if (dt != DType::Float32 && dt != DType::Int32 && dt != DType::Int64) {
    g.fail(std::string("dtype ") + dtype_name(dt) + " is not supported");
  }
  const float alpha = has_alpha ? static_cast<float>(g.get_double(args.at(2))) : 1.0f;
  g.add_node(g.current_op(), variant(g, shader, out), kLocal1D, {out, a, b},
             [a, b, out, alpha](ComputeGraph& g, Node& node) {
               const Tensor& ta = g.tensor(a);
               const Tensor& tb = g.tensor(b);
               Tensor& to = g.tensor(out);
               to.sizes = broadcast_sizes(g, ta.sizes, tb.sizes);
               BinaryParams p{};
               pack8(p.out_sizes, to.sizes);
               pack8(p.a_strides, broadcast_strides(ta, to.sizes));
               pack8(p.b_strides, broadcast_strides(tb, to.sizes));
               p.numel = static_cast<int32_t>(to.numel());
               p.rank = static_cast<int32_t>(to.dim());
               p.alpha = alpha;
               p.same_shape = ta.sizes == to.sizes && tb.sizes == to.sizes;
               node.set_params(p);
               node.set_groups_1d(to.numel(), kLocal1D[0]);
             });
}

struct UnaryParams {
  int32_t numel;
  float min_value;
  float max_value;
  int32_t pad;
};

void add_unary(ComputeGraph& g, int in, int out, const char* shader,
               float min_value = -std::numeric_limits<float>::infinity(),
               float max_value = std::numeric_limits<float>::infinity()) {
  require_float(g, in);
  require_float(g, out);
  g.add_node(g.current_op(), shader, kLocal1D, {out, in},
             [in, out, min_value, max_value](ComputeGraph& g, Node& node) {
               Tensor& to = g.tensor(out);
               to.sizes = g.tensor(in).sizes;
               node.set_params(UnaryParams{static_cast<int32_t>(to.numel()), min_value, max_value, 0});
               node.set_groups_1d(to.numel(), kLocal1D[0]);
             });
}

struct ScalarParams {
  int32_t numel;
  float scalar;
  float alpha;
  int32_t pad;
};

// self, other (number), [alpha], out
void add_binary_scalar(ComputeGraph& g, const std::vector<int>& args, const char* shader,
                       bool has_alpha) {
  const int in = args.at(0), out = args.back();
  require_float(g, in);
  require_float(g, out);
  const float scalar = static_cast<float>(g.get_double(args.at(1)));
  const float alpha = has_alpha ? static_cast<float>(g.get_double(args.at(2))) : 1.0f;
  g.add_node(g.current_op(), shader, kLocal1D, {out, in},
             [in, out, scalar, alpha](ComputeGraph& g, Node& node) {
               Tensor& to = g.tensor(out);
               to.sizes = g.tensor(in).sizes;
               node.set_params(ScalarParams{static_cast<int32_t>(to.numel()), scalar, alpha, 0});
               node.set_groups_1d(to.numel(), kLocal1D[0]);
             });
}

float bound_or(ComputeGraph& g, int id, float absent) {
  return g.is_null(id) ? absent : static_cast<float>(g.get_double(id));
}

}  // namespace

VKD_REGISTER_OPS(register_elementwise_ops) {
  register_op("aten.add.Tensor", [](ComputeGraph& g, const std::vector<int>& a) {
    add_binary(g, a, "binary_add", true);
  });
  register_op("aten.sub.Tensor", [](ComputeGraph& g, const std::vector<int>& a) {
    add_binary(g, a, "binary_sub", true);
  });
  register_op("aten.mul.Tensor", [](ComputeGraph& g, const std::vector<int>& a) {
    add_binary(g, a, "binary_mul", false);
  });
  register_op("aten.div.Tensor", [](ComputeGraph& g, const std::vector<int>& a) {
    add_binary(g, a, "binary_div", false);
  });
  for (auto [op, alpha] : {std::pair{"add", true}, {"sub", true}, {"mul", false}, {"div", false}}) {
    const std::string shader = std::string("scalar_") + op;
    const bool has_alpha = alpha;
    register_op(std::string("aten.") + op + ".Scalar",
                [shader, has_alpha](ComputeGraph& g, const std::vector<int>& a) {
                  add_binary_scalar(g, a, shader.c_str(), has_alpha);
                });
  }

  for (const char* name : {"relu", "sigmoid", "tanh"}) {
    const std::string shader = std::string("unary_") + name;
    register_op(std::string("aten.") + name + ".default",
                [shader](ComputeGraph& g, const std::vector<int>& a) {
                  add_unary(g, a.at(0), a.back(), shader.c_str());
                });
  }
  // gelu(self, *, approximate='none')
  register_op("aten.gelu.default", [](ComputeGraph& g, const std::vector<int>& a) {
    const std::string approx = g.get_string(a.at(1));
    if (approx != "none" && approx != "tanh") g.fail("unknown gelu approximation '" + approx + "'");
    add_unary(g, a.at(0), a.back(), approx == "tanh" ? "unary_gelu_tanh" : "unary_gelu");
  });
  // clamp(self, min=None, max=None)
  register_op("aten.clamp.default", [](ComputeGraph& g, const std::vector<int>& a) {
    const float inf = std::numeric_limits<float>::infinity();
    add_unary(g, a.at(0), a.back(), "unary_clamp", bound_or(g, a.at(1), -inf),
              bound_or(g, a.at(2), inf));
  });
  // hardtanh(self, min_val=-1, max_val=1)
  register_op("aten.hardtanh.default", [](ComputeGraph& g, const std::vector<int>& a) {
    add_unary(g, a.at(0), a.back(), "unary_clamp", static_cast<float>(g.get_double(a.at(1))),
              static_cast<float>(g.get_double(a.at(2))));
  });
}

}  // namespace vkd
