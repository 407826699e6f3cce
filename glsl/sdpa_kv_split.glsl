// dtypes: f32 f16
// variant sdpa_kv_split: CHECKED=1 COMBINE=0 ROPE=0
// variant sdpa_kv_split_nocheck: CHECKED=0 COMBINE=0 ROPE=0
// variant sdpa_kv_split_combine: CHECKED=1 COMBINE=1 ROPE=0
// variant sdpa_kv_split_combine_nocheck: CHECKED=0 COMBINE=1 ROPE=0
// variant sdpa_kv_split_rope: CHECKED=1 COMBINE=0 ROPE=1
// variant sdpa_kv_split_rope_nocheck: CHECKED=0 COMBINE=0 ROPE=1
// variant sdpa_kv_split_combine_rope: CHECKED=1 COMBINE=1 ROPE=1
// variant sdpa_kv_split_combine_rope_nocheck: CHECKED=0 COMBINE=1 ROPE=1
// Attention over a KV cache for few queries (decode), split along the keys (flash decoding):
// runtime/ops/attention.cpp's path for up to 16 queries. Workgroup (c, hb, b * T + t) takes keys
// c * chunk .. c * chunk + chunk - 1 (those up to pos[t]) for the split_heads query heads
// hb * split_heads .. that share one KV head, so each key and value row is read once for them
// all, and writes per head its chunk's score max m, sum l = sum_j exp(s_j - m) and
// un-normalized output sum_j exp(s_j - m) v_j into part [B * T * H, chunks, 1 + ceil(Ev / 4)]
// 4-vectors ((m, l, 0, 0) first). A chunk past pos[t] writes nothing.
// Then (the default, COMBINE=0) sdpa_kv_reduce.glsl combines the live chunks, or (COMBINE=1, the
// setting SDPA_KV_ONE_PASS) each live chunk counts itself done on the (b, t, hb) counter and the
// last of them combines them all:
//   M = max_c m_c, out = sum_c exp(m_c - M) acc_c / sum_c exp(m_c - M) l_c
// and returns the counter to 0, so that the next execute (a replay) starts from zeros.
// The kernel is a chain of latencies, not of bandwidth (a chunk is a few KiB), so it has one
// round of global loads after the position's: every invocation's key, value and query 4-vectors
// at once, the keys kept in registers (key j over WG / chunk neighbouring invocations, each a
// dot product part per head, summed through shared memory), and 4 barriers. (Issuing them with
// the position's, before a chunk knows whether it is live, measured the same on the H100.) Each
// output 4-vector's invocation takes its head's chunk maximum and weights from the scores itself
// (16 redundant exps per key at head dim 64, where a reduction across the workgroup would cost
// barriers).
// Where E and Ev are multiples of 4 (p.vec4_loads; every row then starts at a multiple of 4
// elements) the rows are read as 4-vectors, else the same 4-vectors element by element (a
// uniform branch: a resize may change the head dims).
// Positions are int32 or int64, read as words (READ_INDEX in common.glslh). A position
// outside [0, S) is a fault (fault.glslh); its rows get zeros (the reduce, or here chunk 0).
// ROPE=1 (et_vk.vkd_sdpa_rope_kv: the rotary embedding and the cache writes of the step in this
// dispatch, not one of their own before it): q, k and v are the projections' raw rows ([B, T, H,
// E] and [B, T, KVH, E]), cos and sin [T, 1, E] (rotate-half). Each workgroup ropes its queries as it
// loads them; a key or value at a position some query t' of this step writes (the last such t',
// as index_put's writes in order) comes from row t' of k (roped) and v instead of the cache, and
// the workgroup of query t' and the first head block of the KV head, whose chunk holds pos[t'],
// writes them into the caches. No other workgroup reads or writes that cache row, so the
// dispatch needs no barrier inside; the caches' bindings are writes, which orders the next
// reader after it. Roped values are rounded to the storage type (T) before use, as the separate
// rope kernel stored them.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

