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
  int32_t has_bias, total, k_chunk, pad1;  // k_chunk: K per slice (conv2d_coop _sk)
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
// Fewer still (deep layers at batch 1): 16 x 16 tiles, 16 slices of K. On the
// H100 (2026-11-22, ResNet-18 fp32 per layer) sk16 won at 512ch 7x7 (64 sk
// tiles: 72 us vs 95) and sk at 256ch 14x14 (104 sk tiles: 51 us vs 56).
constexpr LocalSize kGemmSk16Local{4, 4, 16};
constexpr int64_t kGemmSk16Tile = 16;
constexpr int64_t kGemmSk16BelowTiles = 96;

// The GEMM variants: name, local size (TNT, TMT, SLICES), channel and pixel tile,
// shared memory (floats: max(SLICES * BK * (TM + TN), (SLICES - 1) * TM * TN)).
struct GemmVariant {
  const char* name;
  LocalSize local;
  int64_t tile_oc, tile_pix;
  uint32_t shared_floats;
};
constexpr GemmVariant kGemm{"conv2d_gemm", kGemmLocal, kGemmTile, kGemmTile, 16 * 128};
constexpr GemmVariant kGemmSk{"conv2d_gemm_sk", kGemmSkLocal, kGemmSkTileOC, kGemmSkTilePix, 7 * 32 * 16};
constexpr GemmVariant kGemmSk16{"conv2d_gemm_sk16", kGemmSk16Local, kGemmSk16Tile, kGemmSk16Tile, 16 * 8 * 32};

// VKDELEGATE_CONV_GEMM=gemm|sk|sk16 forces one variant on every
// convolution that takes the GEMM kernels (tests, sweeps); null if unset.
const GemmVariant* forced_gemm_variant(ComputeGraph& g) {
  const std::string& v = g.settings().conv_gemm;
  if (v.empty()) return nullptr;
  for (const GemmVariant* gv : {&kGemm, &kGemmSk, &kGemmSk16}) {
    const char* short_name = gv == &kGemm ? "gemm" : gv->name + std::strlen("conv2d_gemm_");
    if (v == short_name) return gv;
  }
  g.fail("VKDELEGATE_CONV_GEMM=" + v + " has no conv2d_gemm variant");
}

// coopconv family: the cooperative-matrix implicit GEMM (conv2d_coop.glslh) for
// float16 storage. Tiles (channels x pixels) and the local size of each variant:
// l 64 x 64 (4 warps, 2x2 accumulators each), m 32 x 32 (8 warps, 2 slices of
// K), s 16 x 16 (8 warps, 8 slices of K; only when forced, see the split below).
struct CoopVariant {
  const char* name;
  int64_t tile;  // BM = BN
  uint32_t invocations;
  uint32_t shared_bytes;
  int64_t kc;  // K per stage (KSUB * 16)
};
constexpr CoopVariant kCoopL{"l", 64, 128, 64 * 40 * 2 + 32 * 72 * 2 + 64 * 64 * 4, 32};
constexpr CoopVariant kCoopM{"m", 32, 256, 32 * 40 * 2 + 32 * 40 * 2 + 2 * 32 * 32 * 4, 32};
constexpr CoopVariant kCoopS{"s", 16, 256, 16 * 136 * 2 + 128 * 24 * 2 + 8 * 16 * 16 * 4, 128};
constexpr int64_t kCoopLFromTiles = 256;  // l once its tiles alone fill the GPU
constexpr int64_t kCoopMFromTiles = 128;
// Split-K over workgroups (the _sk variants, then conv2d_splitk_reduce.glsl) for
// layers with fewer than kCoopMFromTiles tiles of m (deep layers at batch 1): m
// tiles, K cut into slices until about kCoopSplitTargetGroups workgroups, each
// slice at least kCoopSplitMinStages stages, at most kCoopSplitMaxSplits slices.
// H100, 2026-11-23, GPU us, 3x3 fp16 batch 1 (tile and slices forced):
//   512c 7x7:   s 57.3 (the old choice), s2 37.9, s4 41.0; m1 123.7, m4 41.3, m8 27.2, m16 31.0; l16 38.0
//   256c 14x14: s 35.1 (old), s2 41.7; m1 63.3, m2 38.9, m4 26.4, m8 28.4, m16 27.0; l8 37.3
//   128c 28x28: s 37.2 (old), s2 37.7; m1 35.0, m2 26.6, m4 27.7, m8 25.3; l4 38.8
// (s split to about 1024 workgroups made ResNet-18 fp16 slower: 627 vs 591 us.)
// s stays for VKDELEGATE_COOPCONV_TILE=s.
constexpr int64_t kCoopSplitTargetGroups = 256;
constexpr int64_t kCoopSplitMinStages = 4;
constexpr int64_t kCoopSplitMaxSplits = 16;

