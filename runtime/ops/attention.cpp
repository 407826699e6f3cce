// Transformer blocks kept whole: scaled_dot_product_attention (one fused
// kernel with an online softmax) and rms_norm.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "op_utils.h"
#include "kv_cache.h"     // add_rope_kv_node, require_positions: et_vk.vkd_sdpa_kv_cache, vkd_sdpa_rope_kv
#include "shader_params.h"  // SdpaParams, SdpaStridedParams, SdpaKvCacheParams (sdpa_kv_params.glslh), RmsNormParams, RopeParams: glsl/sdpa*.glsl, rms_norm.glsl, rope.glsl

namespace vkd {

namespace {

constexpr LocalSize kRowLocal{64, 1, 1};
constexpr int64_t kMaxHeadDim = 256;  // sdpa.glsl: MAX_E, and 4 accumulators per invocation

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The tiled attention kernels' variants (sdpa_tiled.glsl, sdpa_kv_tiled.glsl: the variant suffix
// names MAX_D; sdpa_tile.glslh its ROWS and KEYS), smallest first.
struct TiledAttention {
  const char* suffix;
  int64_t max_d, rows, keys;
};
constexpr TiledAttention kTiledAttention[] = {{"_d64", 64, 32, 32}, {"_d128", 128, 32, 16}};
constexpr LocalSize kTiledAttentionLocal{128, 1, 1};  // sdpa_tile.glslh: THREADS
int64_t tiled_attention_shared_bytes(const TiledAttention& c) {
  return 4 * (c.rows * (c.max_d + 1) + c.keys * (c.max_d + 1) + c.rows * (c.keys + 1) + 4 * c.rows + 1);
}
// The smallest configuration that holds the head dims and fits the device's shared memory, or none.
const TiledAttention* tiled_attention_for(ComputeGraph& g, int64_t E, int64_t Ev) {
  for (const TiledAttention& c : kTiledAttention) {
    if (std::max(E, Ev) <= c.max_d && tiled_attention_shared_bytes(c) <= g.context().info().max_shared_memory) {
      return &c;
    }
  }
  return nullptr;
}

// sdpa's sizes: q [..., L, E], k [..., S, E], v [..., S, Ev]; the dim before L the heads (1 at rank 2),
// the dims before it the batch. Checked whenever the sizes change; sets the output's sizes.
struct SdpaShape {
  Sizes lead;  // q's dims before (L, E)
  int64_t batch, heads, kv_heads, L, S, E, Ev;
  int64_t group;  // q heads per KV head
};
SdpaShape sdpa_shape(ComputeGraph& g, int q, int k, int v, int out, bool gqa) {
  const Tensor& tq = g.tensor(q);
  const Tensor& tk = g.tensor(k);
  const Tensor& tv = g.tensor(v);
  const int64_t rank = tq.dim();
  if (rank < 2 || tk.dim() != rank || tv.dim() != rank) g.fail("query, key and value need one rank of at least 2");
  SdpaShape x{};
  x.L = tq.sizes[rank - 2];
  x.E = tq.sizes[rank - 1];
  x.S = tk.sizes[rank - 2];
  x.Ev = tv.sizes[rank - 1];
  if (tk.sizes[rank - 1] != x.E || tv.sizes[rank - 2] != x.S) {
    g.fail("key " + sizes_str(tk.sizes) + " and value " + sizes_str(tv.sizes) + " do not fit query " +
           sizes_str(tq.sizes));
  }
  if (x.E > kMaxHeadDim || x.Ev > kMaxHeadDim) g.fail("head dims above 256 are not supported");
  x.heads = rank >= 3 ? tq.sizes[rank - 3] : 1;
  x.kv_heads = rank >= 3 ? tk.sizes[rank - 3] : 1;
  x.group = x.kv_heads > 0 ? std::max<int64_t>(x.heads / x.kv_heads, 1) : 1;
  for (int64_t d = 0; d + 2 < rank; ++d) {
    const bool head_dim = d == rank - 3;
    if (tk.sizes[d] != tv.sizes[d]) g.fail("key and value lead dims differ");
    if (tk.sizes[d] == tq.sizes[d]) continue;
    if (!(head_dim && gqa && tk.sizes[d] > 0 && tq.sizes[d] % tk.sizes[d] == 0)) {
      g.fail("key " + sizes_str(tk.sizes) + " does not match query " + sizes_str(tq.sizes) +
             (head_dim ? " (grouped heads need enable_gqa=True)" : ""));
    }
  }
  x.lead = Sizes(tq.sizes.begin(), tq.sizes.end() - 2);
  x.batch = rank >= 3 ? numel_of(Sizes(tq.sizes.begin(), tq.sizes.end() - 3)) : 1;
  if (std::max(tq.numel(), numel_of(x.lead) * x.L * x.Ev) > INT32_MAX || std::max(tk.numel(), tv.numel()) > INT32_MAX) {
    g.fail("too large for 32-bit indexing");
  }
  Tensor& o = g.tensor(out);
  o.sizes = tq.sizes;
  o.sizes[rank - 1] = x.Ev;
  return x;
}

float sdpa_scale(bool has_scale, double scale_arg, int64_t E) {
  return static_cast<float>(has_scale ? scale_arg : 1.0 / std::sqrt(static_cast<double>(E)));
}

// Queries per head from which plain sdpa takes the tiled kernel (sdpa_tiled.glsl). It runs a
// workgroup per block of 32 query rows of a KV head (and batch), each streaming all the keys once;
// sdpa.glsl a workgroup per row, each streaming them again. At decode-like L the tiled kernel would
// leave most of a block's rows empty and, with a workgroup per block instead of per row, each
// walking every key in turn, leave the GPU mostly idle; from half a block of one head's queries
// up, the key and value reads it saves are worth that.
constexpr int64_t kSdpaTiledMinQueries = 16;
// ... and from this many workgroups (row blocks x KV heads x batch): each walks the keys in turn, so
// a small grid leaves most of the GPU idle where a workgroup per row does not. H100, 2026-11-25: ViT-tiny's
// attention (197 queries, 3 heads: 21 workgroups) 62 us tiled against 52 us a workgroup per row;
// a transformer block's (17 queries, 8 heads: 8 workgroups) 13 us tiled.
constexpr int64_t kSdpaTiledMinWorkgroups = 128;

// Where the strided kernels (sdpa_tiled.glsl, sdpa_short.glsl) find q, k, v and out: the sizes,
// and each tensor's strides between batches, heads and rows and its element offset
// (sdpa_strided_params.glslh). Computed from the current sizes at each resize.
struct SdpaLayout {
  SdpaShape x;
  int32_t q[4], k[4], v[4], out[4];
};
using SdpaLayoutOf = std::function<SdpaLayout(ComputeGraph&)>;

// Contiguous q [B, H, L, E], k [B, KVH, S, E], v [B, KVH, S, Ev] and out [B, H, L, Ev].
SdpaLayoutOf contiguous_layout(int q, int k, int v, int out, bool gqa) {
  return [=](ComputeGraph& g) {
    SdpaLayout y{};
    y.x = sdpa_shape(g, q, k, v, out, gqa);
    auto strides = [](int32_t (&s)[4], int64_t heads, int64_t rows, int64_t dim) {
      s[0] = static_cast<int32_t>(heads * rows * dim);
      s[1] = static_cast<int32_t>(rows * dim);
      s[2] = static_cast<int32_t>(dim);
      s[3] = 0;
    };
    strides(y.q, y.x.heads, y.x.L, y.x.E);
    strides(y.k, y.x.kv_heads, y.x.S, y.x.E);
    strides(y.v, y.x.kv_heads, y.x.S, y.x.Ev);
    strides(y.out, y.x.heads, y.x.L, y.x.Ev);
    return y;
  };
}

// sdpa_short.glsl's bounds: THREADS, MAX_ROWS (query rows a workgroup), MAX_KEYS (S) and its
// shared memory (13 KiB: under the 16 KiB every Vulkan device has).
constexpr LocalSize kShortAttentionLocal{128, 1, 1};
constexpr int64_t kShortAttentionMaxRows = 4;
constexpr int64_t kShortAttentionMaxKeys = 512;
constexpr int64_t kShortAttentionSharedBytes = 4 * (4 * 256 + 4 * 512 + 2 * 4 * 32 + 128 + 4);
// A variant of a kernel that streams keys and values through shared memory in chunks: its suffix, the
// largest head dim it holds, its chunk of keys and its shared memory.
struct ChunkedAttention {
  const char* suffix;
  int64_t max_d, chunk, shared_bytes;
};
// The first of `variants` (smallest first) holding head dims E and Ev whose shared memory fits the device.
template <size_t N>
const ChunkedAttention* chunked_attention_for(const ChunkedAttention (&variants)[N], const SdpaShape& x,
                                              const DeviceInfo& info) {
  for (const ChunkedAttention& c : variants) {
    if (std::max(x.E, x.Ev) <= c.max_d && c.shared_bytes <= info.max_shared_memory) return &c;
  }
  return nullptr;
}
// sdpa_coop.glslh's bounds: THREADS, ROWS, MAX_KEYS, its variants' MAX_D (head dims, multiples of
// 8) with their chunks of keys, and their shared memory.
constexpr LocalSize kCoopAttentionLocal{128, 1, 1};
constexpr int64_t kCoopAttentionRows = 16;
constexpr int64_t kCoopAttentionMaxKeys = 256;
constexpr int64_t coop_attention_shared(int64_t max_d, int64_t chunk) {
  return 16 * (16 * (max_d / 8 + 1) + chunk * (max_d / 8 + 1) + 16 * (kCoopAttentionMaxKeys / 4 + 1)) + 4 * 2 * 16 * 8;
}
constexpr ChunkedAttention kCoopAttention[] = {{"_d64", 64, 64, coop_attention_shared(64, 64)},
                                               {"_d128", 128, 32, coop_attention_shared(128, 32)}};
// sdpa_block.glsl's bounds: THREADS, ROWS, MAX_KEYS, its variants' MAX_D with their chunks of keys,
// and their shared memory (float32 elements).
constexpr LocalSize kBlockAttentionLocal{128, 1, 1};
constexpr int64_t kBlockAttentionRows = 4;
constexpr int64_t kBlockAttentionMaxKeys = 256;
// The default takes it from this many workgroups (row blocks x KV heads x batch); on the H200,
// ViT-tiny's 150: 29.5 -> 19.7 us a layer against the short kernel; a transformer block's 40
// (17 queries, 4 heads, batch 2): 8.6 -> 10.0, so below it the short kernel keeps it.
constexpr int64_t kBlockAttentionMinWorkgroups = 64;
constexpr int64_t block_attention_shared(int64_t max_d, int64_t chunk) {
  return 4 * (kBlockAttentionRows * max_d + kBlockAttentionRows * kBlockAttentionMaxKeys + chunk * (max_d + 1) +
              2 * kBlockAttentionRows * (kBlockAttentionLocal[0] / kBlockAttentionRows));
}
constexpr ChunkedAttention kBlockAttention[] = {{"_d64", 64, 64, block_attention_shared(64, 64)},
                                                {"_d128", 128, 32, block_attention_shared(128, 32)}};

// The strided kernels (all without a mask): the tiled kernel, the short kernel, the block kernel
// and its twin on cooperative matrices.
enum class StridedKernel { None, Tiled, Short, Coop, Block };
struct SdpaChoice {
  StridedKernel kernel;
  const TiledAttention* tiled = nullptr;    // Tiled: its configuration
  const ChunkedAttention* coop = nullptr;   // Coop: its variant
  const ChunkedAttention* block = nullptr;  // Block: its variant
};

// The short kernel applies to these planned sizes on this device.
bool short_attention_fits(ComputeGraph& g, const SdpaShape& planned) {
  const DeviceInfo& info = g.context().info();
  return planned.S <= kShortAttentionMaxKeys && kShortAttentionSharedBytes <= info.max_shared_memory &&
         kShortAttentionLocal[0] <= info.max_workgroup_invocations &&
         std::max({planned.L * planned.group, planned.kv_heads, planned.batch}) <= 65535;
}

// Why the cooperative-matrix kernel `c` cannot take the current sizes (its 16-byte loads and stores need
// head dims of multiples of 8; every layout here then has rows and offsets of multiples of 8), or "".
std::string coop_attention_unfit(const SdpaShape& x, const ChunkedAttention& c) {
  if (x.S > kCoopAttentionMaxKeys) return "more than " + std::to_string(kCoopAttentionMaxKeys) + " keys";
  if (x.E > c.max_d || x.Ev > c.max_d) return "head dims above " + std::to_string(c.max_d);
  if (x.E % 8 != 0 || x.Ev % 8 != 0) return "head dims not multiples of 8";
  return "";
}
bool coop_layout_aligned(const SdpaLayout& y) {
  for (const int32_t* s : {y.q, y.k, y.v, y.out}) {
    for (int i = 0; i < 4; ++i) {
      if (s[i] % 8 != 0) return false;
    }
  }
  return true;
}
// The cooperative-matrix kernel for half attention at these planned sizes on this device (the smallest
// variant that holds the head dims and fits its shared memory), or none.
const ChunkedAttention* coop_attention_for(ComputeGraph& g, const SdpaShape& planned, DType dtype) {
  const DeviceInfo& info = g.context().info();
  if (dtype != DType::Float16 || kCoopAttentionLocal[0] > info.max_workgroup_invocations ||
      std::max({ceil_div(planned.L * planned.group, kCoopAttentionRows), planned.kv_heads, planned.batch}) > 65535) {
    return nullptr;
  }
  if (coopmat_f16_base(g, "sdpa_coop").empty()) return nullptr;
  const ChunkedAttention* c = chunked_attention_for(kCoopAttention, planned, info);
  return c && coop_attention_unfit(planned, *c).empty() ? c : nullptr;
}

// The block kernel (sdpa_block.glsl) at these planned sizes on this device: up to
// kBlockAttentionMaxKeys keys, the smallest variant that holds the head dims and fits its shared
// memory; or none.
const ChunkedAttention* block_attention_for(ComputeGraph& g, const SdpaShape& planned) {
  const DeviceInfo& info = g.context().info();
  if (planned.S > kBlockAttentionMaxKeys || kBlockAttentionLocal[0] > info.max_workgroup_invocations ||
      std::max({ceil_div(planned.L * planned.group, kBlockAttentionRows), planned.kv_heads, planned.batch}) > 65535) {
    return nullptr;
  }
  return chunked_attention_for(kBlockAttention, planned, info);
}

// sdpa without a mask through strides: `choice`'s kernel. A block of the short kernel's query rows
// shares each key row read; fewer rows a block where the grid would be small (each workgroup's
// work is short, but a workgroup per SM leaves it idle).
void add_sdpa_strided(ComputeGraph& g, const SdpaChoice& choice, std::vector<int> tensors, SdpaLayoutOf layout,
                      bool causal, bool has_scale, double scale_arg) {
  const int q = tensors.at(1);
  const TiledAttention* tiled = choice.tiled;
  const ChunkedAttention* coop = choice.coop;
  const ChunkedAttention* block = choice.block;
  const StridedKernel kind = choice.kernel;
  std::string shader = "sdpa_short";
  LocalSize local = kShortAttentionLocal;
  if (kind == StridedKernel::Block) {
    shader = std::string("sdpa_block") + block->suffix;
    local = kBlockAttentionLocal;
  } else if (kind == StridedKernel::Tiled) {
    shader = std::string("sdpa_tiled") + tiled->suffix;
    local = kTiledAttentionLocal;
  } else if (kind == StridedKernel::Coop) {
    shader = coopmat_f16_base(g, "sdpa_coop") + coop->suffix;  // sdpa_coop_emu_* with COOPMAT_EMULATE
    local = kCoopAttentionLocal;
  }
  g.add_node(g.current_op(), variant(g, shader, q), local, tensors, [=](ComputeGraph& g, Node& node) {
    const SdpaLayout y = layout(g);
    const SdpaShape& x = y.x;
    if (kind == StridedKernel::Tiled && std::max(x.E, x.Ev) > tiled->max_d) {
      g.fail("head dims above the planned tiled kernel's");
    }
    if (kind == StridedKernel::Block && (x.S > kBlockAttentionMaxKeys || std::max(x.E, x.Ev) > block->max_d)) {
      g.fail("more keys or larger head dims than the planned block attention kernel's");
    }
    if (kind == StridedKernel::Short && x.S > kShortAttentionMaxKeys) {
      g.fail("more than " + std::to_string(kShortAttentionMaxKeys) + " keys for the planned short attention kernel");
    }
    if (kind == StridedKernel::Coop) {
      std::string unfit = coop_attention_unfit(x, *coop);
      if (unfit.empty() && !coop_layout_aligned(y)) unfit = "rows or offsets not multiples of 8 elements";
      if (!unfit.empty()) g.fail(unfit + " for the planned cooperative-matrix attention kernel");
    }
    const int64_t rows = x.L * x.group;  // of a KV head
    int64_t block_rows = kind == StridedKernel::Tiled ? tiled->rows
                         : kind == StridedKernel::Coop ? kCoopAttentionRows
                         : kind == StridedKernel::Block ? kBlockAttentionRows
                                                        : kShortAttentionMaxRows;
    while (kind == StridedKernel::Short && block_rows > 1 &&
           ceil_div(rows, block_rows) * x.kv_heads * x.batch < kSdpaTiledMinWorkgroups) {
      block_rows /= 2;
    }
    SdpaStridedParams p{};
    std::copy(y.q, y.q + 4, p.q_strides);
    std::copy(y.k, y.k + 4, p.k_strides);
    std::copy(y.v, y.v + 4, p.v_strides);
    std::copy(y.out, y.out + 4, p.out_strides);
    p.batch = static_cast<int32_t>(x.batch);
    p.heads = static_cast<int32_t>(x.heads);
    p.kv_heads = static_cast<int32_t>(x.kv_heads);
    p.group = static_cast<int32_t>(x.group);
    p.L = static_cast<int32_t>(x.L);
    p.S = static_cast<int32_t>(x.S);
    p.E = static_cast<int32_t>(x.E);
    p.Ev = static_cast<int32_t>(x.Ev);
    p.scale = sdpa_scale(has_scale, scale_arg, x.E);
    p.causal = causal;
    p.block_rows = static_cast<int32_t>(block_rows);
    node.set_params(p);
    const int64_t blocks = ceil_div(rows, block_rows);
    if (blocks * x.kv_heads * x.batch == 0 || x.Ev == 0) {
      node.groups = {0, 0, 0};
      return;
    }
    if (blocks > 65535 || x.kv_heads > 65535 || x.batch > 65535) {
      g.fail("more than 65535 blocks of query rows, heads or batches");
    }
    node.groups = {static_cast<uint32_t>(blocks), static_cast<uint32_t>(x.kv_heads), static_cast<uint32_t>(x.batch)};
  });
}

// The strided kernel for sdpa without a mask at these planned sizes: on a device with cooperative
// matrices, half attention over up to kCoopAttentionMaxKeys keys with head dims of multiples of 8 up
// to 128 (kCoopAttention's variants), coop; else tiled, from kSdpaTiledMinQueries queries and
// kSdpaTiledMinWorkgroups workgroups and head dims a tiled configuration holds; else on a GPU up to
// kBlockAttentionMaxKeys keys with head dims up to 128, from kBlockAttentionMinWorkgroups, block
// (benchmarks/results/vit_fp32_h200_2026-11-28.md); else short, up to kShortAttentionMaxKeys keys;
// else none (the row kernel). `forced` (the setting SDPA_KERNEL) takes
// one wherever it applies: "rows" none.
SdpaChoice choose_strided(ComputeGraph& g, const SdpaShape& planned, DType dtype, const std::string& forced) {
  if (forced == "rows") return {StridedKernel::None};
  const ChunkedAttention* coop = coop_attention_for(g, planned, dtype);
  if (coop && (forced.empty() || forced == "coop")) return {StridedKernel::Coop, nullptr, coop};
  const TiledAttention* tiled = tiled_attention_for(g, planned.E, planned.Ev);
  const int64_t blocks = tiled ? ceil_div(planned.L * planned.group, tiled->rows) : 0;
  // Smaller sizes after a resize fit the grid too.
  const bool grid_fits = tiled && std::max({blocks, planned.kv_heads, planned.batch}) <= 65535;
  const bool pays = planned.L >= kSdpaTiledMinQueries &&
                    blocks * planned.kv_heads * planned.batch >= kSdpaTiledMinWorkgroups;
  if (tiled && grid_fits && (forced == "tiled" || (forced.empty() && pays))) return {StridedKernel::Tiled, tiled, nullptr};
  const ChunkedAttention* block = block_attention_for(g, planned);
  const bool block_pays = g.context().info().type != "cpu" &&
                          ceil_div(planned.L * planned.group, kBlockAttentionRows) * planned.kv_heads * planned.batch >=
                              kBlockAttentionMinWorkgroups;
  if (block && (forced == "block" || (forced.empty() && block_pays))) {
    return {StridedKernel::Block, nullptr, nullptr, block};
  }
  if ((forced.empty() || forced == "short") && short_attention_fits(g, planned)) {
    return {StridedKernel::Short, nullptr, nullptr};
  }
  return {StridedKernel::None, nullptr, nullptr};
}

// scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
//                              is_causal=False, *, scale=None, enable_gqa=False)
// Without a mask, from kSdpaTiledMinQueries queries and kSdpaTiledMinWorkgroups workgroups (at the
// planned sizes) and head dims a tiled configuration holds: sdpa_tiled.glsl; else up to
// kShortAttentionMaxKeys keys: sdpa_short.glsl; else, or with a mask, a workgroup per query row
// (sdpa.glsl). The setting SDPA_KERNEL forces one (where it applies; else the row kernel).
void add_sdpa(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 9) g.fail("expected 8 arguments and 1 output");
  const int q = a[0], k = a[1], v = a[2], out = a[8];
  const int mask = g.is_null(a[3]) ? -1 : a[3];
  if (g.get_double(a[4]) != 0.0) g.fail("dropout_p must be 0 (inference)");
  const bool causal = g.get_bool(a[5]);
  const bool has_scale = !g.is_null(a[6]);
  const double scale_arg = has_scale ? g.get_double(a[6]) : 0.0;
  const bool gqa = g.get_bool(a[7]);
  require_float_same(g, {q, k, v, out});
  if (mask >= 0 && causal) g.fail("attn_mask and is_causal together are not supported");
  if (mask < 0) {
    const SdpaChoice choice =
        choose_strided(g, sdpa_shape(g, q, k, v, out, gqa), g.tensor(q).dtype, g.settings().sdpa_kernel);
    if (choice.kernel != StridedKernel::None) {
      add_sdpa_strided(g, choice, {out, q, k, v}, contiguous_layout(q, k, v, out, gqa), causal, has_scale,
                       scale_arg);
      return;
    }
  }
  std::string shader = "sdpa";
  if (mask >= 0 && is_float_dtype(g.tensor(mask).dtype)) require_float_same(g, {q, mask});
  std::vector<int> tensors{out, q, k, v};
  if (mask >= 0) {
    const DType md = g.tensor(mask).dtype;
    if (is_float_dtype(md)) {
      shader = "sdpa_float_mask";
    } else if (md == DType::Bool) {
      shader = "sdpa_bool_mask";
    } else {
      g.fail(std::string("attn_mask must be float or bool, not ") + dtype_name(md));
    }
    tensors.push_back(mask);
  }
  g.add_node(g.current_op(), variant(g, shader, q), kRowLocal, tensors, [=](ComputeGraph& g, Node& node) {
    const SdpaShape x = sdpa_shape(g, q, k, v, out, gqa);
    const int64_t rank = static_cast<int64_t>(x.lead.size()) + 2;
    SdpaParams p{};
    pack8(p.lead_sizes, x.lead);
    if (mask >= 0) {
      Sizes full = x.lead;
      full.push_back(x.L);
      full.push_back(x.S);
      const Tensor& tm = g.tensor(mask);
      if (tm.dim() > rank) g.fail("attn_mask has a higher rank than query");
      if (broadcast_sizes(g, tm.sizes, full) != full) g.fail("attn_mask " + sizes_str(tm.sizes) + " does not broadcast to " + sizes_str(full));
      const Sizes ms = broadcast_strides(tm, full);
      for (int64_t d = 0; d < 8; ++d) p.mask_strides[d] = d < rank - 2 ? static_cast<int32_t>(ms[d]) : 0;
      p.mask_stride_l = static_cast<int32_t>(ms[rank - 2]);
      p.mask_stride_s = static_cast<int32_t>(ms[rank - 1]);
    }
    p.rows = static_cast<int32_t>(numel_of(x.lead) * x.L);
    p.L = static_cast<int32_t>(x.L);
    p.S = static_cast<int32_t>(x.S);
    p.E = static_cast<int32_t>(x.E);
    p.Ev = static_cast<int32_t>(x.Ev);
    p.lead_rank = static_cast<int32_t>(rank - 2);
    p.heads = static_cast<int32_t>(std::max<int64_t>(x.heads, 1));
    p.group = static_cast<int32_t>(x.group);
    p.causal = causal;
    p.scale = sdpa_scale(has_scale, scale_arg, x.E);
    node.set_params(p);
    node.set_groups_1d(p.rows, 1);  // one workgroup per query row
  });
}

// The ops whose attention reads its operands in place (vkd_sdpa_qkv, vkd_sdpa_bthd): a strided kernel at
// the layout's planned sizes, the forced one where it applies (they have no row kernel: SDPA_KERNEL=rows
// is ignored); tensors: out, q, k, v. Up to kShortAttentionMaxKeys keys the short kernel always applies.
void add_sdpa_in_place(ComputeGraph& g, const SdpaLayoutOf& layout, std::vector<int> tensors, bool causal,
                       bool has_scale, double scale_arg) {
  const SdpaShape planned = layout(g).x;
  const std::string& forced = g.settings().sdpa_kernel;
  const DType dtype = g.tensor(tensors[1]).dtype;
  SdpaChoice choice = choose_strided(g, planned, dtype, forced == "rows" ? std::string() : forced);
  if (choice.kernel == StridedKernel::None) choice = choose_strided(g, planned, dtype, "");
  if (choice.kernel == StridedKernel::None) {
    g.fail("more than " + std::to_string(kShortAttentionMaxKeys) + " keys, and no tiled attention kernel fits");
  }
  add_sdpa_strided(g, choice, std::move(tensors), layout, causal, has_scale, scale_arg);
}

// et_vk.vkd_sdpa_qkv(qkv, heads, is_causal=False, scale=None): qkv [B, T, 3 * H * D] (q, k and v
// side by side per token) -> out [B, T, H, D] (backends/packed_attention.py). The strided kernels
// read q, k and v in place and write out in the layout the heads merge from (no transposes); up to
// kShortAttentionMaxKeys tokens (op_registry.py's check), so the short kernel always applies.
void add_sdpa_qkv(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 5) g.fail("expected 4 arguments and 1 output");
  const int qkv = a[0], out = a[4];
  const int64_t heads = g.get_int(a[1]);
  const bool causal = g.get_bool(a[2]);
  const bool has_scale = !g.is_null(a[3]);
  const double scale_arg = has_scale ? g.get_double(a[3]) : 0.0;
  require_float_same(g, {qkv, out});
  // Bounded so that 3 * heads (and the strides below) cannot overflow.
  if (heads < 1 || heads > INT32_MAX) g.fail("heads must be in [1, 2^31 - 1], got " + std::to_string(heads));
  auto layout = [=](ComputeGraph& g) {
    const Tensor& t = g.tensor(qkv);
    if (t.dim() != 3 || t.sizes[2] % (3 * heads) != 0) {
      g.fail("qkv " + sizes_str(t.sizes) + " must be [B, T, 3 * heads * D] (heads " + std::to_string(heads) + ")");
    }
    const int64_t B = t.sizes[0], T = t.sizes[1], D = t.sizes[2] / (3 * heads);
    if (D > kMaxHeadDim) g.fail("head dims above 256 are not supported");
    if (t.numel() > INT32_MAX) g.fail("too large for 32-bit indexing");
    g.tensor(out).sizes = {B, T, heads, D};
    SdpaLayout y{};
    y.x.lead = {B, heads};
    y.x.batch = B;
    y.x.heads = y.x.kv_heads = heads;
    y.x.group = 1;
    y.x.L = y.x.S = T;
    y.x.E = y.x.Ev = D;
    const int32_t row = static_cast<int32_t>(3 * heads * D), width = static_cast<int32_t>(heads * D);
    const int32_t d = static_cast<int32_t>(D);
    auto set = [](int32_t (&s)[4], int32_t batch, int32_t head, int32_t row, int32_t offset) {
      s[0] = batch;
      s[1] = head;
      s[2] = row;
      s[3] = offset;
    };
    set(y.q, static_cast<int32_t>(T) * row, d, row, 0);
    set(y.k, static_cast<int32_t>(T) * row, d, row, width);
    set(y.v, static_cast<int32_t>(T) * row, d, row, 2 * width);
    set(y.out, static_cast<int32_t>(T) * width, d, width, 0);
    return y;
  };
  add_sdpa_in_place(g, layout, {out, qkv, qkv, qkv}, causal, has_scale, scale_arg);
}

