// The kernel choice of the convolutions. The measurements behind the constants:
// benchmarks/results/kernel_choice_h100.md.
#include "conv_choice.h"

#include <algorithm>
#include <iterator>

#include "conv_variants.h"  // generated from glsl/conv_variants.py
#include "matmul_choice.h"  // coopmat_f16_base
#include "op_utils.h"       // kLocal1D, variant_named

namespace vkd {

namespace {


// The implicit-GEMM kernel (conv2d_gemm.glsl) and its split-K variants, whose SLICES
// groups of invocations (local z) walk interleaved K steps of one smaller tile:
// the tiles of glsl/conv_variants.py (which says what they are), through the
// generated header. gemm (64 x 64) is used when a group has enough output channels to
// fill most of its tile; sk (32 x 16, 8 slices) and sk16 (16 x 16, 16 slices) for
// convolutions whose 64 x 64 tiles would leave a large GPU mostly idle (batch 1, small
// images, deep layers).
struct GemmVariant {
  const char* name;    // as CONV_GEMM names it
  const char* shader;  // without the dtype suffix
  uint32_t tmt, tnt, slices, bk;
  LocalSize local() const { return {tnt, tmt, slices}; }
  int64_t tile_oc() const { return 4 * tmt; }
  int64_t tile_pix() const { return 4 * tnt; }
  // max(SLICES * BK * (TM + TN), (SLICES - 1) * TM * TN), as conv2d_gemm.glsl sizes smem
  uint32_t shared_floats() const {
    return std::max(slices * bk * 4 * (tmt + tnt), (slices - 1) * 16 * tmt * tnt);
  }
};
constexpr GemmVariant kGemmVariants[] = {VKD_CONV_GEMM_VARIANT_ROWS};
constexpr const GemmVariant& kGemm = variant_named(kGemmVariants, "gemm");
constexpr const GemmVariant& kGemmSk = variant_named(kGemmVariants, "sk");
constexpr const GemmVariant& kGemmSk16 = variant_named(kGemmVariants, "sk16");
constexpr int64_t kGemmMinChannels = 16;
constexpr int64_t kGemmSkBelowTiles = 256;
constexpr int64_t kGemmSk16BelowTiles = 96;

// The setting CONV_GEMM forces one variant on every convolution that takes the GEMM
// kernels (tests, sweeps); null if unset.
const GemmVariant* forced_gemm_variant(const Settings& s) {
  const std::string& v = s.conv_gemm;
  if (v.empty()) return nullptr;
  for (const GemmVariant& gv : kGemmVariants) {
    if (v == gv.name) return &gv;
  }
  throw GraphError("VKDELEGATE_CONV_GEMM=" + v + " has no conv2d_gemm variant");
}

// The cooperative-matrix implicit GEMM (conv2d_coop.glslh) for float16 storage: the
// tiles of glsl/conv_variants.py. l 64 x 64 (4 warps, 2x2 accumulators each), m 32 x 32
// (8 warps, 2 slices of K), s 16 x 16 (8 warps, 8 slices of K; only when forced, see
// the split below).
struct CoopVariant {
  const char* name;
  uint32_t wm, wn, s, fm, fn, ksub;
  int64_t tile() const { return wm * fm * 16; }  // BM = BN
  uint32_t invocations() const { return wm * wn * s * 32; }
  int64_t kc() const { return ksub * 16; }  // K per stage
  // sh_a [BM][KC + 8] and sh_b [KC][BN + 8] halves, sh_c [S][BM][BN] floats
  uint32_t shared_bytes() const {
    const uint32_t bm = wm * fm * 16, bn = wn * fn * 16, kc = ksub * 16;
    return bm * (kc + 8) * 2 + kc * (bn + 8) * 2 + s * bm * bn * 4;
  }
};
constexpr CoopVariant kCoopVariants[] = {VKD_COOPCONV_VARIANT_ROWS};
constexpr const CoopVariant& kCoopL = variant_named(kCoopVariants, "l");
constexpr const CoopVariant& kCoopM = variant_named(kCoopVariants, "m");
constexpr bool coop_tiles_square(size_t i = 0) {
  return i == std::size(kCoopVariants) ||
         (kCoopVariants[i].wm * kCoopVariants[i].fm == kCoopVariants[i].wn * kCoopVariants[i].fn &&
          coop_tiles_square(i + 1));
}
static_assert(coop_tiles_square(), "conv2d_coop tiles are square (BM = BN)");
constexpr int64_t kCoopLFromTiles = 256;  // l once its tiles alone fill the GPU
constexpr int64_t kCoopMFromTiles = 128;
// Split-K over workgroups (the _sk variants, then conv2d_splitk_reduce.glsl) for
// layers with fewer than kCoopMFromTiles tiles of m (deep layers at batch 1): m
// tiles, K cut into slices until about kCoopSplitTargetGroups workgroups, each
// slice at least kCoopSplitMinStages stages, at most kCoopSplitMaxSplits slices
// (settings.def bounds COOPCONV_SPLITK by the same). s stays for COOPCONV_TILE=s.
constexpr int64_t kCoopSplitTargetGroups = 256;
constexpr int64_t kCoopSplitMinStages = 4;
constexpr int64_t kCoopSplitMaxSplits = 16;

// The float32 implicit GEMM on matmul_tiled's register blocking
// (conv2d_tiled.glsl), groups 1: 8y channels x 8x pixels per workgroup of (x, y)
// invocations, pixels over the whole batch; the tiles of glsl/conv_variants.py.
struct TiledConvVariant {
  const char* name;
  uint32_t x, y;  // local size
};
// c128 measured slower than c64 everywhere (kept to compare).
constexpr TiledConvVariant kTiledConvVariants[] = {VKD_TILED_CONV_VARIANT_ROWS};
constexpr const TiledConvVariant& kTiledConvC32 = variant_named(kTiledConvVariants, "c32");
constexpr const TiledConvVariant& kTiledConvC64 = variant_named(kTiledConvVariants, "c64");
constexpr int64_t kTiledConvBK = VKD_TILED_CONV_BK;  // input channels per K step
// c64, or c32 where c64 computes over 15% more padded channels, or where only c32
// gives kTiledConvFullGroups workgroups (about two per SM of a large GPU).
constexpr int64_t kTiledConvFullGroups = 256;
// Taken with that many workgroups, or kTiledConvMinGroups where K is at least
// kTiledConvMinGroupsK, with at least kTiledConvMinChannels
// output channels, a K step's worth of input channels (a step is BK input channels
// of one tap; fewer pad it with zeros) and K of at least kTiledConvMinK (a few steps
// do not pay for a tile's setup and epilogue; not measured, left to the GEMM kernels).
constexpr int64_t kTiledConvMinGroups = 96;
constexpr int64_t kTiledConvMinGroupsK = 512;
constexpr int64_t kTiledConvMinChannels = 32;
constexpr int64_t kTiledConvMinK = 64;

// The number of K slices for a cooperative-matrix convolution of `tiles` output tiles
// (all batches and groups) over K = `K`, `outputs` output elements (planned sizes).
// The setting COOPCONV_SPLITK forces a count (1: no split), within the limits below.
int64_t coop_conv_splits(const DeviceInfo& device, const Settings& s, const CoopVariant& v, int64_t tiles, int64_t K, int64_t outputs,
                         int64_t z_groups) {
  const int64_t stages = (K + v.kc() - 1) / v.kc();
  tiles = std::max<int64_t>(tiles, 1);  // an input too small for the kernel fails at its update
  int64_t splits = tiles >= kCoopMFromTiles ? 1
                                            : std::min({(kCoopSplitTargetGroups + tiles - 1) / tiles,
                                                        stages / kCoopSplitMinStages, kCoopSplitMaxSplits});
  if (const std::optional<int64_t> f = s.coopconv_splitk) {
    splits = std::min(*f, stages);  // settings.def bounds it by kCoopSplitMaxSplits  // every slice at least one stage
  }
  // The float scratch of all slices must fit one binding, and workgroup z its limit.
  const int64_t range = static_cast<int64_t>(device.max_storage_buffer_range);
  const int64_t slice_bytes = 4 * std::max<int64_t>(outputs, 1);
  splits = std::min({splits, range / slice_bytes,
                     static_cast<int64_t>(device.max_workgroup_count[2]) / std::max<int64_t>(z_groups, 1)});
  return std::max<int64_t>(splits, 1);
}

// The conv32 variant for a float32 convolution of `icpg` -> `ocpg` channels, `ksize`
// taps, over `pixels` output pixels (the whole batch), or nullptr to keep the other
// kernels. The setting NO_TILED_CONV turns it off; TILED_CONV=1 takes it for every
// convolution it can run (groups 1, not transposed), =c32|c64|c128 with that variant.
const TiledConvVariant* tiled_conv_variant(const Settings& s, DType dtype, bool transposed, int64_t groups,
                                           int64_t icpg, int64_t ocpg, int64_t ksize, int64_t pixels) {
  if (dtype != DType::Float32 || transposed || groups != 1 || s.no_tiled_conv) return nullptr;
  const auto pixel_tiles = [&](const TiledConvVariant& v) { return (pixels + 8 * v.x - 1) / (8 * v.x); };
  const auto channel_tiles = [&](const TiledConvVariant& v) { return (ocpg + 8 * v.y - 1) / (8 * v.y); };
  const auto workgroups = [&](const TiledConvVariant& v) { return pixel_tiles(v) * channel_tiles(v); };
  const TiledConvVariant* v = &kTiledConvC64;
  if (channel_tiles(kTiledConvC64) * 64 * 100 > channel_tiles(kTiledConvC32) * 32 * 115 ||
      (workgroups(kTiledConvC64) < kTiledConvFullGroups && workgroups(kTiledConvC32) >= kTiledConvFullGroups)) {
    v = &kTiledConvC32;
  }
  const std::string& force = s.tiled_conv;
  const bool forced = !force.empty() && force != "0";
  if (forced && force != "1") {
    v = nullptr;
    for (const TiledConvVariant& c : kTiledConvVariants) {
      if (force == c.name) v = &c;
    }
    if (v == nullptr) throw GraphError("VKDELEGATE_TILED_CONV=" + force + " has no conv2d_tiled variant");
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

}  // namespace

ConvChoice choose_conv(const ConvProblem& p, const DeviceInfo& device, const Settings& s) {
  const bool depthwise = !p.transposed && p.ocpg < kConvDirectTileOC;
  const TiledConvVariant* tiled =
      p.out_pixels > 0 ? tiled_conv_variant(s, p.dtype, p.transposed, p.groups, p.icpg, p.ocpg, p.kernel_taps,
                                            p.batch * p.out_pixels)
                       : nullptr;
  ConvChoice c;
  if (tiled != nullptr && device.workgroup_fits(tiled->x, tiled->y, 1)) {
    c.kernel = ConvKernel::Tiled;
    c.shader = std::string("conv2d_tiled_") + tiled->name + "_f32";
    c.local = {tiled->x, tiled->y, 1};
    return c;
  }
  const bool gemm = !p.transposed && p.ocpg >= kGemmMinChannels;
  // Float16 convolutions the GEMM kernels would run go to the cooperative-matrix
  // kernel where there is one.
  if (gemm && p.dtype == DType::Float16) {
    const std::string base = coopmat_f16_base(device, s, "conv2d_coop");
    if (!base.empty()) {
      const int64_t npix = p.out_pixels;
      const auto tiles = [&](const CoopVariant& v) {
        return p.batch * p.groups * ((npix + v.tile() - 1) / v.tile()) * ((p.ocpg + v.tile() - 1) / v.tile());
      };
      const uint32_t smem = device.max_shared_memory;
      // l where its tiles fill the GPU, else m (split over K where its tiles are few).
      const CoopVariant* coop = tiles(kCoopL) >= kCoopLFromTiles && smem >= kCoopL.shared_bytes() ? &kCoopL : &kCoopM;
      if (!s.coopconv_tile.empty()) {
        for (const CoopVariant& v : kCoopVariants) {
          if (s.coopconv_tile == v.name) coop = &v;
        }
      }
      const int64_t splits = coop_conv_splits(device, s, *coop, tiles(*coop), p.icpg * p.kernel_taps,
                                              p.batch * p.groups * p.ocpg * npix, p.batch * p.groups);
      const std::string shader = base + "_" + coop->name + (splits > 1 ? "_sk" : "") + "_f16";
      if (find_shader(shader) != nullptr && smem >= coop->shared_bytes() &&
          device.workgroup_fits(coop->invocations(), 1, 1)) {
        c.kernel = ConvKernel::Coop;
        c.shader = shader;
        c.local = {coop->invocations(), 1, 1};
        c.tile_m = c.tile_n = coop->tile();
        c.splits = splits;
        c.kc = coop->kc();
        return c;
      }
    }
  }
  if (gemm) {
    const auto tiles = [&](const GemmVariant& v) {
      return p.batch * p.groups * ((p.out_pixels + v.tile_pix() - 1) / v.tile_pix()) *
             ((p.ocpg + v.tile_oc() - 1) / v.tile_oc());
    };
    const GemmVariant* gv =
        tiles(kGemm) >= kGemmSkBelowTiles ? &kGemm : tiles(kGemmSk) >= kGemmSk16BelowTiles ? &kGemmSk : &kGemmSk16;
    if (const GemmVariant* forced = forced_gemm_variant(s)) gv = forced;
    const auto fits = [&](const GemmVariant& v) {
      const LocalSize l = v.local();
      return v.shared_floats() * 4 <= device.max_shared_memory && device.workgroup_fits(l[0], l[1], l[2]);
    };
    // A variant over the device's limits: the first of the others that fits (sk16 has
    // the fewest invocations, gemm the least shared memory), else the direct kernel (at
    // Vulkan's minimum of 128 invocations none fits).
    for (const GemmVariant* other : {&kGemmSk16, &kGemm, &kGemmSk}) {
      if (!fits(*gv)) gv = other;
    }
    if (fits(*gv)) {
      c.kernel = ConvKernel::Gemm;
      c.shader = gv->shader;
      c.local = gv->local();
      c.tile_m = gv->tile_oc(), c.tile_n = gv->tile_pix();
      return c;
    }
  }
  c.kernel = p.transposed ? ConvKernel::Transposed : depthwise ? ConvKernel::Depthwise : ConvKernel::Direct;
  c.shader = p.transposed ? "conv_transpose2d" : depthwise ? "conv2d_dw" : "conv2d";
  c.local = kLocal1D;
  return c;
}

}  // namespace vkd