// conv32 family: the float32 implicit GEMM on matmul_tiled's register blocking
// (conv2d_tiled.glsl), groups 1: TC channels x 128 pixels per workgroup of
// (16, TC / 8) invocations, pixels over the whole batch.
struct TiledConvVariant {
  const char* name;
  uint32_t x, y;  // local size; the tile is 8y channels x 8x pixels
};
// On the H100 (2026-11-22, GPU time, TF/s; the other kernels / c32 / c64, PyTorch
// cuDNN in brackets): 64->64 3x3 56x56 batch 32 (784 c64 workgroups): 12.2 / 22.2 /
// 24.7 [23.5-24.4]; 128->128 28x28 b32 (392): 9.2 / 16.5 / 24.5 [42.7]; the same at
// b8 (98): 5.8 / 13.0 / 13.8 [14.9]; 256->256 14x14 b32 (196): 8.4 / 19.6 / 17.5
// [25.6]; 45->83 stride 2 b64: 7.5 / 18.0 / 16.8 [18.7]; but 64->64 56x56 batch 1
// (25 workgroups): 4.75 / 3.2 / 3.3. c128 was slower than c64 everywhere (kept to
// compare), as were BK 16 and 64 x 64 tiles (dropped).
constexpr TiledConvVariant kTiledConvC32{"c32", 16, 4};
constexpr TiledConvVariant kTiledConvC64{"c64", 16, 8};
constexpr TiledConvVariant kTiledConvC128{"c128", 16, 16};
constexpr int64_t kTiledConvBK = 8;  // BK of conv2d_tiled.glsl: input channels per K step
// c64, or c32 where c64 computes over 15% more padded channels, or where only c32
// gives kTiledConvFullGroups workgroups (about two per SM of a large GPU).
constexpr int64_t kTiledConvFullGroups = 256;
// Taken with that many workgroups, or kTiledConvMinGroups where K is at least
// kTiledConvMinGroupsK (98 workgroups with K = 1152 ran 2.4x the split-K GEMM
// kernel; 25 with K = 576 ran 0.7x: left to it), with at least kTiledConvMinChannels
// output channels, a K step's worth of input channels (a step is BK input channels
// of one tap; fewer pad it with zeros) and K of at least kTiledConvMinK (a few steps
// do not pay for a tile's setup and epilogue; not measured, left to the GEMM kernels).
constexpr int64_t kTiledConvMinGroups = 96;
constexpr int64_t kTiledConvMinGroupsK = 512;
constexpr int64_t kTiledConvMinChannels = 32;
constexpr int64_t kTiledConvMinK = 64;

// "conv2d_coop", "conv2d_coop_emu" or "" (op_utils.h: coopmat_f16_base).
std::string coop_conv_base(ComputeGraph& g) { return coopmat_f16_base(g, "conv2d_coop"); }

// The number of K slices for a cooperative-matrix convolution of `tiles` output tiles
// (all batches and groups) over K = `K`, `outputs` output elements (planned sizes).
// VKDELEGATE_COOPCONV_SPLITK=n forces n (1: no split), within the limits below.
int64_t coop_conv_splits(ComputeGraph& g, const CoopVariant& v, int64_t tiles, int64_t K, int64_t outputs,
                         int64_t z_groups) {
  const int64_t stages = (K + v.kc - 1) / v.kc;
  int64_t splits = tiles >= kCoopMFromTiles ? 1
                                            : std::min({(kCoopSplitTargetGroups + tiles - 1) / tiles,
                                                        stages / kCoopSplitMinStages, kCoopSplitMaxSplits});
  if (const std::optional<int64_t> f = g.settings().coopconv_splitk) {
    splits = std::min(*f, stages);  // settings.def bounds it by kCoopSplitMaxSplits  // every slice at least one stage
  }
  // The float scratch of all slices must fit one binding, and workgroup z its limit.
  const int64_t range = static_cast<int64_t>(g.context().info().max_storage_buffer_range);
  const int64_t slice_bytes = 4 * std::max<int64_t>(outputs, 1);
  splits = std::min({splits, range / slice_bytes,
                     static_cast<int64_t>(g.context().info().max_workgroup_count[2]) / std::max<int64_t>(z_groups, 1)});
  return std::max<int64_t>(splits, 1);
}