// et_vk.vkd_sdpa_bthd(q, k, v, is_causal=False, scale=None): q [B, T, H, E], k [B, S, KVH, E], v [B, S,
// KVH, Ev] -> out [B, T, H, Ev] (backends/packed_attention.py). The strided kernels read the heads in
// the projections' layout and write the one they merge from (no transposes); up to
// kShortAttentionMaxKeys keys (op_registry.py's check), so the short kernel always applies.
void add_sdpa_bthd(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 6) g.fail("expected 5 arguments and 1 output");
  const int q = a[0], k = a[1], v = a[2], out = a[5];
  const bool causal = g.get_bool(a[3]);
  const bool has_scale = !g.is_null(a[4]);
  const double scale_arg = has_scale ? g.get_double(a[4]) : 0.0;
  require_float_same(g, {q, k, v, out});
  auto layout = [=](ComputeGraph& g) {
    const Tensor &tq = g.tensor(q), &tk = g.tensor(k), &tv = g.tensor(v);
    if (tq.dim() != 4 || tk.dim() != 4 || tv.dim() != 4) g.fail("q, k and v must be [B, T, heads, D]");
    const int64_t B = tq.sizes[0], T = tq.sizes[1], H = tq.sizes[2], E = tq.sizes[3];
    const int64_t S = tk.sizes[1], KVH = tk.sizes[2], Ev = tv.sizes[3];
    if (tk.sizes[0] != B || tv.sizes[0] != B || tv.sizes[1] != S || tv.sizes[2] != KVH || tk.sizes[3] != E) {
      g.fail("k " + sizes_str(tk.sizes) + " and v " + sizes_str(tv.sizes) + " do not fit q " + sizes_str(tq.sizes));
    }
    if (KVH < 1 || H % KVH != 0) g.fail("q's heads must be a multiple of k's");
    if (E > kMaxHeadDim || Ev > kMaxHeadDim) g.fail("head dims above 256 are not supported");
    if (S > kShortAttentionMaxKeys) g.fail("more than " + std::to_string(kShortAttentionMaxKeys) + " keys");
    if (std::max({tq.numel(), tk.numel(), tv.numel(), B * T * H * Ev}) > INT32_MAX) g.fail("too large for 32-bit indexing");
    g.tensor(out).sizes = {B, T, H, Ev};
    SdpaLayout y{};
    y.x.lead = {B, H};
    y.x.batch = B;
    y.x.heads = H;
    y.x.kv_heads = KVH;
    y.x.group = H / KVH;
    y.x.L = T;
    y.x.S = S;
    y.x.E = E;
    y.x.Ev = Ev;
    auto set = [](int32_t (&s)[4], int64_t rows, int64_t heads, int64_t dim) {
      s[0] = static_cast<int32_t>(rows * heads * dim);  // batch
      s[1] = static_cast<int32_t>(dim);                 // head
      s[2] = static_cast<int32_t>(heads * dim);         // row
      s[3] = 0;
    };
    set(y.q, T, H, E);
    set(y.k, S, KVH, E);
    set(y.v, S, KVH, Ev);
    set(y.out, T, H, Ev);
    return y;
  };
  add_sdpa_in_place(g, layout, {out, q, k, v}, causal, has_scale, scale_arg);
}

