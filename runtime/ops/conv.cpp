// aten.convolution: 1-D and 2-D, any stride, padding, dilation and groups,
// optional bias; transposed with output_padding. 1-D runs as 2-D with H = 1.
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "../vk/pipeline.h"
#include "conv_choice.h"
#include "op_utils.h"
#include "shader_params.h"  // ConvParams, ConvSplitkReduceParams: glsl/conv_params.glslh

namespace vkd {

namespace {

// What et_vk.vkd_conv2d_clamp fuses into the convolution's epilogue.
struct Epilogue {
  bool clamp = false;
  float min = 0, max = 0;
  int residual = -1;  // a tensor of the output's sizes added before the clamp
};

constexpr int kTileOW = 4;  // TOW of both direct variants
// A 1-D convolution's argument list ([s]) as (one_d_h, s); a 2-D one's as pair_arg reads it.
IntPair hw(ComputeGraph& g, int id, int spatial, int64_t one_d_h, const char* what) {
  if (spatial == 2) return pair_arg(g, id, what);
  const IntList& v = g.get_int_list(id);
  if (v.size() != 1) g.fail(std::string(what) + " " + sizes_str(v) + " does not match a 1-D convolution");
  return {one_d_h, int32_arg(g, v[0], what)};
}

struct ConvShape {
  int64_t C, OC, icpg, ocpg, KH, KW;
};

// Weight [OC, C/groups, k...] or, transposed, [C, OC/groups, k...].
ConvShape conv_shape(ComputeGraph& g, const Tensor& x, const Tensor& w, int64_t groups, bool transposed,
                     int spatial) {
  if (x.dim() != spatial + 2 || w.dim() != x.dim()) g.fail("input and weight ranks do not match the convolution");
  ConvShape c;
  c.KH = int32_arg(g, spatial == 2 ? w.sizes[2] : 1, "kernel height");
  c.KW = int32_arg(g, w.sizes.back(), "kernel width");
  c.C = x.sizes[1];
  c.OC = transposed ? checked_mul(w.sizes[1], int32_arg(g, groups, "groups")) : w.sizes[0];
  c.icpg = c.C / groups;
  c.ocpg = c.OC / groups;
  if (c.C % groups != 0 || (transposed ? w.sizes[0] != c.C : (w.sizes[1] != c.icpg || c.OC % groups != 0))) {
    g.fail("weight " + sizes_str(w.sizes) + " does not fit input " + sizes_str(x.sizes) + " with groups=" +
           std::to_string(groups));
  }
  return c;
}

// `a`: the nine arguments, then the output.
void add_convolution_fused(ComputeGraph& g, const OpArgs& a, Epilogue epi) {
  const int in = a[0], weight = a[1], bias = g.is_null(a[2]) ? -1 : a[2], out = a[9];
  require_float_same(g, {in, weight, bias, out, epi.residual});
  const Tensor& x = g.tensor(in);
  const Tensor& w = g.tensor(weight);
  if (x.dim() != 3 && x.dim() != 4) {
    g.fail("input of rank " + std::to_string(x.dim()) + ": only 1-D and 2-D convolutions (rank 3 or 4) are supported");
  }
  if (w.dim() != x.dim()) g.fail("weight rank does not match the input rank");
  const int spatial = static_cast<int>(x.dim()) - 2;
  // Plain variables, not structured bindings: the update lambda captures them, which
  // C++17 (and clang before 16, the sanitizer build's compiler) does not allow for bindings.
  int64_t sh, sw, ph, pw, dh, dw, oph, opw;
  std::tie(sh, sw) = hw(g, a[3], spatial, 1, "stride");
  std::tie(ph, pw) = hw(g, a[4], spatial, 0, "padding");
  std::tie(dh, dw) = hw(g, a[5], spatial, 1, "dilation");
  const bool transposed = g.get_bool(a[6]);
  std::tie(oph, opw) = hw(g, a[7], spatial, 0, "output_padding");
  const int64_t groups = g.get_int(a[8]);
  if (sh < 1 || sw < 1 || dh < 1 || dw < 1 || ph < 0 || pw < 0 || oph < 0 || opw < 0 || groups < 1) {
    g.fail("stride and dilation must be positive, padding and output_padding non-negative, groups positive");
  }
  if (transposed && ((oph >= sh && oph >= dh) || (opw >= sw && opw >= dw))) {
    g.fail("output_padding must be smaller than stride or dilation");
  }
  // Channels and kernel come from the current sizes: a weight that is a graph
  // input may resize too.
  const auto shape_of = [=](ComputeGraph& g) {
    ConvShape c = conv_shape(g, g.tensor(in), g.tensor(weight), groups, transposed, spatial);
    if (bias >= 0 && g.tensor(bias).numel() != c.OC) g.fail("bias must have one value per output channel");
    return c;
  };
  const ConvShape planned = shape_of(g);
  const int64_t ocpg = planned.ocpg;
  const bool depthwise = !transposed && ocpg < kConvDirectTileOC;
  if (transposed && (epi.clamp || epi.residual >= 0)) {
    g.fail("a fused clamp or residual is not supported on a transposed convolution");
  }
  // The kernel from the planned sizes (conv_choice.cpp).
  ConvProblem problem;
  {
    const Tensor& x = g.tensor(in);
    const int64_t H = spatial == 2 ? x.sizes[2] : 1, W = x.sizes.back();
    const int64_t OH = (H + 2 * ph - dh * (planned.KH - 1) - 1) / sh + 1;
    const int64_t OW = (W + 2 * pw - dw * (planned.KW - 1) - 1) / sw + 1;
    problem.dtype = x.dtype;
    problem.transposed = transposed;
    problem.groups = groups, problem.batch = x.sizes[0];
    problem.icpg = planned.icpg, problem.ocpg = ocpg;
    problem.kernel_taps = planned.KH * planned.KW;
    problem.out_pixels = OH > 0 && OW > 0 ? OH * OW : 0;
  }
  const ConvChoice choice = choose_conv(problem, g.context().info(), g.settings());
  const bool tiled = choice.kernel == ConvKernel::Tiled;
  const bool gemm = choice.kernel == ConvKernel::Gemm || choice.kernel == ConvKernel::Coop;
  const bool exact = tiled || choice.kernel == ConvKernel::Coop;  // the shader, not a base name
  const std::string shader = exact ? choice.shader : variant(g, choice.shader, in);
  const int toc = depthwise ? 1 : kConvDirectTileOC;
  const LocalSize local = choice.local;
  const int64_t tile_m = choice.tile_m, tile_n = choice.tile_n;
  const int64_t splits = choice.splits;
  // With a split, the convolution writes float slices into a scratch tensor.
  const int part = splits > 1 ? g.add_scratch_tensor(DType::Float32, {splits * g.tensor(out).numel()}) : -1;
  const int64_t kc = choice.kc;
  std::vector<int> tensors{splits > 1 ? part : out, in, weight, bias >= 0 ? bias : weight};
  if (!transposed) tensors.push_back(epi.residual >= 0 ? epi.residual : in);
  g.add_node(g.current_op(), shader, local, tensors,
             [=](ComputeGraph& g, Node& node) {
               const Tensor& x = g.tensor(in);
               const auto [C, OC, icpg, ocpg, KH, KW] = shape_of(g);
               const int64_t N = x.sizes[0], H = spatial == 2 ? x.sizes[2] : 1, W = x.sizes.back();
               int64_t OH, OW;
               if (transposed) {
                 OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1;
                 OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1;
               } else {
                 OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1;
                 OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
               }
               if (OH < 1 || OW < 1) g.fail("input " + sizes_str(x.sizes) + " is too small for the kernel");
               Tensor& o = g.tensor(out);
               o.sizes = spatial == 2 ? Sizes{N, OC, OH, OW} : Sizes{N, OC, OW};
               ConvParams p{};
               p.N = N, p.C = C, p.H = H, p.W = W;
               p.OC = OC, p.OH = OH, p.OW = OW, p.KH = KH;
               p.KW = KW, p.stride_h = sh, p.stride_w = sw, p.pad_h = ph;
               p.pad_w = pw, p.dil_h = dh, p.dil_w = dw, p.groups = groups;
               p.icpg = icpg, p.ocpg = ocpg;
               p.oc_blocks = (ocpg + toc - 1) / toc;
               p.ow_blocks = (OW + kTileOW - 1) / kTileOW;
               p.has_bias = bias >= 0;
               p.has_clamp = epi.clamp;
               p.out_min = epi.min, p.out_max = epi.max;
               p.has_residual = epi.residual >= 0;
               if (epi.residual >= 0 && g.tensor(epi.residual).sizes != o.sizes) {
                 g.fail("the residual " + sizes_str(g.tensor(epi.residual).sizes) +
                        " must have the output's sizes " + sizes_str(o.sizes));
               }
               const int64_t total = transposed ? o.numel() : N * groups * p.oc_blocks * OH * p.ow_blocks;
               p.total = static_cast<int32_t>(total);
               if (splits > 1) {
                 g.tensor(part).sizes = {splits * o.numel()};
                 // K per slice, whole stages (the last slice may be shorter).
                 const int64_t K = icpg * KH * KW, per = (K + splits - 1) / splits;
                 p.k_chunk = static_cast<int32_t>(std::max<int64_t>(1, (per + kc - 1) / kc) * kc);
               }
               node.set_params(p);
               if (tiled) {
                 const int64_t tp = 8 * local[0], tc = 8 * local[1];
                 const int64_t pixel_tiles = (N * OH * OW + tp - 1) / tp;
                 if (pixel_tiles > 65535) {
                   g.fail("output of " + std::to_string(N * OH * OW) + " pixels is too large for conv2d_tiled");
                 }
                 node.groups = {static_cast<uint32_t>((ocpg + tc - 1) / tc), static_cast<uint32_t>(pixel_tiles), 1};
               } else if (gemm) {
                 const int64_t tiles_z = N * groups * splits;
                 if (tiles_z > 65535) g.fail("batch * groups (* K slices) over 65535 is not supported");
                 node.groups = {static_cast<uint32_t>((OH * OW + tile_n - 1) / tile_n),
                                static_cast<uint32_t>((ocpg + tile_m - 1) / tile_m),
                                static_cast<uint32_t>(tiles_z)};
               } else {
                 node.set_groups_1d(total, kLocal1D[0]);
               }
             });
  if (splits > 1) {
    g.add_node(g.current_op(), std::string("conv2d_splitk_reduce_") + storage_suffix(g.tensor(out).storage_type), kLocal1D,
               {out, part, bias >= 0 ? bias : part, epi.residual >= 0 ? epi.residual : part},
               [=](ComputeGraph& g, Node& node) {
                 const Tensor& o = g.tensor(out);  // sized by the convolution's update, before this one
                 ConvSplitkReduceParams r{};
                 r.total = static_cast<int32_t>(o.numel());
                 r.OC = static_cast<int32_t>(o.sizes[1]);
                 r.npix = static_cast<int32_t>(o.numel() / std::max<int64_t>(1, o.sizes[0] * o.sizes[1]));
                 r.splits = static_cast<int32_t>(splits);
                 r.has_bias = bias >= 0, r.has_residual = epi.residual >= 0, r.has_clamp = epi.clamp;
                 r.out_min = epi.min, r.out_max = epi.max;
                 node.set_params(r);
                 node.set_groups_1d(o.numel(), kLocal1D[0]);
               });
  }
}

// convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups)
void add_convolution(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 10) g.fail("expected 9 arguments and 1 output");
  add_convolution_fused(g, a, Epilogue{});
}

// et_vk.vkd_conv2d_clamp: the convolution's arguments, min and max (inf: no
// bound), an optional residual added before the clamp; then the output.
void add_conv2d_clamp(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 13) g.fail("expected 12 arguments and 1 output");
  Epilogue epi;
  epi.clamp = true;
  epi.min = static_cast<float>(g.get_double(a[9]));
  epi.max = static_cast<float>(g.get_double(a[10]));
  if (!(epi.min <= epi.max)) g.fail("min must not exceed max");
  epi.residual = g.is_null(a[11]) ? -1 : a[11];
  std::vector<int> conv_args(a.begin(), a.begin() + 9);
  conv_args.push_back(a[12]);
  add_convolution_fused(g, std::move(conv_args), epi);
}

}  // namespace

VKD_REGISTER_OPS(register_conv_ops) {
  register_op("aten.convolution.default", add_convolution);
  register_op("et_vk.vkd_conv2d_clamp.default", add_conv2d_clamp);
}

}  // namespace vkd
