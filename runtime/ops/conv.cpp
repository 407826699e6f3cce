// aten.convolution: 1-D and 2-D, any stride, padding, dilation and groups,
// optional bias; transposed with output_padding. 1-D runs as 2-D with H = 1.
#include <cstdlib>
#include <cstring>

#include "../vk/pipeline.h"
#include "op_utils.h"

namespace vkd {

namespace {

struct ConvParams {
  int32_t N, C, H, W;
  int32_t OC, OH, OW, KH;
  int32_t KW, stride_h, stride_w, pad_h;
  int32_t pad_w, dil_h, dil_w, groups;
  int32_t icpg, ocpg, oc_blocks, ow_blocks;
  int32_t has_bias, total, pad0, pad1;
  // Epilogue of the direct and GEMM kernels: + residual, then clamp to [out_min, out_max].
  int32_t has_clamp;
  float out_min, out_max;
  int32_t has_residual;
};

// What et_vk.vkd_conv2d_clamp fuses into the convolution's epilogue.
struct Epilogue {
  bool clamp = false;
  float min = 0, max = 0;
  int residual = -1;  // a tensor of the output's sizes added before the clamp
};

constexpr int kTileOC = 4;  // TOC of the conv2d variant
constexpr int kTileOW = 4;  // TOW of both direct variants
// The implicit-GEMM kernel: 16 x 16 invocations, each 4 x 4 outputs; used when
// a group has enough output channels to fill most of a 64-channel tile.
constexpr LocalSize kGemmLocal{16, 16, 1};
constexpr int64_t kGemmTile = 64;
constexpr int64_t kGemmMinChannels = 16;
// Its split-K variant: 32-channel x 16-pixel tiles, 8 slices of K (local
// (TNT, TMT, SLICES) of conv2d_gemm_sk), for convolutions whose 64 x 64 tiles
// would leave a large GPU mostly idle (batch 1, small images, deep layers).
constexpr LocalSize kGemmSkLocal{4, 8, 8};
constexpr int64_t kGemmSkTileOC = 32;
constexpr int64_t kGemmSkTilePix = 16;
constexpr int64_t kGemmSkBelowTiles = 256;
// Fewer still (deep layers at batch 1): 16 x 16 tiles, 16 slices of K.
constexpr LocalSize kGemmSk16Local{4, 4, 16};
constexpr int64_t kGemmSk16Tile = 16;
constexpr int64_t kGemmSk16BelowTiles = 128;

// coopconv family: the cooperative-matrix implicit GEMM (conv2d_coop.glslh) for
// float16 storage. Tiles (channels x pixels) and the local size of each variant:
// l 64 x 64 (4 warps, 2x2 accumulators each), m 32 x 32 (8 warps, 2 slices of
// K), s 16 x 16 (8 warps, 8 slices of K) for the fewest tiles.
struct CoopVariant {
  const char* name;
  int64_t tile;  // BM = BN
  uint32_t invocations;
  uint32_t shared_bytes;
};
constexpr CoopVariant kCoopL{"l", 64, 128, 64 * 40 * 2 + 32 * 72 * 2 + 64 * 64 * 4};
constexpr CoopVariant kCoopM{"m", 32, 256, 32 * 40 * 2 + 32 * 40 * 2 + 2 * 32 * 32 * 4};
constexpr CoopVariant kCoopS{"s", 16, 256, 16 * 136 * 2 + 128 * 24 * 2 + 8 * 16 * 16 * 4};
constexpr int64_t kCoopLFromTiles = 256;  // l once its tiles alone fill the GPU
constexpr int64_t kCoopMFromTiles = 128;

// "conv2d_coop", "conv2d_coop_emu" or "" (op_utils.h: coopmat_f16_base).
std::string coop_conv_base(ComputeGraph& g) { return coopmat_f16_base(g, "conv2d_coop"); }

// A 1-D argument list ([s]) or 2-D ([sh, sw]) as (h, w); 1-D convs get h = `one_d_h`.
std::pair<int64_t, int64_t> hw(ComputeGraph& g, int id, int spatial, int64_t one_d_h, const char* what) {
  const IntList& v = g.get_int_list(id);
  if (v.size() == 1) return {spatial == 1 ? one_d_h : v[0], v[0]};
  if (static_cast<int>(v.size()) != spatial) {
    g.fail(std::string(what) + " " + sizes_str(v) + " does not match a " + std::to_string(spatial) + "-D convolution");
  }
  return {v[0], v[1]};
}

struct ConvShape {
  int64_t C, OC, icpg, ocpg, KH, KW;
};

// Weight [OC, C/groups, k...] or, transposed, [C, OC/groups, k...].
ConvShape conv_shape(ComputeGraph& g, const Tensor& x, const Tensor& w, int64_t groups, bool transposed,
                     int spatial) {
  if (x.dim() != spatial + 2 || w.dim() != x.dim()) g.fail("input and weight ranks do not match the convolution");
  ConvShape c;
  c.KH = spatial == 2 ? w.sizes[2] : 1;
  c.KW = w.sizes.back();
  c.C = x.sizes[1];
  c.OC = transposed ? w.sizes[1] * groups : w.sizes[0];
  c.icpg = c.C / groups;
  c.ocpg = c.OC / groups;
  if (c.C % groups != 0 || (transposed ? w.sizes[0] != c.C : (w.sizes[1] != c.icpg || c.OC % groups != 0))) {
    g.fail("weight " + sizes_str(w.sizes) + " does not fit input " + sizes_str(x.sizes) + " with groups=" +
           std::to_string(groups));
  }
  return c;
}

// `a`: the nine arguments, then the output.
void add_convolution_fused(ComputeGraph& g, const std::vector<int>& a, Epilogue epi) {
  const int in = a[0], weight = a[1], bias = g.is_null(a[2]) ? -1 : a[2], out = a[9];
  require_float_same(g, {in, weight, bias, out, epi.residual});
  const Tensor& x = g.tensor(in);
  const Tensor& w = g.tensor(weight);
  if (x.dim() != 3 && x.dim() != 4) {
    g.fail("input of rank " + std::to_string(x.dim()) + ": only 1-D and 2-D convolutions (rank 3 or 4) are supported");
  }
  if (w.dim() != x.dim()) g.fail("weight rank does not match the input rank");
  const int spatial = static_cast<int>(x.dim()) - 2;
  const auto [sh, sw] = hw(g, a[3], spatial, 1, "stride");
  const auto [ph, pw] = hw(g, a[4], spatial, 0, "padding");
  const auto [dh, dw] = hw(g, a[5], spatial, 1, "dilation");
  const bool transposed = g.get_bool(a[6]);
  const auto [oph, opw] = hw(g, a[7], spatial, 0, "output_padding");
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
  const bool depthwise = !transposed && ocpg < kTileOC;
  if (transposed && (epi.clamp || epi.residual >= 0)) {
    g.fail("a fused clamp or residual is not supported on a transposed convolution");
  }
  const bool gemm = !transposed && ocpg >= kGemmMinChannels;
  bool split_k = false, deep = false;
  // coopconv family: float16 convolutions the GEMM kernels would run go to the
  // cooperative-matrix kernel where there is one.
  std::string coop_shader;
  const CoopVariant* coop = nullptr;
  if (gemm && g.tensor(in).dtype == DType::Float16) {
    const std::string base = coop_conv_base(g);
    if (!base.empty()) {
      const Tensor& x = g.tensor(in);
      const int64_t H = spatial == 2 ? x.sizes[2] : 1, W = x.sizes.back();
      const int64_t npix = ((H + 2 * ph - dh * (planned.KH - 1) - 1) / sh + 1) *
                           ((W + 2 * pw - dw * (planned.KW - 1) - 1) / sw + 1);
      const auto tiles = [&](const CoopVariant& v) {
        return x.sizes[0] * groups * ((npix + v.tile - 1) / v.tile) * ((ocpg + v.tile - 1) / v.tile);
      };
      const uint32_t smem = g.context().info().max_shared_memory;
      coop = tiles(kCoopL) >= kCoopLFromTiles && smem >= kCoopL.shared_bytes ? &kCoopL
             : tiles(kCoopM) >= kCoopMFromTiles                              ? &kCoopM
                                                                             : &kCoopS;
      // VKDELEGATE_COOPCONV_TILE=l|m|s forces a variant (tests, benchmarks).
      if (const char* force = std::getenv("VKDELEGATE_COOPCONV_TILE")) {
        for (const CoopVariant* v : {&kCoopL, &kCoopM, &kCoopS}) {
          if (std::strcmp(force, v->name) == 0) coop = v;
        }
      }
      coop_shader = base + "_" + coop->name + "_f16";
      if (find_shader(coop_shader) == nullptr || smem < coop->shared_bytes) coop = nullptr;
    }
  }
  if (gemm && coop == nullptr) {
    const Tensor& x = g.tensor(in);
    const int64_t H = spatial == 2 ? x.sizes[2] : 1, W = x.sizes.back();
    const int64_t OH = (H + 2 * ph - dh * (planned.KH - 1) - 1) / sh + 1;
    const int64_t OW = (W + 2 * pw - dw * (planned.KW - 1) - 1) / sw + 1;
    const int64_t tiles = x.sizes[0] * groups * ((OH * OW + kGemmTile - 1) / kGemmTile) *
                          ((ocpg + kGemmTile - 1) / kGemmTile);
    split_k = tiles < kGemmSkBelowTiles;
    if (split_k) {
      const int64_t sk_tiles = x.sizes[0] * groups * ((OH * OW + kGemmSkTilePix - 1) / kGemmSkTilePix) *
                               ((ocpg + kGemmSkTileOC - 1) / kGemmSkTileOC);
      deep = sk_tiles < kGemmSk16BelowTiles;
    }
  }
  const std::string shader = coop != nullptr ? coop_shader
                             : transposed     ? "conv_transpose2d"
                             : gemm     ? (deep ? "conv2d_gemm_sk16" : split_k ? "conv2d_gemm_sk" : "conv2d_gemm")
                             : depthwise ? "conv2d_dw"
                                         : "conv2d";
  const int toc = depthwise ? 1 : kTileOC;
  const LocalSize local = coop != nullptr ? LocalSize{coop->invocations, 1, 1}
                          : !gemm        ? kLocal1D
                          : deep         ? kGemmSk16Local
                          : split_k      ? kGemmSkLocal
                                         : kGemmLocal;
  const int64_t tile_m = coop != nullptr ? coop->tile : deep ? kGemmSk16Tile : split_k ? kGemmSkTileOC : kGemmTile;
  const int64_t tile_n = coop != nullptr ? coop->tile : deep ? kGemmSk16Tile : split_k ? kGemmSkTilePix : kGemmTile;
  std::vector<int> tensors{out, in, weight, bias >= 0 ? bias : weight};
  if (!transposed) tensors.push_back(epi.residual >= 0 ? epi.residual : in);
  g.add_node(g.current_op(), coop != nullptr ? shader : variant(g, shader, in), local, tensors,
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
               node.set_params(p);
               if (gemm) {
                 const int64_t tiles_z = N * groups;
                 if (tiles_z > 65535) g.fail("batch * groups over 65535 is not supported");
                 node.groups = {static_cast<uint32_t>((OH * OW + tile_n - 1) / tile_n),
                                static_cast<uint32_t>((ocpg + tile_m - 1) / tile_m),
                                static_cast<uint32_t>(tiles_z)};
               } else {
                 node.set_groups_1d(total, kLocal1D[0]);
               }
             });
}

// convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups)
void add_convolution(ComputeGraph& g, const std::vector<int>& a) {
  if (a.size() != 10) g.fail("expected 9 arguments and 1 output");
  add_convolution_fused(g, a, Epilogue{});
}

// et_vk.vkd_conv2d_clamp: the convolution's arguments, min and max (inf: no
// bound), an optional residual added before the clamp; then the output.
void add_conv2d_clamp(ComputeGraph& g, const std::vector<int>& a) {
  if (a.size() != 13) g.fail("expected 12 arguments and 1 output");
  Epilogue epi;
  epi.clamp = true;
  epi.min = static_cast<float>(g.get_double(a[9]));
  epi.max = static_cast<float>(g.get_double(a[10]));
  if (!(epi.min <= epi.max)) g.fail("min must not exceed max");
  epi.residual = g.is_null(a[11]) ? -1 : a[11];
  std::vector<int> conv_args(a.begin(), a.begin() + 9);
  conv_args.push_back(a[12]);
  add_convolution_fused(g, conv_args, epi);
}

}  // namespace

VKD_REGISTER_OPS(register_conv_ops) {
  register_op("aten.convolution.default", add_convolution);
  register_op("et_vk.vkd_conv2d_clamp.default", add_conv2d_clamp);
}

}  // namespace vkd
