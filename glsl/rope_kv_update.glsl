// dtypes: f32 f16
// variant rope_kv_update: CHECKED=1
// variant rope_kv_update_nocheck: CHECKED=0
// Rotary embedding of q and k and the KV-cache writes of one attention layer, one dispatch
// (quant/library.py's vkd_rope_kv_update): q [B, T, H, D] -> q_out = rope(q); k, v
// [B, T, KVH, D] -> rope(k) and v written into the caches [B, S, KVH, D] at row input_pos[t]
// of dim 1. cos and sin are [T, 1, D] (rotate-half layout, as glsl/rope.glsl). One invocation
// per rotation pair (d, d + D/2) of one head row of q, k or v, so each element is read once.
// The positions are int32 or int64, read as words (READ_INDEX); a position outside [0, S) is a
// fault (fault.glslh) and that row is not written, so no write leaves the cache.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer QOut { T q_out[]; };
// The caches: state, written in place (their bindings are writes for the barrier placement).
layout(set = 0, binding = 1) writeonly buffer KCache { T k_cache[]; };
layout(set = 0, binding = 2) writeonly buffer VCache { T v_cache[]; };
layout(set = 0, binding = 3) readonly buffer Q { T q_data[]; };
layout(set = 0, binding = 4) readonly buffer K { T k_data[]; };
layout(set = 0, binding = 5) readonly buffer V { T v_data[]; };
layout(set = 0, binding = 6) readonly buffer Cos { T cos_data[]; };
layout(set = 0, binding = 7) readonly buffer Sin { T sin_data[]; };
layout(set = 0, binding = 8) readonly buffer Idx { int idx[]; };
#define FAULT_BINDING 9
#include "fault.glslh"
// params-struct: RopeKvUpdateParams
layout(set = 0, binding = PARAMS_BINDING) uniform Params {
  int pairs;        // B * T * (H + 2 KVH) * D / 2: the invocations
  int half_dim;     // D / 2
  int heads;        // H
  int kv_heads;     // KVH
  int queries;      // T
  int cache_len;    // S
  int index_words;  // per position (2: int64 storage)
} p;

void main() {
  const int i = int(flat_index());
  if (i >= p.pairs) return;
  const int d = i % p.half_dim;
  const int rows_per_token = p.heads + 2 * p.kv_heads;
  const int row = i / p.half_dim;
  const int head = row % rows_per_token;
  const int bt = row / rows_per_token;  // b * T + t
  const int t = bt % p.queries;
  const int D = 2 * p.half_dim;
  const int c = t * D + d;  // cos/sin [T, 1, D]: the pair's first element

  if (head < p.heads) {
    const int at = (bt * p.heads + head) * D + d;
    const float x1 = float(q_data[at]), x2 = float(q_data[at + p.half_dim]);
    q_out[at] = T(x1 * float(cos_data[c]) - x2 * float(sin_data[c]));
    q_out[at + p.half_dim] = T(x2 * float(cos_data[c + p.half_dim]) + x1 * float(sin_data[c + p.half_dim]));
    return;
  }
  int position, hi;
  READ_INDEX(idx, t, p.index_words, position, hi);
  if (!index_fits(position, hi) || position < 0 || position >= p.cache_len) {
#if CHECKED
    report_fault_words(FAULT_INDEX, 1u, uint(position), uint(hi), uint(p.cache_len), 0u);
#endif
    return;
  }
  const int b = bt / p.queries;
  const bool is_k = head < p.heads + p.kv_heads;
  const int kv_head = head - p.heads - (is_k ? 0 : p.kv_heads);
  const int src = (bt * p.kv_heads + kv_head) * D + d;
  const int dst = ((b * p.cache_len + position) * p.kv_heads + kv_head) * D + d;
  if (is_k) {
    const float x1 = float(k_data[src]), x2 = float(k_data[src + p.half_dim]);
    k_cache[dst] = T(x1 * float(cos_data[c]) - x2 * float(sin_data[c]));
    k_cache[dst + p.half_dim] = T(x2 * float(cos_data[c + p.half_dim]) + x1 * float(sin_data[c + p.half_dim]));
  } else {
    v_cache[dst] = v_data[src];
    v_cache[dst + p.half_dim] = v_data[src + p.half_dim];
  }
}
