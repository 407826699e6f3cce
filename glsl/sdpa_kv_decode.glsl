// dtypes: f32 f16
// subgroup-variants
// variant sdpa_kv_decode: CHECKED=1
// variant sdpa_kv_decode_nocheck: CHECKED=0
// Attention over a KV cache for few queries (decode) in one dispatch, split along the keys
// (flash decoding) with the combine folded in: runtime/ops/attention.cpp's decode path.
// Workgroup (c, hb, b * T + t) takes keys c * chunk .. c * chunk + chunk - 1 (those up to
// pos[t]) for the split_heads query heads hb * split_heads .. that share one KV head, so each
// key and value row is read once for them all. It writes per head its chunk's score max m,
// sum l = sum_j exp(s_j - m) and un-normalized output sum_j exp(s_j - m) v_j into part
// [B * T * H, chunks, 1 + ceil(Ev / 4)] 4-vectors ((m, l, 0, 0) first), then counts itself
// done on the (b, t, hb) counter; the last of the live chunks (pos[t] / chunk + 1 of them)
// combines them all:
//   M = max_c m_c, out = sum_c exp(m_c - M) acc_c / sum_c exp(m_c - M) l_c
// and returns the counter to 0, so that the next execute (a replay) starts from zeros.
// Chunks past pos[t] exit at once and never count: the work follows the position (data on
// the GPU), not the cache length. A position outside [0, S) is a fault (fault.glslh): chunk 0
// writes zeros for its heads and nothing counts.
// The keys are read straight into registers, 4-vectors of a row over 64 / chunk neighbouring
// invocations (one invocation's dots summed in shared memory), all of the chunk's keys,
// values and queries in one round of loads; a workgroup has 7 barriers, the one that combines 12
// (subgroup variants).
// Where E and Ev are multiples of 4 (p.vec4_loads; every row then starts at a multiple of 4
// elements) the rows are read as 4-vectors, else the same 4-vectors element by element (a
// uniform branch: a resize may change the head dims).
// Positions are int32 or int64, read as words (READ_INDEX in common.glslh).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"
#if WG_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

// Bounds the host keeps (runtime/ops/attention.cpp: kDecode*): the workgroup size (a chunk
// divides it), split_heads, split_heads * ceil(E / 4), chunk * ceil(Ev / 4), the key
// 4-vectors per invocation ceil(ceil(E / 4) / (WG / chunk)) and the output 4-vectors per
// invocation ceil(split_heads * ceil(Ev / 4) / WG). 14 KiB of shared memory in all, under the
// 16 KiB of small GPUs.
#define WG 64
#define MAX_HEADS 8
#define QUERY_VEC4S 256
#define VALUE_VEC4S 256
#define KEY_PER_INVOCATION 16
#define OUT_PER_INVOCATION 4
// The combine's chunks per step of each output (loads in flight: OUT_PER_INVOCATION * COMBINE_STEP).
#define COMBINE_STEP 8

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 0) writeonly buffer Out4 { T4 out4[]; };
// Written by every live chunk and read by the last: coherent, so that the reads see the
// other workgroups' writes (made visible by memoryBarrierBuffer before the count).
layout(set = 0, binding = 1) coherent buffer Part { vec4 part4[]; };
layout(set = 0, binding = 2) coherent buffer Counter { int counter[]; };
layout(set = 0, binding = 3) readonly buffer Q { T q_data[]; };
layout(set = 0, binding = 3) readonly buffer Q4 { T4 q4[]; };
layout(set = 0, binding = 4) readonly buffer K { T k_data[]; };
layout(set = 0, binding = 4) readonly buffer K4 { T4 k4[]; };
layout(set = 0, binding = 5) readonly buffer V { T v_data[]; };
layout(set = 0, binding = 5) readonly buffer V4 { T4 v4[]; };
layout(set = 0, binding = 6) readonly buffer Pos { int pos_data[]; };
#define FAULT_BINDING 7
#include "fault.glslh"
#include "sdpa_kv_params.glslh"

shared vec4 q_s[QUERY_VEC4S];         // [head, E / 4]: the scaled queries
shared vec4 v_s[VALUE_VEC4S];         // [key, Ev / 4]: the chunk's values
shared float dot_s[MAX_HEADS * WG];   // [head, invocation]: partial dot products
shared float prob_s[MAX_HEADS * WG];  // [head, key]: exp(s - m); the combine's weights [head, chunk]
shared float red_s[MAX_HEADS * WG];   // reductions across the workgroup, per head
shared float max_s[MAX_HEADS];
shared bool last_s;

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
#define LOAD4(data, data4, base, e4, len) load4_##data(base, e4, len)