// Bounds the host keeps (runtime/ops/attention.cpp: kSplit*): the workgroup size (a chunk of
// keys is a power of two that divides it), split_heads, chunk * ceil(E / 4) and chunk *
// ceil(Ev / 4) (4-vectors per invocation: KEY_PER_INVOCATION, VALUE_PER_INVOCATION),
// split_heads * ceil(E / 4), split_heads * chunk and split_heads * ceil(Ev / 4). 14 KiB of
// shared memory, under the 16 KiB of small GPUs.
#define WG 128
#define MAX_HEADS 8
#define KEY_PER_INVOCATION 4
#define VALUE_PER_INVOCATION 4
#define QUERY_VEC4S 256
#define SCORES 512
#define OUT_PER_INVOCATION 4
// (key, 4 heads) pairs per invocation: chunk * ceil(MAX_HEADS / 4) over WG, the chunk at most WG.
#define PAIRS_PER_INVOCATION (MAX_HEADS / 4)
// The combine's chunks per round of loads of each output.
#define COMBINE_STEP 16

#if COMBINE
// Written by every live chunk and read by the last: coherent, so that the reads see the other
// workgroups' writes (made visible by memoryBarrierBuffer before the count).
layout(set = 0, binding = 0) coherent buffer Part { vec4 part4[]; };
#else
layout(set = 0, binding = 0) writeonly buffer Part { vec4 part4[]; };
#endif
layout(set = 0, binding = 1) readonly buffer Q { T q_data[]; };
layout(set = 0, binding = 1) readonly buffer Q4 { T4 q4[]; };
#if ROPE
// The caches: the step's rows are written here (their bindings are writes for the barriers).
#define CACHE_ACCESS
#else
#define CACHE_ACCESS readonly
#endif
layout(set = 0, binding = 2) CACHE_ACCESS buffer K { T k_data[]; };
layout(set = 0, binding = 2) CACHE_ACCESS buffer K4 { T4 k4[]; };
layout(set = 0, binding = 3) CACHE_ACCESS buffer V { T v_data[]; };
layout(set = 0, binding = 3) CACHE_ACCESS buffer V4 { T4 v4[]; };
layout(set = 0, binding = 4) readonly buffer Pos { int pos_data[]; };
#if COMBINE
layout(set = 0, binding = 5) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 5) writeonly buffer Out4 { T4 out4[]; };
layout(set = 0, binding = 6) coherent buffer Counter { int counter[]; };
#define ROPE_BINDING 7
#else
#define ROPE_BINDING 5
#endif
#if ROPE
layout(set = 0, binding = ROPE_BINDING) readonly buffer KNew { T knew_data[]; };
layout(set = 0, binding = ROPE_BINDING) readonly buffer KNew4 { T4 knew4[]; };
layout(set = 0, binding = ROPE_BINDING + 1) readonly buffer VNew { T vnew_data[]; };
layout(set = 0, binding = ROPE_BINDING + 1) readonly buffer VNew4 { T4 vnew4[]; };
layout(set = 0, binding = ROPE_BINDING + 2) readonly buffer Cos { T cos_data[]; };
layout(set = 0, binding = ROPE_BINDING + 2) readonly buffer Cos4 { T4 cos4[]; };
layout(set = 0, binding = ROPE_BINDING + 3) readonly buffer Sin { T sin_data[]; };
layout(set = 0, binding = ROPE_BINDING + 3) readonly buffer Sin4 { T4 sin4[]; };
#define FAULT_BINDING (ROPE_BINDING + 4)
#else
#define FAULT_BINDING ROPE_BINDING
#endif
#include "fault.glslh"
#include "sdpa_kv_params.glslh"
#if COMBINE
#include "last_arrival.glslh"
#endif

shared vec4 q_s[QUERY_VEC4S];                  // [head, E / 4]: the scaled queries
shared vec4 kv_s[WG * VALUE_PER_INVOCATION];   // [head / 4, invocation]: dot parts; then [key, Ev / 4]: values
shared float score_s[SCORES];                  // [head, key]

// The 4-vector e4 of the row of `len` elements at element `base` (zeros past the row's end).
#define DEFINE_LOAD4(name, data, data4)                                                         \
  vec4 name(int base, int e4, int len) {                                                        \
    if (p.vec4_loads != 0) return vec4(data4[(base >> 2) + e4]);                                \
    vec4 r = vec4(0.0);                                                                         \
    [[unroll]] for (int i = 0; i < 4; ++i) if (e4 * 4 + i < len) r[i] = float(data[base + e4 * 4 + i]); \
    return r;                                                                                   \
  }
DEFINE_LOAD4(load4_q, q_data, q4)
DEFINE_LOAD4(load4_k, k_data, k4)
DEFINE_LOAD4(load4_v, v_data, v4)

