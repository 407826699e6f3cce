// Normalizations: native_layer_norm, batch norm in inference, native_group_norm.
#include "norm.h"
#include "op_utils.h"
#include "shader_params.h"  // LayerNormParams, BatchNormParams, GroupNormParams: glsl/*_norm.glsl

namespace vkd {

namespace {

constexpr LocalSize kNormLocal{64, 1, 1};
// Rows of kLongRow or more: 256 invocations, each keeping up to 16 values in
// registers (layer_norm.glsl's CACHE), so rows up to 4096 are read once.
constexpr LocalSize kNormLongLocal{256, 1, 1};
constexpr int64_t kLongRow = 1024;

}  // namespace

// native_layer_norm's node over the trailing `nd` dims of `in` (norm.h).
void add_layer_norm_node(ComputeGraph& g, int in, int weight, int bias, int64_t nd, float eps, int out, int mean,
                         int rstd) {
  require_float_same(g, {in, out, mean, rstd, weight, bias});
  const int64_t rank = g.tensor(in).dim();
  if (nd == 0 || nd > rank) g.fail("the normalized dims do not fit the input " + sizes_str(g.tensor(in).sizes));
  const int64_t D = numel_of(Sizes(g.tensor(in).sizes.end() - nd, g.tensor(in).sizes.end()));
  for (int id : {weight, bias}) {
    if (id >= 0 && g.tensor(id).numel() != D) g.fail("weight/bias must have normalized_shape");
  }
  g.add_node(g.current_op(), variant(g, "layer_norm", in), D >= kLongRow ? local_1d_within(g.context().info(), kNormLongLocal[0]) : kNormLocal,
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
                                               weight >= 0, bias >= 0, eps, 0, 0, 0});
               node.set_groups_1d(rows, 1);  // one workgroup per row
             });
}

namespace {

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
void add_layer_norm(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 8) g.fail("expected 5 arguments and 3 outputs");
  const int in = a[0], weight = g.is_null(a[2]) ? -1 : a[2], bias = g.is_null(a[3]) ? -1 : a[3];
  const IntList shape = g.get_int_list(a[1]);
  const int64_t rank = g.tensor(in).dim();
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (nd == 0 || nd > rank) g.fail("normalized_shape " + sizes_str(shape) + " does not fit the input");
  for (int64_t i = 0; i < nd; ++i) {
    if (g.tensor(in).sizes[rank - nd + i] != shape[i]) {
      g.fail("normalized_shape " + sizes_str(shape) + " does not match input " + sizes_str(g.tensor(in).sizes));
    }
  }
  add_layer_norm_node(g, in, weight, bias, nd, static_cast<float>(g.get_double(a[4])), a[5], a[6], a[7]);
}

// _native_batch_norm_legit_no_training(input, weight?, bias?, running_mean, running_var,
//                                      momentum, eps) -> (out, save_mean, save_rstd)
// In inference the two saved statistics are empty tensors.
void add_batch_norm(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 10) g.fail("expected 7 arguments and 3 outputs");
  const int in = a[0], weight = g.is_null(a[1]) ? -1 : a[1], bias = g.is_null(a[2]) ? -1 : a[2];
  const int mean = a[3], var = a[4], out = a[7], save_mean = a[8], save_rstd = a[9];
  require_float_same(g, {in, weight, bias, mean, var, out});
  const float eps = static_cast<float>(g.get_double(a[6]));
  if (g.tensor(in).dim() < 2) g.fail("batch norm needs an input of rank 2 or more");
  const int64_t C = g.tensor(in).sizes[1];
  for (int id : {weight, bias, mean, var}) {
    if (id >= 0 && g.tensor(id).numel() != C) g.fail("weight, bias and running stats must have one value per channel");
  }
  g.add_node(g.current_op(), variant(g, "batch_norm", in), kLocal1D,
             {out, in, weight >= 0 ? weight : mean, bias >= 0 ? bias : mean, mean, var},
             [=](ComputeGraph& g, Node& node) {
               const Tensor& x = g.tensor(in);
               if (x.dim() < 2 || x.sizes[1] != C) g.fail("input " + sizes_str(x.sizes) + " does not have " + std::to_string(C) + " channels");
               g.tensor(out).sizes = x.sizes;
               g.tensor(save_mean).sizes = {0};
               g.tensor(save_rstd).sizes = {0};
               int64_t inner = 1;
               for (int64_t d = 2; d < x.dim(); ++d) inner *= x.sizes[d];
               node.set_params(BatchNormParams{static_cast<int32_t>(x.numel()), static_cast<int32_t>(C),
                                               static_cast<int32_t>(inner), weight >= 0, bias >= 0, eps, 0, 0});
               node.set_groups_1d(x.numel(), kLocal1D[0]);
             });
}

// native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean, rstd)
void add_group_norm(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 11) g.fail("expected 8 arguments and 3 outputs");
  const int in = a[0], weight = g.is_null(a[1]) ? -1 : a[1], bias = g.is_null(a[2]) ? -1 : a[2];
  const int out = a[8], mean = a[9], rstd = a[10];
  require_float_same(g, {in, weight, bias, out, mean, rstd});
  const int64_t groups = g.get_int(a[6]);
  const float eps = static_cast<float>(g.get_double(a[7]));
  const Tensor& x0 = g.tensor(in);
  if (x0.dim() < 2) g.fail("group norm needs an input of rank 2 or more");
  const int64_t C = x0.sizes[1];
  if (groups < 1 || C % groups != 0) g.fail("channels " + std::to_string(C) + " are not divisible by groups " + std::to_string(groups));
  for (int id : {weight, bias}) {
    if (id >= 0 && g.tensor(id).numel() != C) g.fail("weight and bias must have one value per channel");
  }
  g.add_node(g.current_op(), variant(g, "group_norm", in), kNormLocal,
             {out, mean, rstd, in, weight >= 0 ? weight : in, bias >= 0 ? bias : in},
             [=](ComputeGraph& g, Node& node) {
               const Tensor& x = g.tensor(in);
               if (x.dim() < 2 || x.sizes[1] != C) g.fail("input " + sizes_str(x.sizes) + " does not have " + std::to_string(C) + " channels");
               const int64_t N = x.sizes[0];
               int64_t hxw = 1;
               for (int64_t d = 2; d < x.dim(); ++d) hxw *= x.sizes[d];
               g.tensor(out).sizes = x.sizes;
               g.tensor(mean).sizes = {N, groups};
               g.tensor(rstd).sizes = {N, groups};
               const int64_t rows = N * groups;
               node.set_params(GroupNormParams{static_cast<int32_t>(rows), static_cast<int32_t>(C / groups * hxw),
                                               static_cast<int32_t>(hxw), static_cast<int32_t>(C / groups),
                                               static_cast<int32_t>(groups), weight >= 0, bias >= 0, eps});
               node.set_groups_1d(rows, 1);  // one workgroup per (n, group)
             });
}

}  // namespace

VKD_REGISTER_OPS(register_norm_ops) {
  register_op("aten.native_layer_norm.default", add_layer_norm);
  register_op("aten._native_batch_norm_legit_no_training.default", add_batch_norm);
  register_op("aten.native_group_norm.default", add_group_norm);
}

}  // namespace vkd