// The conv32 variant for a float32 convolution of `icpg` -> `ocpg` channels, `ksize`
// taps, over `pixels` output pixels (the whole batch), or nullptr to keep the other
// kernels. VKDELEGATE_NO_TILED_CONV=1 turns it off; VKDELEGATE_TILED_CONV=1 takes it
// for every convolution it can run (groups 1, not transposed), =c32|c64|c128 with
// that variant.
const TiledConvVariant* tiled_conv_variant(ComputeGraph& g, DType dtype, bool transposed, int64_t groups,
                                           int64_t icpg, int64_t ocpg, int64_t ksize, int64_t pixels) {
  if (dtype != DType::Float32 || transposed || groups != 1 || g.settings().no_tiled_conv) return nullptr;
  const auto pixel_tiles = [&](const TiledConvVariant& v) { return (pixels + 8 * v.x - 1) / (8 * v.x); };
  const auto channel_tiles = [&](const TiledConvVariant& v) { return (ocpg + 8 * v.y - 1) / (8 * v.y); };
  const auto workgroups = [&](const TiledConvVariant& v) { return pixel_tiles(v) * channel_tiles(v); };
  const TiledConvVariant* v = &kTiledConvC64;
  if (channel_tiles(kTiledConvC64) * 64 * 100 > channel_tiles(kTiledConvC32) * 32 * 115 ||
      (workgroups(kTiledConvC64) < kTiledConvFullGroups && workgroups(kTiledConvC32) >= kTiledConvFullGroups)) {
    v = &kTiledConvC32;
  }
  const std::string& force = g.settings().tiled_conv;
  const bool forced = !force.empty() && force != "0";
  if (forced && force != "1") {
    v = nullptr;
    for (const TiledConvVariant* c : {&kTiledConvC32, &kTiledConvC64, &kTiledConvC128}) {
      if (force == c->name) v = c;
    }
    if (v == nullptr) g.fail("VKDELEGATE_TILED_CONV=" + force + " has no conv2d_tiled variant");
  }
  if (pixel_tiles(*v) > 65535 || find_shader(std::string("conv2d_tiled_") + v->name + "_f32") == nullptr) {
    return nullptr;
  }
  if (forced) return v;
  const int64_t K = icpg * ksize;
  const int64_t enough_groups = K >= kTiledConvMinGroupsK ? kTiledConvMinGroups : kTiledConvFullGroups;
  const bool fits = ocpg >= kTiledConvMinChannels && icpg >= kTiledConvBK && K >= kTiledConvMinK &&
                    workgroups(*v) >= enough_groups;
  return fits ? v : nullptr;
}

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
  const TiledConvVariant* tiled = nullptr;
  {
    const Tensor& x = g.tensor(in);
    const int64_t H = spatial == 2 ? x.sizes[2] : 1, W = x.sizes.back();
    const int64_t OH = (H + 2 * ph - dh * (planned.KH - 1) - 1) / sh + 1;
    const int64_t OW = (W + 2 * pw - dw * (planned.KW - 1) - 1) / sw + 1;
    if (OH > 0 && OW > 0) {
      tiled = tiled_conv_variant(g, x.dtype, transposed, groups, planned.icpg, ocpg, planned.KH * planned.KW,
                                 x.sizes[0] * OH * OW);
    }
  }
  const bool gemm = !transposed && tiled == nullptr && ocpg >= kGemmMinChannels;
  const GemmVariant* gv = nullptr;  // the conv2d_gemm variant, for GEMM convolutions off coop
  // coopconv family: float16 convolutions the GEMM kernels would run go to the
  // cooperative-matrix kernel where there is one.
  std::string coop_shader;
  const CoopVariant* coop = nullptr;
  int64_t coop_splits = 1;  // K slices over workgroups (conv2d_coop _sk + conv2d_splitk_reduce)
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
      // l where its tiles fill the GPU, else m (split over K where its tiles are few).
      coop = tiles(kCoopL) >= kCoopLFromTiles && smem >= kCoopL.shared_bytes ? &kCoopL : &kCoopM;
      // VKDELEGATE_COOPCONV_TILE=l|m|s forces a variant (tests, benchmarks).
      if (const std::string& force = g.settings().coopconv_tile; !force.empty()) {
        for (const CoopVariant* v : {&kCoopL, &kCoopM, &kCoopS}) {
          if (force == v->name) coop = v;
        }
      }
      coop_splits = coop_conv_splits(g, *coop, tiles(*coop), planned.icpg * planned.KH * planned.KW,
                                     x.sizes[0] * planned.OC * npix, x.sizes[0] * groups);
      coop_shader = base + "_" + coop->name + (coop_splits > 1 ? "_sk" : "") + "_f16";
      if (find_shader(coop_shader) == nullptr || smem < coop->shared_bytes) coop = nullptr;
    }
  }
  if (gemm && coop == nullptr) {
    const Tensor& x = g.tensor(in);
    const int64_t H = spatial == 2 ? x.sizes[2] : 1, W = x.sizes.back();
    const int64_t OH = (H + 2 * ph - dh * (planned.KH - 1) - 1) / sh + 1;
    const int64_t OW = (W + 2 * pw - dw * (planned.KW - 1) - 1) / sw + 1;
    const auto tiles = [&](const GemmVariant& v) {
      return x.sizes[0] * groups * ((OH * OW + v.tile_pix - 1) / v.tile_pix) * ((ocpg + v.tile_oc - 1) / v.tile_oc);
    };
    gv = tiles(kGemm) >= kGemmSkBelowTiles ? &kGemm : tiles(kGemmSk) >= kGemmSk16BelowTiles ? &kGemmSk : &kGemmSk16;
    if (const GemmVariant* forced = forced_gemm_variant(g)) gv = forced;
    const DeviceInfo& info = g.context().info();
    if (gv->shared_floats * 4 > info.max_shared_memory ||
        gv->local[0] * gv->local[1] * gv->local[2] > info.max_workgroup_invocations) {
      gv = &kGemmSk16;  // 16 KB and 256 invocations: within every device's limits we run on
    }
  }
  const std::string shader = tiled != nullptr  ? std::string("conv2d_tiled_") + tiled->name + "_f32"
                             : coop != nullptr ? coop_shader
                             : transposed     ? "conv_transpose2d"
                             : gemm           ? gv->name
                             : depthwise      ? "conv2d_dw"
                                              : "conv2d";
  const int toc = depthwise ? 1 : kTileOC;
  const LocalSize local = tiled != nullptr ? LocalSize{tiled->x, tiled->y, 1}
                          : coop != nullptr ? LocalSize{coop->invocations, 1, 1}
                          : gemm            ? gv->local
                                            : kLocal1D;
  const int64_t tile_m = coop != nullptr ? coop->tile : gemm ? gv->tile_oc : 0;
  const int64_t tile_n = coop != nullptr ? coop->tile : gemm ? gv->tile_pix : 0;
  const int64_t splits = coop != nullptr ? coop_splits : 1;
  // With a split, the convolution writes float slices into a scratch tensor.
  const int part = splits > 1 ? g.add_scratch_tensor(DType::Float32, {splits * g.tensor(out).numel()}) : -1;
  const int64_t kc = coop != nullptr ? coop->kc : 0;
  std::vector<int> tensors{splits > 1 ? part : out, in, weight, bias >= 0 ? bias : weight};
  if (!transposed) tensors.push_back(epi.residual >= 0 ? epi.residual : in);
  g.add_node(g.current_op(), coop != nullptr || tiled != nullptr ? shader : variant(g, shader, in), local, tensors,
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
               if (tiled != nullptr) {
                 const int64_t tp = 8 * tiled->x, tc = 8 * tiled->y;
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
    struct ReduceParams {
      int32_t total, OC, npix, splits;
      int32_t has_bias, has_residual, has_clamp, pad0;
      float out_min, out_max, pad1, pad2;
    };
    g.add_node(g.current_op(), std::string("conv2d_splitk_reduce_") + storage_suffix(g.tensor(out).dtype), kLocal1D,
               {out, part, bias >= 0 ? bias : part, epi.residual >= 0 ? epi.residual : part},
               [=](ComputeGraph& g, Node& node) {
                 const Tensor& o = g.tensor(out);  // sized by the convolution's update, before this one
                 ReduceParams r{};
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
