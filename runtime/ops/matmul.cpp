// Matrix products: mm, bmm, addmm, linear, on the strided matmul shader (and matmul_tiled.glsl for large float32
// ones, matmul_coop.glsl for float16 ones on devices with cooperative matrices).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "../vk/pipeline.h"
#include "op_utils.h"

namespace vkd {

namespace {

struct MatmulParams {
  int32_t M, N, K, batch;
  int32_t a_sb, a_sm, a_sk, b_sb;
  int32_t b_sk, b_sn, c_sb, bias_sb;
  int32_t bias_sm, bias_sn, has_bias, pad0;
  float alpha, beta, pad1, pad2;
  // coopmm: 16-byte rows of A, B and the output (vector loads and stores); workgroup swizzle
  int32_t vec_a, vec_b, vec_c, group_m;
};

// Tile configurations, largest first: local size and tile (4 * local y rows,
// 4 * local x columns; each invocation computes 4 x 4 outputs). The host takes
// the first that still gives enough workgroups to fill a large GPU; the last
// serves problems too small for any other.
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

// ---- fp32mm family: the float32 kernel for large products (matmul_tiled.glsl).
// Each invocation computes 8 x 8 outputs; a workgroup of (x, y) invocations an
// (8 y) x (8 x) tile, stepping K by bk through two shared buffers. Valid
// configurations keep an invocation's vec4 loads per step at 1 or 2 per operand:
// bk 8 with x, y in {8, 16}, bk 16 with (16, 16) only.
struct TiledConfig {
  uint32_t x, y, bk;
};
// The default: 128 x 128 tiles, bk 8. On the H100 (2026-11-22, GPU time) it ran
// 4096^3 at 36.5 TF/s against matmul.glsl's 25.6, and before unrolling 2048^3 at
// 31.8 against 24.2 (256 workgroups), but 1024^3 (64 workgroups) at 11.6 against 19.4: it takes
// products that give at least kTiledMinGroups workgroups. The smaller tiles
// (VKDELEGATE_TILED_MM only) measured no better than matmul.glsl, bk 16 slower.
constexpr TiledConfig kTiledDefault{16, 16, 8};
constexpr int64_t kTiledMinGroups = 256;

// Unrolled steps (matmul_tiledu; settings TILED_MM_UNROLL) and workgroup swizzle
// in groups of 8 rows (TILED_MM_GROUP; 1-2%).

uint32_t tiled_shared_bytes(const TiledConfig& c) {
  return 2 * c.bk * ((8 * c.y) / 4 + 1 + (8 * c.x) / 4 + 1) * 16;
}

// ---- mm1024: split-K for matmul_tiled.glsl. A product of too few tiles to fill
// the GPU (1024^3: 64 tiles of 128 x 128 on 132 SMs) splits K into slices, a
// workgroup each, whose partial sums go to a scratch tensor [splits, batch, M,
// N]; matmul_splitk_reduce.glsl adds them and applies the epilogue. The default
// configuration picks the slice count by splitk_cost_us for products of fewer
// than kTiledMinGroups tiles, both sides at least kSplitKMinSide and at least
// kSplitKMinWork multiply-adds (below, matmul.glsl as before).
// VKDELEGATE_MM_SPLITK=n forces n slices on the tiled kernel (any size and
// configuration, to compare or to test); 1 or 0 turns split-K off.
constexpr int64_t kSplitKMaxSplits = 64;
constexpr int64_t kSplitKMinChunk = 32;  // K per slice: 4 steps of BK 8
constexpr int64_t kSplitKMinSide = 64;
constexpr int64_t kSplitKMinWork = int64_t{1} << 26;

// The cost model of the default 128 x 128 tiles, fitted to the H100 (2026-11-22,
// sweep_splitk.sh on 1024^3, linears 768x768->3072, 768x3072->768 and 77x1024->1024,
// with 1 to 8 slices): an SM runs the K steps of n co-resident workgroups in 0.155
// us per k alone, 0.142 n us for n >= 2 (it holds two at once, hardly faster than
// one); each dispatch costs ~8 us besides; the reduce 3.8 us plus 0.23 us per MB
// it reads and writes, 0.48 beyond 40 MB (the partial sums no longer stay in the
// 50 MB L2). Fitted on 132 SMs: elsewhere a guess, correct anyway.
constexpr int64_t kSplitKSms = 132;
double splitk_cost_us(int64_t tiles, int64_t K, int64_t splits, int64_t outputs) {
  const int64_t chunk = ((K + splits - 1) / splits + 7) / 8 * 8;
  const int64_t per_sm = (tiles * splits + kSplitKSms - 1) / kSplitKSms;
  const double per_k = per_sm == 1 ? 0.155 : 0.142 * static_cast<double>(per_sm);
  const double mb = 1e-6 * static_cast<double>((splits + 1) * outputs * 4);
  const double reduce = splits == 1 ? 0.0 : 3.8 + 0.23 * mb + 0.25 * std::max(0.0, mb - 40.0);
  return 8.0 + static_cast<double>(chunk) * per_k + reduce;
}

// 1 (no split), or the slice count for a product of `tiles` tiles (batch included);
// pick: whether the cost model may choose (the default configuration); forced:
// whether VKDELEGATE_MM_SPLITK asked for a split.
int64_t splitk_count(ComputeGraph& g, const MatmulParams& p, int64_t tiles, bool pick, bool& forced) {
  int64_t splits = 1;
  forced = false;
  const int64_t outputs = int64_t{p.batch} * p.M * p.N;
  if (const std::optional<int64_t> f = g.settings().mm_splitk) {
    splits = *f;  // settings.def bounds it by kSplitKMaxSplits
    forced = splits > 1;
  } else if (pick && tiles > 0 && tiles < kTiledMinGroups && p.M >= kSplitKMinSide && p.N >= kSplitKMinSide &&
             outputs * p.K >= kSplitKMinWork) {
    // The fewest slices within 3% of the cheapest: fewer dispatched workgroups
    // and scratch bytes where the model cannot tell them apart.
    const int64_t most = std::max<int64_t>(1, std::min(kSplitKMaxSplits, int64_t{p.K} / kSplitKMinChunk));
    double best = splitk_cost_us(tiles, p.K, 1, outputs);
    for (int64_t s = 2; s <= most; ++s) best = std::min(best, splitk_cost_us(tiles, p.K, s, outputs));
    while (splitk_cost_us(tiles, p.K, splits, outputs) > 1.03 * best) ++splits;
  }
  // The scratch must fit one binding, and workgroup z (splits * batch) its limit.
  const int64_t slice_bytes = 4 * outputs;
  const int64_t range = static_cast<int64_t>(std::min<VkDeviceSize>(g.context().info().max_storage_buffer_range,
                                                                    VkDeviceSize{1} << 30));
  splits = std::min<int64_t>({splits, slice_bytes > 0 ? range / slice_bytes : splits,
                             65535 / std::max<int64_t>(p.batch, 1)});
  return std::max<int64_t>(splits, 1);
}
// ---- end mm1024

// The tiled configuration for this product, or nullptr to keep matmul.glsl: float32,
// A contiguous in k, B contiguous in n or k, enough workgroups (from the planned
// sizes; the kernel is correct at any size, dynamic ones included).
// VKDELEGATE_NO_TILED_MM=1 turns it off; VKDELEGATE_TILED_MM="x,y,bk" forces a
// configuration (to compare them on a GPU, or to test one).
const TiledConfig* tiled_config(ComputeGraph& g, int a, const MatmulParams& p, int64_t& splits) {
  static TiledConfig forced{};
  splits = 1;
  if (g.tensor(a).dtype != DType::Float32 || g.settings().no_tiled_mm) return nullptr;
  if (p.a_sk != 1 || (p.b_sn != 1 && p.b_sk != 1)) return nullptr;
  if (find_shader("matmul_tiled_nb_f32") == nullptr) return nullptr;
  const uint32_t max_shared = g.context().info().max_shared_memory;
  if (const std::string& f = g.settings().tiled_mm; !f.empty()) {
    unsigned x = 0, y = 0, bk = 0;
    std::sscanf(f.c_str(), "%u,%u,%u", &x, &y, &bk);  // one of settings.def's values
    forced = {x, y, bk};
    if (tiled_shared_bytes(forced) > max_shared) return nullptr;
    bool forced_split = false;
    splits = splitk_count(g, p, ((p.N + 8 * x - 1) / (8 * x)) * ((p.M + 8 * y - 1) / (8 * y)) * p.batch, false,
                          forced_split);
    return &forced;
  }
  const TiledConfig& c = kTiledDefault;
  const int64_t tm = 8 * c.y, tn = 8 * c.x;
  const int64_t tiles = ((p.N + tn - 1) / tn) * ((p.M + tm - 1) / tm) * p.batch;
  bool forced_split = false;
  splits = splitk_count(g, p, tiles, true, forced_split);  // mm1024
  if (tiles < kTiledMinGroups && splits == 1 && !forced_split) return nullptr;
  return tiled_shared_bytes(c) <= max_shared ? &c : nullptr;
}
// ---- end fp32mm

// A product whose tiles give fewer than kEnoughWorkgroups takes gemv.glsl up to
// the setting GEMV_MAX_ROWS rows, as long as the rows re-read at most
// kGemvMaxRereadBytes of B in all.
constexpr int64_t kGemvMaxRereadBytes = int64_t{64} << 20;

bool few_rows_gemv(const Settings& s, const MatmulParams& p, const TileConfig* config) {
  // A forced tiled configuration, split count or cooperative-matrix tile asks for that kernel.
  if (!s.tiled_mm.empty() || s.mm_splitk || !s.coopmm_tile.empty()) return false;
  const int64_t max_rows = s.gemv_max_rows;
  const int64_t groups = ((p.N + config->tile_n - 1) / config->tile_n) *
                         ((p.M + config->tile_m - 1) / config->tile_m) * p.batch;
  return p.M <= max_rows && groups < kEnoughWorkgroups &&
         p.M * p.N * p.K * p.batch * 4 <= kGemvMaxRereadBytes;  // as float32: a bound
}

// ---- coopmm family: float16 products on cooperative matrices (matmul_coop.glslh).
// Per variant: warps WM x WN, 16x16 accumulators per warp FM x FN, shared stages, BK.
struct CoopMmVariant {
  const char* name;
  uint32_t wm, wn, fm, fn, stages, bk;
  bool coop2 = false;  // matmul_coop2.glsl (its shared memory is the driver's)
  uint32_t tile_m() const { return wm * fm * 16; }
  uint32_t tile_n() const { return wn * fn * 16; }
  uint32_t invocations() const { return wm * wn * 32; }
  // The A and B tiles per stage, rows padded by 8 halves (the epilogue's scratch
  // reuses the A tiles).
  uint32_t shared_bytes(bool b_kmajor) const {
    const uint32_t b = b_kmajor ? tile_n() * (bk / 8 + 1) : bk * (tile_n() / 8 + 1);
    return 16 * stages * (tile_m() * (bk / 8 + 1) + b);
  }
};
// l: 128 x 128, 8 warps of 64 x 32 (4 x 2 accumulators), two shared buffers;
// lt: the same tile, warps of 32 x 64; l1, lt1: l, lt with one shared buffer (fit
// 32 KiB); w: 128 x 256 (one buffer), w16 with BK 16 and two; wt: 256 x 128; q:
// 128 x 128 in 4 warps of 64 x 64, q64 with BK 64 and one buffer; l64: l with BK 64,
// one buffer; m: 64 x 64, 4 warps of 2 x 2, for products with few tiles.
constexpr CoopMmVariant kCoopMmVariants[] = {
    {"l", 2, 4, 4, 2, 2, 32},  {"lt", 4, 2, 2, 4, 2, 32},  {"l1", 2, 4, 4, 2, 1, 32}, {"lt1", 4, 2, 2, 4, 1, 32},
    {"w", 2, 4, 4, 4, 1, 32},  {"w16", 2, 4, 4, 4, 2, 16}, {"wt", 4, 2, 4, 4, 1, 32}, {"q", 2, 2, 4, 4, 2, 32},
    {"q64", 2, 2, 4, 4, 1, 64}, {"l64", 2, 4, 4, 2, 1, 64}, {"m", 2, 2, 2, 2, 2, 32},
    // PREFETCH=2 (two stages in flight in registers) of w, wt, l1, l64
    {"w2", 2, 4, 4, 4, 1, 32}, {"wt2", 4, 2, 4, 4, 1, 32}, {"l2", 2, 4, 4, 2, 1, 32}, {"l64p2", 2, 4, 4, 2, 1, 64},
    // matmul_coop2.glsl: tiles 128 x 128 (BK 32, 64) and 128 x 256, 256 invocations
    {"c2_l", 2, 4, 4, 2, 0, 32, true}, {"c2_l64", 2, 4, 4, 2, 0, 64, true}, {"c2_w", 2, 4, 4, 4, 0, 32, true},
};
// The default, from the H100 sweeps (2026-11-22, GPU time, TF/s; torch.mm 662-704):
//   4096^3:             w 166-172, w2 162.8, wt 162.3, wt2 159.5, l64 154-156, c2_l 151-153,
//                       l1 146-148, w16 145.5, l 135, q64 133.8, l2 121.4, q 92.2, m 75-79
//                       (matmul.glsl 25.6);
//   bmm 3x1000x1024x1032: w2 97.0, wt2 92.9, c2_l 90-91, w 85-87, l64p2 83.7, l64 74.4;
//   1000x777x1500:      l64 32.6-33.3, l64p2 32.4, l 30.7, l2 30.5, w 21-22 (matmul.glsl 20.5).
// So w once its 128 x 256 tiles alone give kCoopMmWFromGroups workgroups, w2 from
// kCoopMmW2FromGroups, else l64; l1 and m where their shared memory is all that fits
// (lavapipe's 32 KiB). The c2_ variants (matmul_coop2.glsl, VK_NV_cooperative_matrix2)
// measured no faster than w, w2: only forced, to compare.
constexpr const CoopMmVariant& kCoopMmL1 = kCoopMmVariants[2];
constexpr const CoopMmVariant& kCoopMmW = kCoopMmVariants[4];
constexpr const CoopMmVariant& kCoopMmL64 = kCoopMmVariants[9];
constexpr const CoopMmVariant& kCoopMmM = kCoopMmVariants[10];
constexpr const CoopMmVariant& kCoopMmW2 = kCoopMmVariants[11];
constexpr int64_t kCoopMmWFromGroups = 256;
constexpr int64_t kCoopMmW2FromGroups = 96;

// matmul_coop2 reads slices at 16-byte aligned starts: rows of A, B and the
// output, and batch strides, in multiples of 8 halves (true at every size once
// K and N are multiples of 8).
bool coop2_aligned(const MatmulParams& p) {
  return p.K % 8 == 0 && p.N % 8 == 0 && p.a_sm % 8 == 0 && p.a_sb % 8 == 0 && p.b_sb % 8 == 0 &&
         (p.b_sn == 1 ? p.b_sk : p.b_sn) % 8 == 0 && p.c_sb % 8 == 0;
}

struct CoopMmChoice {
  std::string shader;
  const CoopMmVariant* v = nullptr;
};

// The cooperative-matrix kernel for this product, if any: float16, A contiguous
// in k, B contiguous in n or k, a device with the matrices (coopmat_f16_base), a
// variant whose shared memory fits. VKDELEGATE_COOPMM_TILE=l|lt|...|m (a name above) forces a
// variant (tests, benchmarks); one that does not fit falls back to the float kernel.
// The c2_ variants (matmul_coop2.glsl) need VK_NV_cooperative_matrix2
// (DeviceInfo::cooperative_matrix2) and rows 16-byte aligned (K, N multiples of 8).
CoopMmChoice coop_mm_config(ComputeGraph& g, int a, const MatmulParams& p) {
  if (g.tensor(a).dtype != DType::Float16 || p.a_sk != 1 || (p.b_sn != 1 && p.b_sk != 1)) return {};
  const std::string base = coopmat_f16_base(g, "matmul_coop");
  if (base.empty()) return {};
  const bool kmajor = p.b_sn != 1;
  const bool coop2 = base == "matmul_coop" && g.context().info().cooperative_matrix2 && coop2_aligned(p);
  const uint32_t smem = g.context().info().max_shared_memory;
  const auto shader_of = [&](const CoopMmVariant& v) {
    const std::string name = v.coop2 ? std::string("matmul_coop2_") + (v.name + 3) : base + "_" + v.name;
    return name + (kmajor ? "_kb" : "_nb") + "_f16";
  };
  const auto fits = [&](const CoopMmVariant& v) {
    return (v.coop2 ? coop2 : v.shared_bytes(kmajor) <= smem) && find_shader(shader_of(v));
  };
  const CoopMmVariant* chosen = nullptr;
  if (const std::string& f = g.settings().coopmm_tile; !f.empty()) {
    for (const CoopMmVariant& v : kCoopMmVariants) {
      if (f == v.name) chosen = &v;
    }
    if (chosen == nullptr) g.fail("VKDELEGATE_COOPMM_TILE=" + f + " has no variant in kCoopMmVariants");
    if (!fits(*chosen)) return {};
  } else {
    const int64_t w_groups = ((p.N + kCoopMmW.tile_n() - 1) / kCoopMmW.tile_n()) *
                             ((p.M + kCoopMmW.tile_m() - 1) / kCoopMmW.tile_m()) * p.batch;
    for (const CoopMmVariant* v : {&kCoopMmW, &kCoopMmW2, &kCoopMmL64, &kCoopMmL1, &kCoopMmM}) {
      const int64_t from = v == &kCoopMmW ? kCoopMmWFromGroups : v == &kCoopMmW2 ? kCoopMmW2FromGroups : 0;
      if (w_groups >= from && fits(*v)) {
        chosen = v;
        break;
      }
    }
    if (chosen == nullptr) return {};
  }
  return {shader_of(*chosen), chosen};
}

// ---- end coopmm

// Shapes of one product, recomputed from the current sizes at every update.
struct Problem {
  Sizes out_sizes;
  MatmulParams p{};
};

using ShapeFn = Problem (*)(ComputeGraph& g, const std::vector<int>& ids);

// Sets bias strides for a bias broadcast against [M, N].
void bias_strides(ComputeGraph& g, const Tensor& bias, int64_t M, int64_t N, MatmulParams& p) {
  const Sizes st = broadcast_strides(bias, {M, N});
  if (bias.dim() > 2 || broadcast_sizes(g, bias.sizes, {M, N}) != Sizes{M, N}) {
    g.fail("bias of sizes " + sizes_str(bias.sizes) + " does not broadcast to [" +
           std::to_string(M) + ", " + std::to_string(N) + "]");
  }
  p.bias_sm = static_cast<int32_t>(st[0]);
  p.bias_sn = static_cast<int32_t>(st[1]);
  p.has_bias = 1;
}

// mm1024: the split-K product on matmul_tiled.glsl `shader` (an _sk variant): slices into a scratch
// tensor, then matmul_splitk_reduce.glsl into the output with the epilogue.
void add_splitk_matmul(ComputeGraph& g, const std::vector<int>& ids, ShapeFn shape, float alpha, float beta,
                       const std::string& shader, LocalSize local, uint32_t tile_m, uint32_t tile_n, float group_m,
                       int64_t splits) {
  const Problem planned = shape(g, ids);
  const int part = g.add_scratch_tensor(DType::Float32, {splits * planned.p.batch * planned.p.M * planned.p.N});
  const uint32_t bk = shader.find("tiled16") != std::string::npos ? 16 : 8;
  g.add_node(g.current_op(), shader, local, {part, ids[0], ids[1], ids[0]},
             [ids, shape, tile_m, tile_n, group_m, splits, part, bk](ComputeGraph& g, Node& node) {
               Problem pr = shape(g, ids);
               g.tensor(part).sizes = {splits * pr.p.batch * pr.p.M * pr.p.N};
               pr.p.alpha = 1.f;
               pr.p.has_bias = 0;
               pr.p.c_sb = pr.p.M * pr.p.N;
               pr.p.pad0 = pr.p.K % 4 == 0 && pr.p.N % 4 == 0;
               pr.p.pad1 = group_m;
               // pad2 is k_chunk: K per slice, a multiple of bk (at least one step).
               const int64_t per = (pr.p.K + splits - 1) / splits;
               pr.p.pad2 = static_cast<float>(std::max<int64_t>(1, (per + bk - 1) / bk) * bk);
               node.set_params(pr.p);
               node.groups = {static_cast<uint32_t>((pr.p.N + tile_n - 1) / tile_n),
                              static_cast<uint32_t>((pr.p.M + tile_m - 1) / tile_m),
                              static_cast<uint32_t>(splits * pr.p.batch)};
               if (pr.p.M == 0 || pr.p.N == 0 || pr.p.batch == 0) node.groups = {0, 0, 0};
             });
  struct ReduceParams {
    int32_t M, N, batch, splits;
    int32_t bias_sb, bias_sm, bias_sn, has_bias;
    float alpha, beta;
    int32_t aligned, pad0;
  };
  const int bias = ids[2], out = ids[3];
  g.add_node(g.current_op(), "matmul_splitk_reduce_f32", kLocal1D, {out, part, bias >= 0 ? bias : part},
             [ids, shape, alpha, beta, splits](ComputeGraph& g, Node& node) {
               const Problem pr = shape(g, ids);
               g.tensor(ids[3]).sizes = pr.out_sizes;
               ReduceParams r{pr.p.M, pr.p.N, pr.p.batch, static_cast<int32_t>(splits),
                              pr.p.bias_sb, pr.p.bias_sm, pr.p.bias_sn, beta == 0.f ? 0 : pr.p.has_bias,
                              alpha, beta, pr.p.N % 4 == 0, 0};
               node.set_params(r);
               node.set_groups_1d(int64_t{pr.p.batch} * pr.p.M * ((pr.p.N + 3) / 4), kLocal1D[0]);
             });
}

// ids: a, b, bias (or -1), out
void add_matmul(ComputeGraph& g, std::vector<int> ids, ShapeFn shape, float alpha, float beta) {
  const int a = ids[0], b = ids[1], bias = ids[2], out = ids[3];
  require_float_same(g, {a, b, bias, out});
  // Tile size from the planned (largest) sizes.
  const Problem planned = shape(g, ids);
  const TileConfig* config = &kTileConfigs[std::size(kTileConfigs) - 1];
  for (const TileConfig& c : kTileConfigs) {
    const int64_t groups = ((planned.p.N + c.tile_n - 1) / c.tile_n) * ((planned.p.M + c.tile_m - 1) / c.tile_m) *
                           planned.p.batch;
    if (groups >= kEnoughWorkgroups) {
      config = &c;
      break;
    }
  }
  // One row against a B contiguous in k (a linear weight): a matrix-vector product.
  // A few rows whose tiles cannot fill the GPU too: matmul.glsl would leave a
  // handful of workgroups each walking all of K, while gemv.glsl splits K over
  // 32 invocations per output and re-reads B once per row (from L2: bounded).
  const bool gemv = planned.p.b_sk == 1 && (planned.p.M == 1 || few_rows_gemv(g.settings(), planned.p, config));
  uint32_t tile_m = gemv ? 1 : config->tile_m, tile_n = gemv ? kGemvLocal[1] : config->tile_n;
  std::string shader = variant(g, gemv ? "gemv" : "matmul", a);
  float group_m = 0.f;  // fp32mm
  int coop_group_m = 0;  // coopmm
  bool coop2 = false;
  LocalSize local = gemv ? kGemvLocal : config->local;
  int64_t splits = 1;  // mm1024
  // coopmm: float16 products go to the cooperative-matrix kernel where there is one.
  const CoopMmChoice coop = gemv ? CoopMmChoice{} : coop_mm_config(g, a, planned.p);
  if (coop.v != nullptr) {
    shader = coop.shader;
    local = {coop.v->invocations(), 1, 1};
    tile_m = coop.v->tile_m(), tile_n = coop.v->tile_n();
    coop_group_m = static_cast<int>(g.settings().coopmm_group);
    coop2 = coop.v->coop2;
  }
  // fp32mm: large float32 products take matmul_tiled.glsl.
  if (const TiledConfig* t = gemv || coop.v != nullptr ? nullptr : tiled_config(g, a, planned.p, splits)) {
    const bool unroll = t->bk == 16 || g.settings().tiled_mm_unroll;
    shader = std::string("matmul_tiled") + (t->bk == 16 ? "16" : "") + (unroll ? "u" : "") +
             (splits > 1 ? "_sk_" : "_") + (planned.p.b_sn == 1 ? "nb" : "kb") + "_f32";  // mm1024: _sk
    group_m = static_cast<float>(g.settings().tiled_mm_group);
    local = {t->x, t->y, 1};
    tile_m = 8 * t->y, tile_n = 8 * t->x;
  }
  if (splits > 1) {  // mm1024
    add_splitk_matmul(g, ids, shape, alpha, beta, shader, local, tile_m, tile_n, group_m, splits);
    return;
  }
  // A missing bias still needs a buffer at binding 3; bind `a`, never read.
  g.add_node(g.current_op(), shader, local,
             {out, a, b, bias >= 0 ? bias : a},
             [ids, shape, alpha, beta, tile_m, tile_n, group_m, coop_group_m, coop2](ComputeGraph& g, Node& node) {
               Problem pr = shape(g, ids);
               g.tensor(ids[3]).sizes = pr.out_sizes;
               pr.p.alpha = alpha;
               pr.p.beta = beta;
               if (beta == 0.f) pr.p.has_bias = 0;  // torch ignores the bias then, NaN or not
               // fp32mm: matmul_tiled.glsl reads pad0 as `aligned` (16-byte loads and stores).
               pr.p.pad0 = pr.p.K % 4 == 0 && pr.p.N % 4 == 0;
               pr.p.pad1 = group_m;  // and pad1 as group_m (workgroup order)
               // coopmm: rows of 8 halves (16 bytes) from 16-byte aligned starts.
               const auto rows16 = [](int32_t row_stride, int32_t batch_stride) {
                 return row_stride % 8 == 0 && batch_stride % 8 == 0;
               };
               pr.p.vec_a = rows16(pr.p.a_sm, pr.p.a_sb);
               pr.p.vec_b = pr.p.b_sn == 1 ? rows16(pr.p.b_sk, pr.p.b_sb) : rows16(pr.p.b_sn, pr.p.b_sb);
               pr.p.vec_c = rows16(pr.p.N, pr.p.c_sb);
               pr.p.group_m = coop_group_m;
               if (coop2 && !coop2_aligned(pr.p)) {
                 g.fail("sizes " + sizes_str(pr.out_sizes) + " with K = " + std::to_string(pr.p.K) +
                        ": the cooperative-matrix-2 kernel (VKDELEGATE_COOPMM_TILE=c2_*) chosen at load needs "
                        "K and N multiples of 8");
               }
               node.set_params(pr.p);
               node.groups = {static_cast<uint32_t>((pr.p.N + tile_n - 1) / tile_n),
                              static_cast<uint32_t>((pr.p.M + tile_m - 1) / tile_m),
                              static_cast<uint32_t>(pr.p.batch)};
               if (pr.p.M == 0 || pr.p.N == 0) node.groups = {0, 0, 0};
             });
}

void check_k(ComputeGraph& g, int64_t ka, int64_t kb, const Tensor& a, const Tensor& b) {
  if (ka != kb) {
    g.fail("inner dimensions differ: " + sizes_str(a.sizes) + " x " + sizes_str(b.sizes));
  }
}

// mm / addmm: a [M, K], b [K, N]
Problem mm_shape(ComputeGraph& g, const std::vector<int>& ids) {
  const Tensor& a = g.tensor(ids[0]);
  const Tensor& b = g.tensor(ids[1]);
  if (a.dim() != 2 || b.dim() != 2) g.fail("mm needs 2-D tensors");
  check_k(g, a.sizes[1], b.sizes[0], a, b);
  Problem pr;
  const int64_t M = a.sizes[0], K = a.sizes[1], N = b.sizes[1];
  pr.out_sizes = {M, N};
  pr.p.M = M, pr.p.N = N, pr.p.K = K, pr.p.batch = 1;
  pr.p.a_sm = K, pr.p.a_sk = 1;
  pr.p.b_sk = N, pr.p.b_sn = 1;
  pr.p.c_sb = M * N;
  if (ids[2] >= 0) bias_strides(g, g.tensor(ids[2]), M, N, pr.p);
  return pr;
}

// bmm: a [B, M, K], b [B, K, N]
Problem bmm_shape(ComputeGraph& g, const std::vector<int>& ids) {
  const Tensor& a = g.tensor(ids[0]);
  const Tensor& b = g.tensor(ids[1]);
  if (a.dim() != 3 || b.dim() != 3) g.fail("bmm needs 3-D tensors");
  if (a.sizes[0] != b.sizes[0]) g.fail("batch sizes differ: " + sizes_str(a.sizes) + " x " + sizes_str(b.sizes));
  check_k(g, a.sizes[2], b.sizes[1], a, b);
  Problem pr;
  const int64_t B = a.sizes[0], M = a.sizes[1], K = a.sizes[2], N = b.sizes[2];
  if (B > 65535) g.fail("batch of " + std::to_string(B) + " is above 65535");
  pr.out_sizes = {B, M, N};
  pr.p.M = M, pr.p.N = N, pr.p.K = K, pr.p.batch = B;
  pr.p.a_sb = M * K, pr.p.a_sm = K, pr.p.a_sk = 1;
  pr.p.b_sb = K * N, pr.p.b_sk = N, pr.p.b_sn = 1;
  pr.p.c_sb = M * N;
  return pr;
}

// linear: x [..., K], weight [N, K], bias [N]
Problem linear_shape(ComputeGraph& g, const std::vector<int>& ids) {
  const Tensor& x = g.tensor(ids[0]);
  const Tensor& w = g.tensor(ids[1]);
  if (x.dim() < 1 || w.dim() != 2) g.fail("linear needs an input of rank >= 1 and a 2-D weight");
  const int64_t K = x.sizes.back(), N = w.sizes[0];
  check_k(g, K, w.sizes[1], x, w);
  Problem pr;
  const int64_t M = K == 0 ? 0 : x.numel() / K;
  pr.out_sizes = x.sizes;
  pr.out_sizes.back() = N;
  pr.p.M = M, pr.p.N = N, pr.p.K = K, pr.p.batch = 1;
  pr.p.a_sm = K, pr.p.a_sk = 1;
  pr.p.b_sk = 1, pr.p.b_sn = K;
  pr.p.c_sb = M * N;
  if (ids[2] >= 0) {
    const Tensor& bias = g.tensor(ids[2]);
    if (bias.dim() != 1 || bias.sizes[0] != N) g.fail("linear bias must have sizes [" + std::to_string(N) + "]");
    pr.p.bias_sm = 0, pr.p.bias_sn = 1, pr.p.has_bias = 1;
  }
  return pr;
}

}  // namespace

VKD_REGISTER_OPS(register_matmul_ops) {
  // mm(self, mat2)
  register_op("aten.mm.default", [](ComputeGraph& g, const std::vector<int>& a) {
    add_matmul(g, {a.at(0), a.at(1), -1, a.back()}, mm_shape, 1.f, 0.f);
  });
  // bmm(self, mat2)
  register_op("aten.bmm.default", [](ComputeGraph& g, const std::vector<int>& a) {
    add_matmul(g, {a.at(0), a.at(1), -1, a.back()}, bmm_shape, 1.f, 0.f);
  });
  // addmm(self, mat1, mat2, *, beta=1, alpha=1)
  register_op("aten.addmm.default", [](ComputeGraph& g, const std::vector<int>& a) {
    add_matmul(g, {a.at(1), a.at(2), a.at(0), a.back()}, mm_shape,
               static_cast<float>(g.get_double(a.at(4))), static_cast<float>(g.get_double(a.at(3))));
  });
  // linear(input, weight, bias=None)
  register_op("aten.linear.default", [](ComputeGraph& g, const std::vector<int>& a) {
    const int bias = g.is_null(a.at(2)) ? -1 : a.at(2);
    add_matmul(g, {a.at(0), a.at(1), bias, a.back()}, linear_shape, 1.f, 1.f);
  });
}

}  // namespace vkd