// et_vk.vkd_sdpa_kv_cache(q, k_cache, v_cache, input_pos, scale=None): q [B, T, H, E], caches
// [B, S, KVH, E] and [B, S, KVH, Ev], input_pos [T] int; query t sees cache entries 0..input_pos[t]
// (backends/attention_fusion.py). The positions stay on the GPU: the kernels read them, so the
// work follows the context, not the cache length, and a decode step replays unchanged.
// Two paths, chosen by T whenever the sizes change:
// - T <= kSplitMaxQueries (decode): the keys 0..S-1 split into chunks, a workgroup per chunk,
//   query and group of heads sharing a KV head (sdpa_kv_split.glsl), then a reduce per query
//   row (sdpa_kv_reduce.glsl). The setting SDPA_KV_ONE_PASS takes one dispatch instead, the
//   last chunk to finish combining them (the split kernel's combine variant).
// - more (prefill): blocks of query rows of one KV head stream the key and value tiles through
//   shared memory (sdpa_kv_tiled.glsl); where no configuration fits the head dims or the
//   device's shared memory, a workgroup per row (sdpa_kv_cache.glsl).
constexpr int64_t kSplitMaxQueries = 16;
// sdpa_kv_split.glsl's bounds (its WG, MAX_HEADS, KEY_PER_INVOCATION, VALUE_PER_INVOCATION,
// QUERY_VEC4S, SCORES, OUT_PER_INVOCATION): a chunk is a power of two from 4 keys to the
// workgroup size whose keys' and values' 4-vectors fit 4 per invocation; the chunk, the fewest
// keys that give about kSplitTargetGroups workgroups over the whole cache, or the setting
// SDPA_KV_CHUNK (rounded up to a power of two and down to what fits). A short context uses a
// fraction of them: the chunks past the position exit at once.
constexpr LocalSize kSplitLocal{128, 1, 1};
constexpr int64_t kSplitMaxHeads = 8, kSplitKeyPerInvocation = 4, kSplitValuePerInvocation = 4;
constexpr int64_t kSplitQueryVec4s = 256, kSplitScores = 512, kSplitOutPerInvocation = 4;
constexpr int64_t kSplitMinChunk = 4, kSplitTargetGroups = 256;
// sdpa_kv_reduce.glsl's WG.
constexpr LocalSize kReduceLocal{128, 1, 1};
// The op's tensors and scale (add_sdpa_kv_cache's arguments).
struct SdpaKvArgs {
  int q, k, v, pos, out;
  bool has_scale;
  double scale;
};