#if ROPE
DEFINE_LOAD4(load4_vnew, vnew_data, vnew4)

// The 4-vector e4 of the row of E elements at element `base`, roped with row `t` of cos and sin
// (rotate-half: element d < E/2 takes x[d] cos[d] - x[d + E/2] sin[d], the others x[d] cos[d] +
// x[d - E/2] sin[d]) and rounded to T. 4-vectors where a half is whole 4-vectors (p.vec4_loads
// and E % 8 == 0), else element by element (zeros past the row's end).
#define DEFINE_ROPE4(name, data, data4)                                                         \
  vec4 name(int base, int e4, int t) {                                                          \
    const int half_dim = p.E >> 1;                                                              \
    if (p.vec4_loads != 0 && (half_dim & 3) == 0) {                                             \
      const int h4 = half_dim >> 2;                                                             \
      const bool first = e4 < h4;                                                               \
      const vec4 x = vec4(data4[(base >> 2) + e4]);                                             \
      const vec4 y = vec4(data4[(base >> 2) + (first ? e4 + h4 : e4 - h4)]);                    \
      const int c = t * (p.E >> 2) + e4;                                                        \
      return vec4(T4(x * vec4(cos4[c]) + (first ? -y : y) * vec4(sin4[c])));                    \
    }                                                                                           \
    vec4 r = vec4(0.0);                                                                         \
    [[unroll]] for (int i = 0; i < 4; ++i) {                                                    \
      const int d = e4 * 4 + i;                                                                 \
      if (d < p.E) {                                                                            \
        const float x = float(data[base + d]);                                                  \
        const float y = d < half_dim ? -float(data[base + d + half_dim]) : float(data[base + d - half_dim]); \
        r[i] = float(T(x * float(cos_data[t * p.E + d]) + y * float(sin_data[t * p.E + d])));   \
      }                                                                                         \
    }                                                                                           \
    return r;                                                                                   \
  }
DEFINE_ROPE4(rope4_q, q_data, q4)
DEFINE_ROPE4(rope4_k, knew_data, knew4)

// Stores the 4-vector e4 of the cache row at element `base` (elements past the row's `len` left).
#define DEFINE_STORE4(name, data, data4)                                                        \
  void name(int base, int e4, int len, vec4 x) {                                                \
    if (p.vec4_loads != 0) {                                                                    \
      data4[(base >> 2) + e4] = T4(x);                                                          \
    } else {                                                                                    \
      [[unroll]] for (int i = 0; i < 4; ++i) if (e4 * 4 + i < len) data[base + e4 * 4 + i] = T(x[i]); \
    }                                                                                           \
  }
DEFINE_STORE4(store4_k, k_data, k4)
DEFINE_STORE4(store4_v, v_data, v4)

// The query t' < T whose row this step writes at cache position `at` (the last of them), or -1;
// `own` is this workgroup's query's position (decode, T = 1: the only one).
int new_row(int at, int own) {
  if (p.queries == 1) return at == own ? 0 : -1;
  int found = -1;
  for (int u = 0; u < p.queries; ++u) {
    int lo, hi;
    READ_INDEX(pos_data, u, p.index_words, lo, hi);
    if (index_fits(lo, hi) && lo == at) found = u;
  }
  return found;
}
#endif

#if COMBINE
// The output 4-vector e4 of query row `row`: its live chunks' parts combined, COMBINE_STEP chunks'
// loads in flight at a time.
vec4 combine_row(int row, int e4, int live, int part_stride) {
  const int base = row * p.chunks * part_stride;
  float m = -1.0 / 0.0, l = 0.0;
  vec4 acc = vec4(0.0);
  for (int c0 = 0; c0 < live; c0 += COMBINE_STEP) {
    vec2 ml[COMBINE_STEP];
    vec4 a[COMBINE_STEP];
    [[unroll]] for (int k = 0; k < COMBINE_STEP; ++k) {
      ml[k] = vec2(-1.0 / 0.0, 0.0);
      a[k] = vec4(0.0);
      if (c0 + k < live) {
        ml[k] = part4[base + (c0 + k) * part_stride].xy;
        a[k] = part4[base + (c0 + k) * part_stride + 1 + e4];
      }
    }
    float top = m;
    [[unroll]] for (int k = 0; k < COMBINE_STEP; ++k) top = max(top, ml[k].x);
    const float rescale = m == -1.0 / 0.0 ? 0.0 : exp(m - top);
    acc *= rescale;
    l *= rescale;
    [[unroll]] for (int k = 0; k < COMBINE_STEP; ++k) {
      const float w = ml[k].x == -1.0 / 0.0 ? 0.0 : exp(ml[k].x - top);
      acc += w * a[k];
      l += w * ml[k].y;
    }
    m = top;
  }
  return l > 0.0 ? acc / l : vec4(0.0);
}

