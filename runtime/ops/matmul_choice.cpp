// The kernel choice of the matrix products. The measurements behind the
// constants: benchmarks/results/kernel_choice_h100.md.
#include "matmul_choice.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <tuple>
#include <utility>

#include "op_utils.h"  // variant_named

namespace vkd {

namespace {

// matmul.glsl's tile configurations, largest first: local size and tile (4 * local y rows,
// 4 * local x columns; each invocation computes 4 x 4 outputs). The first that still gives
// enough workgroups to fill a large GPU; the last serves problems too small for any other.
struct TileConfig {
  LocalSize local;
  uint32_t tile_m, tile_n;
};
constexpr TileConfig kTileConfigs[] = {
    {{16, 16, 1}, 64, 64},
    {{8, 8, 1}, 32, 32},
};
constexpr int64_t kEnoughWorkgroups = 128;
// gemv.glsl: 32 invocations split K for each of 8 outputs per workgroup (the
// x width must be a power of two for its reduction).
constexpr LocalSize kGemvLocal{32, 8, 1};
// A product whose tiles give fewer than kEnoughWorkgroups takes gemv.glsl up to the
// setting GEMV_MAX_ROWS rows, as long as the rows re-read at most kGemvMaxRereadBytes of B.
constexpr int64_t kGemvMaxRereadBytes = int64_t{64} << 20;
// On GPUs, float32 products of at most this many multiply-adds (M N K batch) take gemv.glsl on
// the same terms whatever B's layout (an mm's B, contiguous in n, too): matmul.glsl would leave a
// handful of workgroups walking all of K one step at a time (mm 64^3: 4 workgroups of 32 x 32
// outputs, 64 dependent steps), where gemv.glsl's 32 invocations per output take 2 steps each; B
// stays in cache for every row that re-reads it. Not on a CPU device: lavapipe runs gemv.glsl's
// 512 workgroups of barriers 15x slower than matmul.glsl's 4.
constexpr int64_t kGemvTinyProduct = int64_t{1} << 20;

// matmul_tiled.glsl, the float32 kernel for large products. Each invocation computes
// 8 x 8 outputs; a workgroup of (x, y) invocations an (8 y) x (8 x) tile, stepping K by
// bk through two shared buffers. Valid configurations keep an invocation's vec4 loads
// per step at 1 or 2 per operand: bk 8 with x, y in {8, 16}, bk 16 with (16, 16) only
// (settings.def: TILED_MM's values).
struct TiledConfig {
  uint32_t x, y, bk;
};
// The default, 128 x 128 tiles, bk 8, for products of at least kTiledMinGroups workgroups.
constexpr TiledConfig kTiledDefault{16, 16, 8};
constexpr int64_t kTiledMinGroups = 256;

uint32_t tiled_shared_bytes(const TiledConfig& c) {
  return 2 * c.bk * ((8 * c.y) / 4 + 1 + (8 * c.x) / 4 + 1) * 16;
}

// Split-K for matmul_tiled.glsl. A product of too few tiles to fill the GPU (1024^3: 64
// tiles of 128 x 128 on 132 SMs) splits K into slices, a workgroup each, whose partial
// sums go to a scratch tensor [splits, batch, M, N]; matmul_splitk_reduce.glsl adds them
// and applies the epilogue. The default configuration picks the slice count by
// splitk_cost_us for products of fewer than kTiledMinGroups tiles, both sides at least
// kSplitKMinSide and at least kSplitKMinWork multiply-adds (below, small_split_config). The
// setting MM_SPLITK forces a count on the tiled kernel (any size and configuration).
constexpr int64_t kSplitKMaxSplits = 64;  // settings.def bounds MM_SPLITK by the same
constexpr int64_t kSplitKMinChunk = 32;   // K per slice: 4 steps of BK 8
constexpr int64_t kSplitKMinSide = 64;
constexpr int64_t kSplitKMinWork = int64_t{1} << 26;

// The cost model of the default 128 x 128 tiles, fitted to the H100's 132 SMs.
constexpr int64_t kSplitKSms = 132;
double splitk_cost_us(int64_t tiles, int64_t K, int64_t splits, int64_t outputs) {
  const int64_t chunk = ((K + splits - 1) / splits + 7) / 8 * 8;
  const int64_t per_sm = (tiles * splits + kSplitKSms - 1) / kSplitKSms;
  const double per_k = per_sm == 1 ? 0.155 : 0.142 * static_cast<double>(per_sm);
  const double mb = 1e-6 * static_cast<double>((splits + 1) * outputs * 4);
  const double reduce = splits == 1 ? 0.0 : 3.8 + 0.23 * mb + 0.25 * std::max(0.0, mb - 40.0);
  return 8.0 + static_cast<double>(chunk) * per_k + reduce;
}

// `splits` within what one dispatch can hold: the scratch of all slices in one binding, and
// workgroup z (splits * batch) within its limit.
int64_t fitting_splits(const MatmulProblem& p, const DeviceInfo& device, int64_t splits) {
  const int64_t slice_bytes = 4 * p.batch * p.M * p.N;
  const int64_t range = static_cast<int64_t>(std::min<VkDeviceSize>(device.max_storage_buffer_range,
                                                                    VkDeviceSize{1} << 30));
  splits = std::min<int64_t>({splits, slice_bytes > 0 ? range / slice_bytes : splits,
                              65535 / std::max<int64_t>(p.batch, 1)});
  return std::max<int64_t>(splits, 1);
}

// 1 (no split), or the slice count for a product of `tiles` tiles (batch included);
// pick: whether the cost model may choose (the default configuration); forced:
// whether the setting MM_SPLITK asked for a split.
int64_t splitk_count(const MatmulProblem& p, const DeviceInfo& device, const Settings& s, int64_t tiles, bool pick,
                     bool& forced) {
  int64_t splits = 1;
  forced = false;
  const int64_t outputs = p.batch * p.M * p.N;
  if (s.mm_splitk) {
    splits = *s.mm_splitk;
    forced = splits > 1;
  } else if (pick && tiles > 0 && tiles < kTiledMinGroups && p.M >= kSplitKMinSide && p.N >= kSplitKMinSide &&
             outputs * p.K >= kSplitKMinWork) {
    // The fewest slices within 3% of the cheapest: fewer dispatched workgroups
    // and scratch bytes where the model cannot tell them apart.
    const int64_t most = std::max<int64_t>(1, std::min(kSplitKMaxSplits, p.K / kSplitKMinChunk));
    double best = splitk_cost_us(tiles, p.K, 1, outputs);
    for (int64_t n = 2; n <= most; ++n) best = std::min(best, splitk_cost_us(tiles, p.K, n, outputs));
    while (splitk_cost_us(tiles, p.K, splits, outputs) > 1.03 * best) ++splits;
  }
  return fitting_splits(p, device, splits);
}

// Small float32 products on a GPU (under kSplitKMinWork multiply-adds, so no split above; both
// sides at least kSplitKMinSide, K at least kSmallSplitMinK): matmul.glsl would leave a few dozen
// workgroups each walking all of K. 64 x 64 tiles instead, K split until the slices give about two
// workgroups an SM (ViT-tiny's 197-row linears, K 192 and 768, on the H200: 51 -> 17 us for N 192,
// 24 -> 16 for N 576; benchmarks/results/vit_fp32_h200_2026-11-28.md). Not on a CPU device, and
// not where the setting MM_SPLITK says otherwise.
constexpr TiledConfig kTiledSmall{8, 8, 8};
constexpr int64_t kSmallSplitMinK = 192;
constexpr int64_t kSmallSplitGroups = 2 * kSplitKSms;
bool small_split_config(const MatmulProblem& p, const DeviceInfo& device, const Settings& s, TiledConfig& config,
                        int64_t& splits) {
  if (device.type == "cpu" || s.mm_splitk || p.M < kSplitKMinSide || p.N < kSplitKMinSide || p.K < kSmallSplitMinK ||
      !device.workgroup_fits(kTiledSmall.x, kTiledSmall.y, 1) || tiled_shared_bytes(kTiledSmall) > device.max_shared_memory) {
    return false;
  }
  config = kTiledSmall;
  const int64_t tiles = ((p.N + 8 * config.x - 1) / (8 * config.x)) * ((p.M + 8 * config.y - 1) / (8 * config.y)) * p.batch;
  // Slices of whole K steps, none empty (the kernel rounds a slice up to whole steps).
  const int64_t steps = (p.K + config.bk - 1) / config.bk;
  const int64_t wanted = std::min({kSplitKMaxSplits, steps, (kSmallSplitGroups + tiles - 1) / tiles});
  const int64_t per = (steps + wanted - 1) / wanted;
  splits = fitting_splits(p, device, (steps + per - 1) / per);
  return true;
}

// The tiled configuration for this product (and its slice count), or none to keep
// matmul.glsl: float32, A contiguous in k, B contiguous in n or k, enough workgroups
// (from the planned sizes; the kernel is correct at any size, dynamic ones included).
// The settings NO_TILED_MM and TILED_MM turn it off or force a configuration.
bool tiled_config(const MatmulProblem& p, const DeviceInfo& device, const Settings& s, TiledConfig& config,
                  int64_t& splits) {
  splits = 1;
  if (p.dtype != DType::Float32 || s.no_tiled_mm) return false;
  if (p.a_sk != 1 || (p.b_sn != 1 && p.b_sk != 1)) return false;
  if (find_shader("matmul_tiled_nb_f32") == nullptr) return false;
  bool forced_split = false;
  if (!s.tiled_mm.empty()) {
    unsigned x = 0, y = 0, bk = 0;
    std::sscanf(s.tiled_mm.c_str(), "%u,%u,%u", &x, &y, &bk);  // one of settings.def's values
    config = {x, y, bk};
    if (tiled_shared_bytes(config) > device.max_shared_memory || !device.workgroup_fits(x, y, 1)) return false;
    const int64_t tiles = ((p.N + 8 * x - 1) / (8 * x)) * ((p.M + 8 * y - 1) / (8 * y)) * p.batch;
    splits = splitk_count(p, device, s, tiles, false, forced_split);
    return true;
  }
  config = kTiledDefault;
  if (!device.workgroup_fits(config.x, config.y, 1)) return false;
  const int64_t tm = 8 * config.y, tn = 8 * config.x;
  const int64_t tiles = ((p.N + tn - 1) / tn) * ((p.M + tm - 1) / tm) * p.batch;
  splits = splitk_count(p, device, s, tiles, true, forced_split);
  if (tiles < kTiledMinGroups && splits == 1 && !forced_split) return small_split_config(p, device, s, config, splits);
  return tiled_shared_bytes(config) <= device.max_shared_memory;
}

bool few_rows_gemv(const MatmulProblem& p, const Settings& s, const TileConfig& config) {
  // A forced tiled configuration, split count or cooperative-matrix tile asks for that kernel.
  if (!s.tiled_mm.empty() || s.mm_splitk || !s.coopmm_tile.empty()) return false;
  const int64_t groups = ((p.N + config.tile_n - 1) / config.tile_n) *
                         ((p.M + config.tile_m - 1) / config.tile_m) * p.batch;
  return p.M <= s.gemv_max_rows && groups < kEnoughWorkgroups &&
         p.M * p.N * p.K * p.batch * 4 <= kGemvMaxRereadBytes;  // as float32: a bound
}

// The default (the H100 sweeps, benchmarks/results/coopmm_splitk_h100_2026-11-25.md):
// w2 (128 x 256) once its tiles alone give kCoopMmW2FromGroups workgroups; l64
// (128 x 128) from kCoopMmL64FromGroups of its tiles (l1 where l64's shared memory
// does not fit); else, for products of too few tiles to fill the GPU, rs2 (32 x 64
// tiles whose 4 warp groups split each K step, two shared buffers) while its tiles stay
// under kCoopMmRBelowGroups (ViT-tiny's 197-row linears: benchmarks/results/
// small_linears_h200_2026-11-28.md for r, its one-buffer twin; ln_linear_h200_2026-11-28.md
// for rs2: ViT-tiny fp16 0.76 -> 0.73 ms), then mk4b (64 x 64, the same K split), mk4 where
// it does not fit (lavapipe's 32 KiB), then l1, m. w and the c2_ variants only forced.
constexpr const CoopMmVariant& kCoopMmL1 = variant_named(kCoopMmVariants, "l1");
constexpr const CoopMmVariant& kCoopMmL64 = variant_named(kCoopMmVariants, "l64");
constexpr const CoopMmVariant& kCoopMmM = variant_named(kCoopMmVariants, "m");
constexpr const CoopMmVariant& kCoopMmW2 = variant_named(kCoopMmVariants, "w2");
constexpr const CoopMmVariant& kCoopMmMk4b = variant_named(kCoopMmVariants, "mk4b");
constexpr const CoopMmVariant& kCoopMmMk4 = variant_named(kCoopMmVariants, "mk4");
constexpr const CoopMmVariant& kCoopMmR = variant_named(kCoopMmVariants, "rs2");
constexpr int64_t kCoopMmW2FromGroups = 96;
constexpr int64_t kCoopMmL64FromGroups = 64;
constexpr int64_t kCoopMmRBelowGroups = 128;

int64_t coop_tiles(const MatmulProblem& p, const CoopMmVariant& v) {
  return ((p.N + v.tile_n() - 1) / v.tile_n()) * ((p.M + v.tile_m() - 1) / v.tile_m()) * p.batch;
}

// The cooperative-matrix variant for this product, if any (and its shader): float16,
// A contiguous in k, B contiguous in n or k, a device with the matrices
// (coopmat_f16_base), a variant whose shared memory fits. The setting COOPMM_TILE
// forces a variant; one that does not fit falls back to the float kernel. The c2_
// variants (matmul_coop2.glsl) need VK_NV_cooperative_matrix2 and rows 16-byte
// aligned (K, N multiples of 8).
const CoopMmVariant* coop_mm_variant(const MatmulProblem& p, const DeviceInfo& device, const Settings& s,
                                     std::string& shader) {
  if (p.dtype != DType::Float16 || p.a_sk != 1 || (p.b_sn != 1 && p.b_sk != 1)) return nullptr;
  const std::string base = coopmat_f16_base(device, s, "matmul_coop");
  if (base.empty()) return nullptr;
  const bool kmajor = p.b_sn != 1;
  if (p.ln && !(kmajor && p.K % 8 == 0 && p.a_sm % 8 == 0 && p.a_sb % 8 == 0)) return nullptr;
  const bool coop2 = base == "matmul_coop" && device.cooperative_matrix2 && !p.ln &&
                     coop2_aligned(p.K, p.N, p.a_sm, p.a_sb, p.b_sb, p.b_sn == 1 ? p.b_sk : p.b_sn, p.c_sb);
  const auto shader_of = [&](const CoopMmVariant& v) {
    const std::string name = v.coop2 ? std::string("matmul_coop2_") + (v.name + 3) : base + "_" + v.name;
    return name + (kmajor ? (p.ln ? "_kb_ln" : "_kb") : "_nb") + "_f16";
  };
  // The _ln variants keep each tile row's mean and 1 / std (8 bytes) beside the tiles.
  const auto fits = [&](const CoopMmVariant& v) {
    return (v.coop2 ? coop2 : v.shared_bytes(kmajor) + (p.ln ? 8 * v.tile_m() : 0) <= device.max_shared_memory) &&
           device.workgroup_fits(v.invocations(), 1, 1) && find_shader(shader_of(v));
  };
  const CoopMmVariant* chosen = nullptr;
  if (!s.coopmm_tile.empty()) {
    for (const CoopMmVariant& v : kCoopMmVariants) {
      if (s.coopmm_tile == v.name) chosen = &v;
    }
    if (chosen == nullptr) throw GraphError("VKDELEGATE_COOPMM_TILE=" + s.coopmm_tile + " has no variant");
    if (!fits(*chosen)) return nullptr;
  } else {
    // (variant, the fewest of its tiles it takes, the most), in order of preference.
    constexpr int64_t any = INT64_MAX;
    const std::tuple<const CoopMmVariant*, int64_t, int64_t> order[] = {
        {&kCoopMmW2, kCoopMmW2FromGroups, any}, {&kCoopMmL64, kCoopMmL64FromGroups, any},
        {&kCoopMmL1, kCoopMmL64FromGroups, any}, {&kCoopMmR, 0, kCoopMmRBelowGroups - 1},
        {&kCoopMmMk4b, 0, any}, {&kCoopMmMk4, 0, any}, {&kCoopMmL1, 0, any}, {&kCoopMmM, 0, any}};
    for (const auto& [v, from, most] : order) {
      const int64_t tiles = coop_tiles(p, *v);
      if (tiles >= from && tiles <= most && fits(*v)) {
        chosen = v;
        break;
      }
    }
    if (chosen == nullptr) return nullptr;
  }
  shader = shader_of(*chosen);
  return chosen;
}

}  // namespace

bool coop2_aligned(int64_t K, int64_t N, int64_t a_sm, int64_t a_sb, int64_t b_sb, int64_t b_row, int64_t c_sb) {
  return K % 8 == 0 && N % 8 == 0 && a_sm % 8 == 0 && a_sb % 8 == 0 && b_sb % 8 == 0 && b_row % 8 == 0 &&
         c_sb % 8 == 0;
}

std::string coopmat_f16_base(const DeviceInfo& device, const Settings& settings, const std::string& base) {
  if (settings.no_coopmat) return "";
  if (settings.coopmat_emulate) return base + "_emu";
  if (device.cooperative_matrix && device.subgroup_size == 32 && device.shader_float16 &&
      device.has_cooperative_matrix_shape(16, 16, 16, "f16->f32")) {
    return base;
  }
  return "";
}

MatmulChoice choose_matmul(const MatmulProblem& p, const DeviceInfo& device, const Settings& s) {
  // matmul.glsl's tile from the planned (largest) sizes, within the device's workgroup
  // limits (the last, 64 invocations, is within every device's: the minimum is 128).
  const TileConfig* config = &kTileConfigs[std::size(kTileConfigs) - 1];
  for (const TileConfig& c : kTileConfigs) {
    if (!device.workgroup_fits(c.local[0], c.local[1], c.local[2])) continue;
    const int64_t groups = ((p.N + c.tile_n - 1) / c.tile_n) * ((p.M + c.tile_m - 1) / c.tile_m) * p.batch;
    if (groups >= kEnoughWorkgroups) {
      config = &c;
      break;
    }
  }
  // One row against a B contiguous in k (a linear weight): a matrix-vector product.
  // A few rows whose tiles cannot fill the GPU too: matmul.glsl would leave a
  // handful of workgroups each walking all of K, while gemv.glsl splits K over
  // 32 invocations per output and re-reads B once per row (from L2: bounded).
  MatmulChoice c;
  const bool tiny = p.dtype == DType::Float32 && device.type != "cpu" && p.M * p.N * p.K * p.batch <= kGemvTinyProduct;
  if ((p.b_sk == 1 || tiny) && (p.M == 1 || few_rows_gemv(p, s, *config))) {
    c.kernel = MatmulKernel::Gemv;
    c.shader = "gemv";
    // Fewer outputs per workgroup where the device allows fewer invocations.
    c.local = kGemvLocal;
    while (c.local[1] > 1 && !device.workgroup_fits(c.local[0], c.local[1], 1)) c.local[1] /= 2;
    c.tile_m = 1, c.tile_n = c.local[1];
    return c;
  }
  // Float16 products go to the cooperative-matrix kernel where there is one.
  std::string coop_shader;
  if (const CoopMmVariant* v = coop_mm_variant(p, device, s, coop_shader)) {
    c.kernel = MatmulKernel::Coop;
    c.shader = coop_shader;
    c.local = {v->invocations(), 1, 1};
    c.tile_m = v->tile_m(), c.tile_n = v->tile_n();
    c.group_m = static_cast<int32_t>(s.coopmm_group);
    c.coop2 = v->coop2;
    return c;
  }
  // Large float32 products take matmul_tiled.glsl.
  TiledConfig t{};
  int64_t splits = 1;
  if (tiled_config(p, device, s, t, splits)) {
    const bool unroll = t.bk == 16 || s.tiled_mm_unroll;
    c.kernel = MatmulKernel::Tiled;
    c.shader = std::string("matmul_tiled") + (t.bk == 16 ? "16" : "") + (unroll ? "u" : "") +
               (splits > 1 ? "_sk_" : "_") + (p.b_sn == 1 ? "nb" : "kb") + "_f32";
    c.local = {t.x, t.y, 1};
    c.tile_m = 8 * t.y, c.tile_n = 8 * t.x;
    c.splits = splits;
    c.group_m = static_cast<int32_t>(s.tiled_mm_group);
    return c;
  }
  c.kernel = MatmulKernel::Strided;
  c.shader = "matmul";
  c.local = config->local;
  c.tile_m = config->tile_m, c.tile_n = config->tile_n;
  return c;
}

}  // namespace vkd