// The parameters for the current sizes (all kernels read the same block); sets the output's sizes.
SdpaKvCacheParams sdpa_kv_params(ComputeGraph& g, const SdpaKvArgs& x) {
  const Tensor& tq = g.tensor(x.q);
  const Tensor& tk = g.tensor(x.k);
  const Tensor& tv = g.tensor(x.v);
  const Tensor& tp = g.tensor(x.pos);
  if (tq.dim() != 4 || tk.dim() != 4 || tv.dim() != 4 || tp.dim() != 1) {
    g.fail("q, k_cache and v_cache must have rank 4 and input_pos rank 1; got " + sizes_str(tq.sizes) + ", " +
           sizes_str(tk.sizes) + ", " + sizes_str(tv.sizes) + " and " + sizes_str(tp.sizes));
  }
  const int64_t B = tq.sizes[0], T = tq.sizes[1], H = tq.sizes[2], E = tq.sizes[3];
  const int64_t S = tk.sizes[1], KVH = tk.sizes[2], Ev = tv.sizes[3];
  if (tk.sizes[0] != B || tv.sizes[0] != B || tv.sizes[1] != S || tv.sizes[2] != KVH || tk.sizes[3] != E ||
      tp.sizes[0] != T || KVH == 0 || H % KVH != 0) {
    g.fail("q " + sizes_str(tq.sizes) + " [B, T, H, E], k_cache " + sizes_str(tk.sizes) + " [B, S, KVH, E], v_cache " +
           sizes_str(tv.sizes) + " [B, S, KVH, Ev] and input_pos " + sizes_str(tp.sizes) + " [T] do not fit " +
           "(H a multiple of KVH)");
  }
  if (E > kMaxHeadDim || Ev > kMaxHeadDim) g.fail("head dims above 256 are not supported");
  if (B * S * KVH * std::max(E, Ev) > INT32_MAX || B * T * H * std::max(E, Ev) > INT32_MAX) {
    g.fail("too large for 32-bit indexing");
  }
  SdpaKvCacheParams p{};
  p.batch = static_cast<int32_t>(B);
  p.queries = static_cast<int32_t>(T);
  p.heads = static_cast<int32_t>(H);
  p.group = static_cast<int32_t>(H / KVH);
  p.cache_len = static_cast<int32_t>(S);
  p.kv_heads = static_cast<int32_t>(KVH);
  p.index_words = index_words(tp);
  p.E = static_cast<int32_t>(E);
  p.Ev = static_cast<int32_t>(Ev);
  p.scale = sdpa_scale(x.has_scale, x.scale, E);
  g.tensor(x.out).sizes = Sizes{B, T, H, Ev};
  return p;
}