void write_out(int row, int e4, vec4 o) {
  if (p.vec4_loads != 0) {
    out4[row * ((p.Ev + 3) >> 2) + e4] = T4(o);
  } else {
    [[unroll]] for (int i = 0; i < 4; ++i) {
      if (e4 * 4 + i < p.Ev) out_data[row * p.Ev + e4 * 4 + i] = T(o[i]);
    }
  }
}
#endif

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int c = int(gl_WorkGroupID.x);
  const int hb = int(gl_WorkGroupID.y);
  const int bt = int(gl_WorkGroupID.z);  // b * T + t
  const int b = bt / p.queries, t = bt % p.queries;
  const int hp = p.split_heads;
  const int h0 = hb * hp;
  const int kv = h0 / p.group;
  const int E4 = (p.E + 3) >> 2, Ev4 = (p.Ev + 3) >> 2;
  const int row0 = bt * p.heads + h0;  // the query row (b, t, h0); the heads' rows follow it
  const int j0 = c * p.chunk;

  int position, hi;
  READ_INDEX(pos_data, t, p.index_words, position, hi);
  if (!index_fits(position, hi) || position < 0 || position >= p.cache_len) {  // uniform
    if (c == 0) {
#if CHECKED
      if (tid == 0 && hb == 0) report_fault_words(FAULT_INDEX, 1u, uint(position), uint(hi), uint(p.cache_len), 0u);
#endif
#if COMBINE
      for (int i = tid; i < hp * Ev4; i += WG) write_out(row0 + i / Ev4, i % Ev4, vec4(0.0));
#endif
    }
    return;
  }
  if (j0 > position) return;  // uniform: past this query's keys
  const int count = min(p.chunk, position + 1 - j0);

  // One round of loads: this invocation's key 4-vectors (key j, 4-vectors l, l + lanes, ...),
  // its share of the values (whole rows by neighbouring invocations) and of the queries.
  const int lanes = WG / p.chunk;  // invocations per key
  const int j = tid / lanes, l = tid % lanes;
  const int key_row = ((b * p.cache_len + j0 + j) * p.kv_heads + kv) * p.E;
#if ROPE
  // The step's new rows: key j's (and, below, each value row's) query t' whose k and v it takes,
  // or -1 (the cache). The writer of a new row: query t' itself, the first head block of its KV head.
  const int key_src = j < count ? new_row(j0 + j, position) : -1;
  const bool writer = h0 % p.group == 0;
  const int new_base = b * p.queries;  // row (b, t') of k and v: (new_base + t') * KVH + kv
#endif
  vec4 key[KEY_PER_INVOCATION];
  [[unroll]] for (int r = 0; r < KEY_PER_INVOCATION; ++r) {
    const int e4 = l + r * lanes;
    key[r] = vec4(0.0);
#if ROPE
    if (key_src >= 0 && e4 < E4) {
      key[r] = rope4_k(((new_base + key_src) * p.kv_heads + kv) * p.E, e4, key_src);
      continue;
    }
#endif
    if (j < count && e4 < E4) key[r] = load4_k(key_row, e4, p.E);  // a branch: no read past the position
  }
  vec4 value[VALUE_PER_INVOCATION];
  [[unroll]] for (int r = 0; r < VALUE_PER_INVOCATION; ++r) {
    const int i = tid + r * WG;
    const int jv = i / max(Ev4, 1);
    value[r] = vec4(0.0);
    const int value_row = ((b * p.cache_len + j0 + jv) * p.kv_heads + kv) * p.Ev;
#if ROPE
    const int value_src = i < count * Ev4 ? new_row(j0 + jv, position) : -1;
    if (value_src >= 0) {
      value[r] = load4_vnew(((new_base + value_src) * p.kv_heads + kv) * p.Ev, i - jv * Ev4, p.Ev);
      if (value_src == t && writer) store4_v(value_row, i - jv * Ev4, p.Ev, value[r]);
      continue;
    }
#endif
    if (i < count * Ev4) value[r] = load4_v(value_row, i - jv * Ev4, p.Ev);
  }
  vec4 query[QUERY_VEC4S / WG];
  [[unroll]] for (int r = 0; r < QUERY_VEC4S / WG; ++r) {
    const int i = tid + r * WG;
    const int g = i / max(E4, 1);
    query[r] = vec4(0.0);
#if ROPE
    if (i < hp * E4) query[r] = rope4_q((row0 + g) * p.E, i - g * E4, t) * p.scale;
#else
    if (i < hp * E4) query[r] = load4_q((row0 + g) * p.E, i - g * E4, p.E) * p.scale;
#endif
  }