// Per head g < heads, v[g] becomes the maximum (IS_MAX) or sum over the workgroup's invocations.
// Every invocation calls it (barriers); red_s is free again when it returns.
void reduce_heads(inout float v[MAX_HEADS], int heads, const bool IS_MAX) {
  const int tid = int(gl_LocalInvocationID.x);
#if WG_SUBGROUP
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) {
    if (g < heads) {
      float r;
      if (IS_MAX) {
        r = subgroupMax(v[g]);
      } else {
        r = subgroupAdd(v[g]);
      }
      if (subgroupElect()) red_s[g * WG + int(gl_SubgroupID)] = r;
    }
  }
  barrier();
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) v[g] = IS_MAX ? -1.0 / 0.0 : 0.0;
  for (int i = 0; i < int(gl_NumSubgroups); ++i) {
    [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) {
      if (g < heads) v[g] = IS_MAX ? max(v[g], red_s[g * WG + i]) : v[g] + red_s[g * WG + i];
    }
  }
#else
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) if (g < heads) red_s[g * WG + tid] = v[g];
  barrier();
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (tid < s) {
      [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) {
        if (g < heads) {
          const float a = red_s[g * WG + tid], b = red_s[g * WG + tid + s];
          red_s[g * WG + tid] = IS_MAX ? max(a, b) : a + b;
        }
      }
    }
    barrier();
  }
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) if (g < heads) v[g] = red_s[g * WG];
#endif
  barrier();  // red_s is reused by the next call
}

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

  int position, hi;
  READ_INDEX(pos_data, t, p.index_words, position, hi);
  if (!index_fits(position, hi) || position < 0 || position >= p.cache_len) {  // uniform
    if (c == 0) {
#if CHECKED
      if (tid == 0 && hb == 0) report_fault_words(FAULT_INDEX, 1u, uint(position), uint(hi), uint(p.cache_len), 0u);
#endif
      for (int i = tid; i < hp * p.Ev; i += WG) out_data[row0 * p.Ev + i] = T(0.0);
    }
    return;
  }
  const int live = position / p.chunk + 1;
  if (c >= live) return;  // uniform: past this query's keys
  const int j0 = c * p.chunk;
  const int count = min(p.chunk, position + 1 - j0);

  // One round of loads: this invocation's key 4-vectors (key j, 4-vectors l, l + lanes, ...),
  // its share of the values and of the queries.
  const int lanes = WG / p.chunk;  // invocations per key
  const int j = tid / lanes, l = tid % lanes;
  const int key_row = ((b * p.cache_len + j0 + j) * p.kv_heads + kv) * p.E;
  vec4 key[KEY_PER_INVOCATION];
  [[unroll]] for (int r = 0; r < KEY_PER_INVOCATION; ++r) {
    const int e4 = l + r * lanes;
    key[r] = vec4(0.0);
    if (j < count && e4 < E4) key[r] = LOAD4(k, k4, key_row, e4, p.E);  // a branch: no read past the cache
  }
  const int value_vec4s = count * Ev4;
  vec4 value[VALUE_VEC4S / WG];
  [[unroll]] for (int r = 0; r < VALUE_VEC4S / WG; ++r) {
    const int i = tid + r * WG;
    const int jv = i / max(Ev4, 1);
    value[r] = vec4(0.0);
    if (i < value_vec4s) value[r] = LOAD4(v, v4, ((b * p.cache_len + j0 + jv) * p.kv_heads + kv) * p.Ev, i - jv * Ev4, p.Ev);
  }
  vec4 query[QUERY_VEC4S / WG];
  [[unroll]] for (int r = 0; r < QUERY_VEC4S / WG; ++r) {
    const int i = tid + r * WG;
    const int g = i / max(E4, 1);
    query[r] = vec4(0.0);
    if (i < hp * E4) query[r] = LOAD4(q, q4, (row0 + g) * p.E, i - g * E4, p.E) * p.scale;
  }
  [[unroll]] for (int r = 0; r < VALUE_VEC4S / WG; ++r) v_s[tid + r * WG] = value[r];
  [[unroll]] for (int r = 0; r < QUERY_VEC4S / WG; ++r) q_s[tid + r * WG] = query[r];
  barrier();

  // Scores s[g] of key j: this invocation's part of the dot products, then the key's lanes' parts.
  float s[MAX_HEADS];
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) s[g] = 0.0;
  [[unroll]] for (int r = 0; r < KEY_PER_INVOCATION; ++r) {
    const int e4 = l + r * lanes;
    if (e4 < E4) {
      [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) if (g < hp) s[g] += dot(q_s[g * E4 + e4], key[r]);
    }
  }
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) if (g < hp) dot_s[g * WG + tid] = s[g];
  barrier();
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) s[g] = 0.0;
  for (int i = 0; i < lanes; ++i) {
    [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) if (g < hp) s[g] += dot_s[g * WG + j * lanes + i];
  }
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) if (j >= count) s[g] = -1.0 / 0.0;
  float m[MAX_HEADS];
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) m[g] = s[g];
  reduce_heads(m, hp, true);
  if (l == 0 && j < count) {
    [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) if (g < hp) prob_s[g * p.chunk + j] = exp(s[g] - m[g]);
  }
  if (tid == 0) {
    [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) if (g < hp) max_s[g] = m[g];
  }
  barrier();

  // This chunk's part: invocation o of head g = o / Ev4 sums its output 4-vector over the keys
  // (its outputs side by side, independent chains). Outputs past hp * Ev4 take head 0's.
  const int part_stride = 1 + Ev4;  // 4-vectors per (row, chunk)
  const int outputs = hp * Ev4;
  int out_g[OUT_PER_INVOCATION], out_e4[OUT_PER_INVOCATION];
  [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) {
    const int o = tid + r * WG < outputs ? tid + r * WG : 0;
    out_g[r] = o / max(Ev4, 1);
    out_e4[r] = o - out_g[r] * Ev4;
  }
  vec4 acc[OUT_PER_INVOCATION];
  float sum[OUT_PER_INVOCATION];
  [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) {
    acc[r] = vec4(0.0);
    sum[r] = 0.0;
  }
  for (int jj = 0; jj < count; ++jj) {
    [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) {
      if (r * WG < outputs) {
        const float w = prob_s[out_g[r] * p.chunk + jj];
        acc[r] += w * v_s[jj * Ev4 + out_e4[r]];
        sum[r] += w;
      }
    }
  }
  [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) {
    if (tid + r * WG < outputs) {
      const int at = ((row0 + out_g[r]) * p.chunks + c) * part_stride;
      part4[at + 1 + out_e4[r]] = acc[r];
      if (out_e4[r] == 0) part4[at] = vec4(max_s[out_g[r]], sum[r], 0.0, 0.0);
    }
  }

  // Count this chunk done; the last of the live chunks combines them.
  memoryBarrierBuffer();
  barrier();
  if (tid == 0) {
    const int at = bt * (p.heads / hp) + hb;
    const bool last = atomicAdd(counter[at], 1) == live - 1;
    if (last) atomicExchange(counter[at], 0);  // every live chunk has counted: back to 0 for the next execute
    last_s = last;
  }
  barrier();
  if (!last_s) return;  // uniform
  memoryBarrierBuffer();

  // Per head: the chunks' maximum M and sum L = sum_c exp(m_c - M) l_c (each invocation an
  // online pair over its chunks, then across the workgroup), the first WG chunks' maxima kept.
  float cm[MAX_HEADS], cl[MAX_HEADS];
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) {
    cm[g] = -1.0 / 0.0;
    cl[g] = 0.0;
  }
  for (int cc = tid; cc < live; cc += WG) {
    vec2 ml[MAX_HEADS];  // the heads' loads all in flight
    [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) {
      if (g < hp) ml[g] = part4[((row0 + g) * p.chunks + cc) * part_stride].xy;
    }
    [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) {
      if (g < hp) {
        const float top = max(cm[g], ml[g].x);
        cl[g] = cl[g] * exp(cm[g] - top) + ml[g].y * exp(ml[g].x - top);
        cm[g] = top;
        if (cc < WG) prob_s[g * WG + cc] = ml[g].x;
      }
    }
  }
  float M[MAX_HEADS], L[MAX_HEADS];
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) M[g] = cm[g];
  reduce_heads(M, hp, true);
  [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) L[g] = cm[g] == -1.0 / 0.0 ? 0.0 : cl[g] * exp(cm[g] - M[g]);
  reduce_heads(L, hp, false);
  // The output, WG chunks at a time: their weights exp(m_c - M) / L in prob_s, then each
  // invocation's output 4-vectors summed over them.
  [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) acc[r] = vec4(0.0);
  for (int c0 = 0; c0 < live; c0 += WG) {
    const int cc = c0 + tid;
    if (c0 > 0) barrier();  // the previous tile's readers are done
    [[unroll]] for (int g = 0; g < MAX_HEADS; ++g) {
      if (g < hp && cc < live) {
        const float mc = c0 == 0 ? prob_s[g * WG + tid] : part4[((row0 + g) * p.chunks + cc) * part_stride].x;
        prob_s[g * WG + tid] = exp(mc - M[g]) / L[g];
      }
    }
    barrier();
    const int tile = min(WG, live - c0);
    // COMBINE_STEP chunks of each output at a time: their loads all in flight.
    for (int k0 = 0; k0 < tile; k0 += COMBINE_STEP) {
      vec4 a[OUT_PER_INVOCATION][COMBINE_STEP];
      [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) {
        [[unroll]] for (int k = 0; k < COMBINE_STEP; ++k) {
          a[r][k] = vec4(0.0);
          if (r * WG < outputs && k0 + k < tile) {
            a[r][k] = part4[((row0 + out_g[r]) * p.chunks + c0 + k0 + k) * part_stride + 1 + out_e4[r]];
          }
        }
      }
      [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) {
        [[unroll]] for (int k = 0; k < COMBINE_STEP; ++k) {
          if (r * WG < outputs && k0 + k < tile) acc[r] += prob_s[out_g[r] * WG + k0 + k] * a[r][k];
        }
      }
    }
  }
  [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) {
    if (tid + r * WG < outputs) {
      const int g = out_g[r], e4 = out_e4[r];
      if (p.vec4_loads != 0) {
        out4[(row0 + g) * Ev4 + e4] = T4(acc[r]);
      } else {
        [[unroll]] for (int i = 0; i < 4; ++i) {
          if (e4 * 4 + i < p.Ev) out_data[(row0 + g) * p.Ev + e4 * 4 + i] = T(acc[r][i]);
        }
      }
    }
  }
}