// What et_vk.vkd_sdpa_rope_kv's split kernel does itself: the rotary embedding of q (x.q: the raw
// rows) and of the step's k, and the cache writes of k and v (x.k and x.v: the outputs aliasing
// the caches). k and v [B, T, KVH, E], cos and sin [T, 1, E].
struct SplitRope {
  int k, v, cos, sin;
};

// The sizes the rotary embedding needs beside sdpa_kv_params' (E == Ev, even).
void check_split_rope(ComputeGraph& g, const SdpaKvArgs& x, const SplitRope& r) {
  const Sizes& qs = g.tensor(x.q).sizes;
  const Sizes& ks = g.tensor(r.k).sizes;
  const Sizes& cs = g.tensor(x.k).sizes;
  const Sizes& ts = g.tensor(r.cos).sizes;
  const bool fits = qs.size() == 4 && ks.size() == 4 && cs.size() == 4 && ts.size() == 3 &&
                    g.tensor(r.v).sizes == ks && g.tensor(r.sin).sizes == ts && ks[0] == qs[0] && ks[1] == qs[1] &&
                    ks[2] == cs[2] && ks[3] == qs[3] && g.tensor(x.v).sizes == cs && ts[0] == qs[1] && ts[1] == 1 &&
                    ts[2] == qs[3] && qs[3] % 2 == 0;
  if (!fits) {
    g.fail("q " + sizes_str(qs) + " [B, T, H, D], k and v " + sizes_str(ks) + " [B, T, KVH, D], cos and sin " +
           sizes_str(ts) + " [T, 1, D] and the caches " + sizes_str(cs) + " [B, S, KVH, D] do not fit (D even)");
  }
}