#if ROPE
  if (key_src == t && writer) {
    [[unroll]] for (int r = 0; r < KEY_PER_INVOCATION; ++r) {
      const int e4 = l + r * lanes;
      if (e4 < E4) store4_k(key_row, e4, p.E, key[r]);
    }
  }
#endif
  [[unroll]] for (int r = 0; r < QUERY_VEC4S / WG; ++r) q_s[tid + r * WG] = query[r];
  barrier();

  // This invocation's part of key j's dot products, 4 heads to a 4-vector of kv_s.
  vec4 part[MAX_HEADS / 4];
  [[unroll]] for (int h4 = 0; h4 < MAX_HEADS / 4; ++h4) part[h4] = vec4(0.0);
  [[unroll]] for (int r = 0; r < KEY_PER_INVOCATION; ++r) {
    const int e4 = l + r * lanes;
    if (e4 < E4) {
      [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) {
        if (g < hp) part[g >> 2][g & 3] += dot(q_s[g * E4 + e4], key[r]);
      }
    }
  }
  [[unroll]] for (int h4 = 0; h4 < MAX_HEADS / 4; ++h4) if (h4 * 4 < hp) kv_s[h4 * WG + tid] = part[h4];
  barrier();
  // The scores: (key, 4 heads) pairs, each the sum of its key's lanes' parts.
  const int quads = (hp + 3) >> 2;
  [[unroll]] for (int r = 0; r < PAIRS_PER_INVOCATION; ++r) {
    const int i = tid + r * WG;
    const int h4 = i / p.chunk, js = i % p.chunk;
    if (h4 < quads && js < count) {
      vec4 s = vec4(0.0);
      for (int k = 0; k < lanes; ++k) s += kv_s[h4 * WG + js * lanes + k];
      [[unroll]] for (int q = 0; q < 4; ++q) if (h4 * 4 + q < hp) score_s[(h4 * 4 + q) * p.chunk + js] = s[q];
    }
  }
  barrier();  // the parts are read: kv_s takes the values
  [[unroll]] for (int r = 0; r < VALUE_PER_INVOCATION; ++r) kv_s[tid + r * WG] = value[r];
  barrier();

  // Invocation o of head g = o / Ev4 sums its output 4-vector over the keys (its outputs side by
  // side, independent chains), with its head's chunk maximum m and weights exp(s - m).
  const int part_stride = 1 + Ev4;  // 4-vectors per (row, chunk)
  const int outputs = hp * Ev4;
  [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) {
    const int o = tid + r * WG;
    if (o < outputs) {
      const int g = o / Ev4, e4 = o - g * Ev4;
      float m = -1.0 / 0.0;
      for (int k = 0; k < count; ++k) m = max(m, score_s[g * p.chunk + k]);
      vec4 acc = vec4(0.0);
      float sum = 0.0;
      for (int k = 0; k < count; ++k) {
        const float w = exp(score_s[g * p.chunk + k] - m);
        acc += w * kv_s[k * Ev4 + e4];
        sum += w;
      }
      const int at = ((row0 + g) * p.chunks + c) * part_stride;
      part4[at + 1 + e4] = acc;
      if (e4 == 0) part4[at] = vec4(m, sum, 0.0, 0.0);
    }
  }

#if COMBINE
  // Count this chunk done; the last of the live chunks combines them.
  const int live = position / p.chunk + 1;
  if (!last_arrival(bt * (p.heads / hp) + hb, live)) return;  // uniform
  [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) {
    const int o = tid + r * WG;
    if (o < outputs) {
      const int g = o / Ev4, e4 = o - g * Ev4;
      write_out(row0 + g, e4, combine_row(row0 + g, e4, live, part_stride));
    }
  }
#endif
}
