// _softmax and _log_softmax along one dim.
#include "op_utils.h"
#include "shader_params.h"  // SoftmaxParams: glsl/softmax.glsl

namespace vkd {

namespace {

// One workgroup per row: 64 invocations, 256 for long rows (softmax.glsl keeps
// up to 16 elements per invocation in registers).
constexpr LocalSize kSoftmaxLocal{64, 1, 1};
constexpr LocalSize kSoftmaxLongLocal{256, 1, 1};
constexpr int64_t kLongRow = 1024;

// _softmax(self, dim, half_to_float)
void add_softmax(ComputeGraph& g, const OpArgs& args, const char* shader) {
  const int in = args.at(0), out = args.back();
  require_float_same(g, {in, out});
  if (g.get_bool(args.at(2))) g.fail("half_to_float is not supported");
  const int64_t dim = g.get_int(args.at(1));
  const Tensor& x = g.tensor(in);
  const int64_t planned_d = x.dim() == 0 ? 1 : x.sizes[normalize_dim(g, dim, x.dim())];
  g.add_node(g.current_op(), variant(g, shader, in), planned_d >= kLongRow ? local_1d_within(g.context().info(), kSoftmaxLongLocal[0]) : kSoftmaxLocal, {out, in},
             [in, out, dim](ComputeGraph& g, Node& node) {
               const Tensor& t = g.tensor(in);
               g.tensor(out).sizes = t.sizes;
               const int64_t d = normalize_dim(g, dim, t.dim());
               int64_t inner = 1;
               for (int64_t i = d + 1; i < t.dim(); ++i) inner *= t.sizes[i];
               const int64_t D = t.dim() == 0 ? 1 : t.sizes[d];
               const int64_t rows = D == 0 ? 0 : t.numel() / D;
               node.set_params(SoftmaxParams{static_cast<int32_t>(rows), static_cast<int32_t>(D),
                                             static_cast<int32_t>(std::max<int64_t>(inner, 1)), 0});
               // one workgroup per row
               node.set_groups_1d(rows, 1);
             });
}

}  // namespace

VKD_REGISTER_OPS(register_softmax_ops) {
  register_op("aten._softmax.default", [](ComputeGraph& g, const OpArgs& a) {
    add_softmax(g, a, "softmax");
  });
  register_op("aten._log_softmax.default", [](ComputeGraph& g, const OpArgs& a) {
    add_softmax(g, a, "log_softmax");
  });
}

}  // namespace vkd