// T <= kSplitMaxQueries: sdpa_kv_split.glsl then sdpa_kv_reduce.glsl (the default), or
// (one_pass) the split kernel's variant whose last chunk combines the others through a counter per
// (b, t, group of heads); the chunk from the fixed cache and head sizes. With `rope`, the kernel's
// variant that ropes q and k and writes the step's cache rows.
void add_sdpa_kv_split(ComputeGraph& g, const SdpaKvArgs& x, const SdpaKvCacheParams& planned, int64_t split_queries,
                       bool one_pass, std::optional<SplitRope> rope = std::nullopt) {
  const int64_t wg = kSplitLocal[0];
  const int64_t E4 = ceil_div(planned.E, 4), Ev4 = ceil_div(planned.Ev, 4);
  auto chunk_fits = [wg, E4, Ev4](int64_t chunk) {
    return chunk <= wg && chunk * E4 <= kSplitKeyPerInvocation * wg && chunk * Ev4 <= kSplitValuePerInvocation * wg;
  };
  const std::optional<int64_t> forced = g.settings().sdpa_kv_chunk;
  const int64_t wanted = forced ? *forced
                                : ceil_div(int64_t{planned.cache_len} * planned.batch * planned.kv_heads, kSplitTargetGroups);
  int64_t chunk = kSplitMinChunk;
  while (chunk < wanted && chunk_fits(2 * chunk)) chunk *= 2;
  const int64_t chunks = std::max<int64_t>(1, ceil_div(planned.cache_len, chunk));
  // Query heads per workgroup: a divisor of the current group (H / KVH, which a resize can change), so
  // that all of a workgroup's heads share one KV head.
  auto split_heads_of = [chunk](const SdpaKvCacheParams& p) {
    const int64_t E4 = ceil_div(p.E, 4), Ev4 = ceil_div(p.Ev, 4);
    int64_t heads = 1;
    for (int64_t d = 1; d <= std::min<int64_t>(p.group, kSplitMaxHeads); ++d) {
      if (p.group % d == 0 && d * E4 <= kSplitQueryVec4s && d * chunk <= kSplitScores &&
          d * Ev4 <= kSplitOutPerInvocation * kSplitLocal[0]) {
        heads = d;
      }
    }
    return heads;
  };
  const int64_t part_row = chunks * (1 + Ev4) * 4;  // floats per query row
  const int64_t part_max = std::max<int64_t>(1, planned.batch * split_queries * planned.heads * part_row);
  if (part_max > INT32_MAX) g.fail("too large for 32-bit indexing");
  const int part = g.add_scratch_tensor(DType::Float32, {part_max});
  auto update = [=](ComputeGraph& g, Node& node, bool reduce) {
    SdpaKvCacheParams p = sdpa_kv_params(g, x);
    if (rope) check_split_rope(g, x, *rope);
    const int64_t B = p.batch, T = p.queries, H = p.heads;
    const bool split = T <= kSplitMaxQueries;
    // The chunk, from the upper bounds, holds for smaller sizes; so does the part's upper bound.
    const int64_t now_chunks = std::max<int64_t>(1, ceil_div(p.cache_len, chunk));
    g.tensor(part).sizes = {split ? std::max<int64_t>(1, B * T * H * now_chunks * (1 + ceil_div(p.Ev, 4)) * 4) : 1};
    p.chunk = static_cast<int32_t>(chunk);
    p.chunks = static_cast<int32_t>(now_chunks);
    const int64_t split_heads = split_heads_of(p);
    p.split_heads = static_cast<int32_t>(split_heads);
    p.vec4_loads = p.E % 4 == 0 && p.Ev % 4 == 0;
    node.set_params(p);
    if (B * T * H == 0 || !split) {
      node.groups = {0, 0, 0};
    } else if (!reduce) {
      if (B * T > 65535) g.fail("more than 65535 query rows");
      node.groups = {static_cast<uint32_t>(now_chunks), static_cast<uint32_t>(H / split_heads), static_cast<uint32_t>(B * T)};
    } else {
      node.set_groups_1d(B * T * H, 1);  // one workgroup per query row
    }
  };
  std::vector<int> split_tensors{part, x.q, x.k, x.v, x.pos};
  if (one_pass) {
    // A counter per (b, t, group of heads): at most one per query row.
    split_tensors.push_back(x.out);
    split_tensors.push_back(
        g.add_zeroed_tensor(DType::Int32, {std::max<int64_t>(1, planned.batch * split_queries * planned.heads)}));
  }
  if (rope) split_tensors.insert(split_tensors.end(), {rope->k, rope->v, rope->cos, rope->sin});
  const std::string base = std::string(one_pass ? "sdpa_kv_split_combine" : "sdpa_kv_split") + (rope ? "_rope" : "");
  const std::string split_shader = with_fault_slot(g, split_tensors, base, base + "_nocheck");
  g.add_node(g.current_op(), variant(g, split_shader, x.q), kSplitLocal, split_tensors,
             [update](ComputeGraph& g, Node& node) { update(g, node, false); });
  if (one_pass) return;
  g.add_node(g.current_op(), variant(g, "sdpa_kv_reduce", x.q), kReduceLocal, {x.out, part, x.pos},
             [update](ComputeGraph& g, Node& node) { update(g, node, true); });
}

