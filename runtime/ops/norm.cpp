// Normalizations: native_layer_norm.
#include "op_utils.h"

namespace vkd {

namespace {

struct LayerNormParams {
  int32_t rows, D, has_weight, has_bias;
  float eps;
  int32_t pad[3];
};

constexpr LocalSize kNormLocal{64, 1, 1};

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
void add_layer_norm(ComputeGraph& g, const std::vector<int>& a) {
  if (a.size() != 8) g.fail("expected 5 arguments and 3 outputs");
  const int in = a[0], weight = g.is_null(a[2]) ? -1 : a[2], bias = g.is_null(a[3]) ? -1 : a[3];
  const int out = a[5], mean = a[6], rstd = a[7];
  for (int id : {in, out, mean, rstd, weight, bias}) {
    if (id >= 0) require_float(g, id);
  }
  const IntList shape = g.get_int_list(a[1]);
  const float eps = static_cast<float>(g.get_double(a[4]));
  const int64_t rank = g.tensor(in).dim();
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (nd == 0 || nd > rank) g.fail("normalized_shape " + sizes_str(shape) + " does not fit the input");
  for (int64_t i = 0; i < nd; ++i) {
    if (g.tensor(in).sizes[rank - nd + i] != shape[i]) {
      g.fail("normalized_shape " + sizes_str(shape) + " does not match input " + sizes_str(g.tensor(in).sizes));
    }
  }
  const int64_t D = numel_of(shape);
  for (int id : {weight, bias}) {
    if (id >= 0 && g.tensor(id).numel() != D) g.fail("weight/bias must have normalized_shape");
  }
  g.add_node(g.current_op(), "layer_norm", kNormLocal,
             {out, mean, rstd, in, weight >= 0 ? weight : in, bias >= 0 ? bias : in},
             [=](ComputeGraph& g, Node& node) {
               const Tensor& x = g.tensor(in);
               g.tensor(out).sizes = x.sizes;
               Sizes stat = x.sizes;
               for (int64_t i = 0; i < nd; ++i) stat[x.dim() - 1 - i] = 1;
               g.tensor(mean).sizes = stat;
               g.tensor(rstd).sizes = stat;
               const int64_t rows = D == 0 ? 0 : x.numel() / D;
               node.set_params(LayerNormParams{static_cast<int32_t>(rows), static_cast<int32_t>(D),
                                               weight >= 0, bias >= 0, eps, {0, 0, 0}});
               node.set_groups_1d(rows, 1);  // one workgroup per row
             });
}

}  // namespace

VKD_REGISTER_OPS(register_norm_ops) {
  register_op("aten.native_layer_norm.default", add_layer_norm);
}

}  // namespace vkd