// T > kSplitMaxQueries (prefill): the tiled kernel, the smallest configuration that holds the head
// dims and fits the shared memory, else a workgroup per row.
void add_sdpa_kv_many(ComputeGraph& g, const SdpaKvArgs& x, const SdpaKvCacheParams& planned) {
  const TiledAttention* tiled = tiled_attention_for(g, planned.E, planned.Ev);
  auto update = [=](ComputeGraph& g, Node& node) {
    const SdpaKvCacheParams p = sdpa_kv_params(g, x);
    const int64_t B = p.batch, T = p.queries, H = p.heads;
    node.set_params(p);
    if (B * T * H == 0 || T <= kSplitMaxQueries) {
      node.groups = {0, 0, 0};
    } else if (!tiled) {
      node.set_groups_1d(B * T * H, 1);  // one workgroup per query row
    } else {
      const int64_t blocks = (T * p.group + tiled->rows - 1) / tiled->rows;
      if (blocks > 65535 || B > 65535) g.fail("more than 65535 blocks of query rows");
      node.groups = {static_cast<uint32_t>(blocks), static_cast<uint32_t>(p.kv_heads), static_cast<uint32_t>(B)};
    }
  };
  std::vector<int> tensors{x.out, x.q, x.k, x.v, x.pos};
  if (tiled) {
    const std::string checked = std::string("sdpa_kv_tiled") + tiled->suffix;
    const std::string shader = with_fault_slot(g, tensors, checked, checked + "_nocheck");
    g.add_node(g.current_op(), variant(g, shader, x.q), kTiledAttentionLocal, tensors, update);
  } else {
    const std::string shader = with_fault_slot(g, tensors, "sdpa_kv_cache", "sdpa_kv_cache_nocheck");
    g.add_node(g.current_op(), variant(g, shader, x.q), kRowLocal, tensors, update);
  }
}

void add_sdpa_kv_cache(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 6) g.fail("expected 5 arguments and 1 output");
  const bool has_scale = !g.is_null(a[4]);
  const SdpaKvArgs x{a[0], a[1], a[2], a[3], a[5], has_scale, has_scale ? g.get_double(a[4]) : 0.0};
  require_float_same(g, {x.q, x.k, x.v, x.out});
  require_positions(g, x.pos);
  const SdpaKvCacheParams planned = sdpa_kv_params(g, x);  // at the upper bounds
  const int64_t max_queries = g.tensor(x.q).max_sizes[1];
  const int64_t split_queries = std::min(max_queries, kSplitMaxQueries);
  add_sdpa_kv_split(g, x, planned, split_queries, g.settings().sdpa_kv_one_pass);
  if (max_queries > kSplitMaxQueries) add_sdpa_kv_many(g, x, planned);
}

// et_vk.vkd_sdpa_rope_kv(q, k, v, cos, sin, k_cache, v_cache, input_pos, scale=None) -> (out, k_cache,
// v_cache): the rotary embedding of q and k, the cache writes of rope(k) and v at input_pos (in
// place: the caches are state) and the attention of vkd_sdpa_kv_cache over the updated caches
// (backends/rope_fusion.py). Up to kSplitMaxQueries queries (decode) it is the split kernel's rope
// variant and the reduce: no dispatch of its own for the rope and the writes, so a decode step's
// attention layer waits on two dispatches after the q/k/v projection, not three. Prefill: the
// rope + cache-write dispatch (glsl/rope_kv_update.glsl, rope(q) into a scratch tensor), then the
// prefill attention kernel.
void add_sdpa_rope_kv(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 12) g.fail("expected 9 arguments and 3 outputs");
  const int q = a[0], k = a[1], v = a[2], cos = a[3], sin = a[4], k_cache = a[5], v_cache = a[6], pos = a[7];
  const int out = a[9], k_out = a[10], v_out = a[11];
  const bool has_scale = !g.is_null(a[8]);
  require_float_same(g, {q, k, v, cos, sin, k_cache, v_cache, out, k_out, v_out});
  require_positions(g, pos);
  g.alias_state(k_out, k_cache);
  g.alias_state(v_out, v_cache);
  const SdpaKvArgs x{q, k_out, v_out, pos, out, has_scale, has_scale ? g.get_double(a[8]) : 0.0};
  const SplitRope rope{k, v, cos, sin};
  const SdpaKvCacheParams planned = sdpa_kv_params(g, x);  // at the upper bounds
  check_split_rope(g, x, rope);
  const int64_t max_queries = g.tensor(q).max_sizes[1];
  add_sdpa_kv_split(g, x, planned, std::min(max_queries, kSplitMaxQueries), g.settings().sdpa_kv_one_pass, rope);
  if (max_queries <= kSplitMaxQueries) return;
  // Prefill: rope(q) lives from the rope dispatch to the attention's, in the scratch storage (which
  // the split's partial results take only when this path does not run).
  const int q_rot = g.add_scratch_tensor(g.tensor(q).dtype, g.tensor(q).max_sizes);
  add_rope_kv_node(g, {q, k, v, cos, sin, k_cache, v_cache, pos, q_rot, k_out, v_out},
                   [](int64_t queries) { return queries > kSplitMaxQueries; });
  add_sdpa_kv_many(g, SdpaKvArgs{q_rot, k_out, v_out, pos, out, x.has_scale, x.scale}, planned);
}

// rms_norm(input, normalized_shape, weight=None, eps=None)
void add_rms_norm(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 5) g.fail("expected 4 arguments and 1 output");
  const int in = a[0], out = a[4];
  const int weight = g.is_null(a[2]) ? -1 : a[2];
  require_float_same(g, {in, out, weight});
  const IntList shape = g.get_int_list(a[1]);
  // PyTorch's default: the machine epsilon of the compute type.
  const float eps = g.is_null(a[3]) ? FLT_EPSILON : static_cast<float>(g.get_double(a[3]));
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t D = numel_of(shape);
  if (weight >= 0 && g.tensor(weight).numel() != D) g.fail("weight must have normalized_shape");
  // One workgroup per row, about two elements (4-vectors where D % 4 == 0) per invocation: a
  // power of two (the shared-memory reduction needs one) from 32 up to 512 or the device's limit.
  const bool vec4 = D % 4 == 0;
  const int64_t units = vec4 ? D / 4 : D;
  uint32_t width = 32;
  while (2 * width <= std::min<uint32_t>(512, g.context().info().max_workgroup_invocations) &&
         2 * static_cast<int64_t>(width) < units) {
    width *= 2;
  }
  const LocalSize local{width, 1, 1};
  g.add_node(g.current_op(), variant(g, vec4 ? "rms_norm_vec4" : "rms_norm", in), local,
             {out, in, weight >= 0 ? weight : in},
             [=](ComputeGraph& g, Node& node) {
               const Tensor& x = g.tensor(in);
               if (nd == 0 || nd > x.dim()) g.fail("normalized_shape " + sizes_str(shape) + " does not fit the input");
               for (int64_t i = 0; i < nd; ++i) {
                 if (x.sizes[x.dim() - nd + i] != shape[i]) {
                   g.fail("normalized_shape " + sizes_str(shape) + " does not match input " + sizes_str(x.sizes));
                 }
               }
               g.tensor(out).sizes = x.sizes;
               const int64_t rows = D == 0 ? 0 : x.numel() / D;
               node.set_params(RmsNormParams{static_cast<int32_t>(rows), static_cast<int32_t>(D), weight >= 0, eps});
               node.set_groups_1d(rows, 1);  // one workgroup per row
             });
}

// et_vk.vkd_rope(x, cos, sin): x [..., T, D] with cos and sin [T, D], or x [..., T, H, D] with cos and
// sin [T, 1, D] (backends/rope_fusion.py).
void add_rope(ComputeGraph& g, const OpArgs& a) {
  const int x = a.at(0), cos = a.at(1), sin = a.at(2), out = a.back();
  require_float_same(g, {out, x, cos, sin});
  g.add_node(g.current_op(), variant(g, "rope", x), kLocal1D, {out, x, cos, sin},
             [=](ComputeGraph& g, Node& node) {
               const Tensor& t = g.tensor(x);
               const Sizes& c = g.tensor(cos).sizes;
               const int64_t rank = t.dim();
               const bool per_row = c.size() == 2 && rank >= 2 && c[0] == t.sizes[rank - 2];
               const bool per_head = c.size() == 3 && rank >= 3 && c[0] == t.sizes[rank - 3] && c[1] == 1;
               if ((!per_row && !per_head) || g.tensor(sin).sizes != c || c.back() != t.sizes[rank - 1] ||
                   c.back() % 2 != 0) {
                 g.fail("x " + sizes_str(t.sizes) + " needs cos and sin [T, D] (x [..., T, D]) or [T, 1, D] " +
                        "(x [..., T, H, D]), D even; got " + sizes_str(c) + " and " + sizes_str(g.tensor(sin).sizes));
               }
               g.tensor(out).sizes = t.sizes;
               node.set_params(RopeParams{static_cast<int32_t>(t.numel()), static_cast<int32_t>(c.back()),
                                          static_cast<int32_t>(std::max<int64_t>(c[0], 1)),
                                          static_cast<int32_t>(per_head ? std::max<int64_t>(t.sizes[rank - 2], 1) : 1)});
               node.set_groups_1d(t.numel(), kLocal1D[0]);
             });
}

}  // namespace

VKD_REGISTER_OPS(register_attention_ops) {
  register_op("et_vk.vkd_rope.default", add_rope);
  register_op("aten.scaled_dot_product_attention.default", add_sdpa);
  register_op("et_vk.vkd_sdpa_qkv.default", add_sdpa_qkv);
  register_op("et_vk.vkd_sdpa_bthd.default", add_sdpa_bthd);
  register_op("et_vk.vkd_sdpa_kv_cache.default", add_sdpa_kv_cache);
  register_op("et_vk.vkd_sdpa_rope_kv.default", add_sdpa_rope_kv);
  register_op("aten.rms_norm.default", add_rms_norm);
}

}  // namespace vkd
