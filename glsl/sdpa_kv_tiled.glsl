// dtypes: f32 f16
// variant sdpa_kv_tiled_d64: MAX_D=64 ROWS=32 KEYS=32 CHECKED=1
// variant sdpa_kv_tiled_d64_nocheck: MAX_D=64 ROWS=32 KEYS=32 CHECKED=0
// variant sdpa_kv_tiled_d128: MAX_D=128 ROWS=32 KEYS=16 CHECKED=1
// variant sdpa_kv_tiled_d128_nocheck: MAX_D=128 ROWS=32 KEYS=16 CHECKED=0
// Attention over a KV cache for many queries (prefill), tiled: runtime/ops/attention.cpp's
// path for T above its split limit. The query rows of one KV head, (t, g) for the group's
// heads h = kv * group + g in t-major order, go in blocks of ROWS; workgroup (block, kv, b)
// holds its rows' queries in shared memory and streams the keys and values 0..max pos[t]
// through it in tiles of KEYS, so each tile is read once for ROWS rows (group heads of
// ROWS / group queries). Row (t, g) counts keys 0..pos[t] only (positions are data: no
// order is assumed) through an online softmax (running max, sum and rescaled output per
// row). E, Ev <= MAX_D; 128 invocations (the host's kTiledLocal).
// Positions are int32 or int64, read as words (READ_INDEX in common.glslh). A position
// outside [0, S) is a fault (fault.glslh); its rows attend to nothing (zeros).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

#define THREADS 128
// Scores: each invocation 4 keys (strided by KEY_SLOTS) of SCORE_ROWS rows.
#define KEY_SLOTS (KEYS / 4)
#define SCORE_ROWS (ROWS * KEY_SLOTS / THREADS)
// Output: each invocation 4 dims (strided by DIM_SLOTS) of OUT_ROWS rows.
#define DIM_SLOTS (MAX_D / 4)
#define OUT_ROWS (ROWS * DIM_SLOTS / THREADS)

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer Q { T q_data[]; };
layout(set = 0, binding = 2) readonly buffer K { T k_data[]; };
layout(set = 0, binding = 3) readonly buffer V { T v_data[]; };
layout(set = 0, binding = 4) readonly buffer Pos { int pos_data[]; };
#define FAULT_BINDING 5
#include "fault.glslh"
#include "sdpa_kv_params.glslh"

// Query and key rows of E + 1 floats (odd: invocations reading one column of several rows
// hit different banks). A tile's keys, then its values share kv_s. The host's
// tiled_attention_shared_bytes mirrors these sizes.
shared float q_s[ROWS * (MAX_D + 1)];
shared float kv_s[KEYS * (MAX_D + 1)];
shared float prob_s[ROWS * (KEYS + 1)];
shared float row_max[ROWS];
shared float row_sum[ROWS];
shared float row_scale[ROWS];
shared int row_pos[ROWS];
shared int key_end;

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int block = int(gl_WorkGroupID.x);
  const int kv = int(gl_WorkGroupID.y);
  const int b = int(gl_WorkGroupID.z);
  const int E = p.E, Ev = p.Ev, G = p.group;
  const int rows_total = p.queries * G;  // of this KV head
  const int r0 = block * ROWS;
  const int key_stride = p.kv_heads * E;
  const int value_stride = p.kv_heads * Ev;
  const int k_base = b * p.cache_len * key_stride + kv * E;
  const int v_base = b * p.cache_len * value_stride + kv * Ev;

  if (tid == 0) key_end = 0;
  barrier();
  if (tid < ROWS) {
    const int r = r0 + tid;
    int position = -1;
    if (r < rows_total) {
      int hi;
      READ_INDEX(pos_data, r / G, p.index_words, position, hi);
      if (!index_fits(position, hi) || position < 0 || position >= p.cache_len) {
#if CHECKED
        report_fault_words(FAULT_INDEX, 1u, uint(position), uint(hi), uint(p.cache_len), 0u);
#endif
        position = -1;
      }
    }
    row_pos[tid] = position;
    row_max[tid] = -1.0 / 0.0;
    row_sum[tid] = 0.0;
    atomicMax(key_end, position + 1);
  }
  // Query rows, scaled: row r is q[b, t, kv * G + g] with t = r / G, g = r % G.
  for (int i = tid; i < ROWS * E; i += THREADS) {
    const int rr = i / E, e = i % E, r = r0 + rr;
    float x = 0.0;
    if (r < rows_total) x = float(q_data[((b * p.queries + r / G) * p.heads + kv * G + r % G) * E + e]) * p.scale;
    q_s[rr * (E + 1) + e] = x;
  }
  barrier();
  const int keys_end = key_end;

  const int key_slot = tid % KEY_SLOTS;
  const int score_row0 = (tid / KEY_SLOTS) * SCORE_ROWS;
  const int dim_slot = tid % DIM_SLOTS;
  const int out_row0 = (tid / DIM_SLOTS) * OUT_ROWS;
  float acc[OUT_ROWS][4];
  for (int i = 0; i < OUT_ROWS; ++i) {
    for (int a = 0; a < 4; ++a) acc[i][a] = 0.0;
  }

  for (int k0 = 0; k0 < keys_end; k0 += KEYS) {
    const int count = min(KEYS, keys_end - k0);
    for (int i = tid; i < KEYS * E; i += THREADS) {
      const int c = i / E, e = i % E;
      kv_s[c * (E + 1) + e] = c < count ? float(k_data[k_base + (k0 + c) * key_stride + e]) : 0.0;
    }
    barrier();
    // Scores; keys past a row's position (or the tile) are -inf.
    {
      float s[SCORE_ROWS][4];
      for (int i = 0; i < SCORE_ROWS; ++i) {
        for (int a = 0; a < 4; ++a) s[i][a] = 0.0;
      }
      for (int e = 0; e < E; ++e) {
        float kk[4];
        for (int a = 0; a < 4; ++a) kk[a] = kv_s[(key_slot + a * KEY_SLOTS) * (E + 1) + e];
        for (int i = 0; i < SCORE_ROWS; ++i) {
          const float qq = q_s[(score_row0 + i) * (E + 1) + e];
          for (int a = 0; a < 4; ++a) s[i][a] += qq * kk[a];
        }
      }
      for (int i = 0; i < SCORE_ROWS; ++i) {
        const int rr = score_row0 + i;
        for (int a = 0; a < 4; ++a) {
          const int c = key_slot + a * KEY_SLOTS;
          prob_s[rr * (KEYS + 1) + c] = k0 + c <= row_pos[rr] ? s[i][a] : -1.0 / 0.0;
        }
      }
    }
    barrier();
    // The online softmax, a row per invocation.
    if (tid < ROWS) {
      const float m_old = row_max[tid];
      float m_new = m_old;
      for (int c = 0; c < KEYS; ++c) m_new = max(m_new, prob_s[tid * (KEYS + 1) + c]);
      if (isinf(m_new)) {  // no key counted yet (exp(-inf - -inf) is NaN)
        for (int c = 0; c < KEYS; ++c) prob_s[tid * (KEYS + 1) + c] = 0.0;
        row_scale[tid] = 1.0;
      } else {
        float sum = 0.0;
        for (int c = 0; c < KEYS; ++c) {
          const float e = exp(prob_s[tid * (KEYS + 1) + c] - m_new);
          prob_s[tid * (KEYS + 1) + c] = e;
          sum += e;
        }
        const float alpha = exp(m_old - m_new);  // 0 while m_old is -inf
        row_scale[tid] = alpha;
        row_sum[tid] = row_sum[tid] * alpha + sum;
        row_max[tid] = m_new;
      }
    }
    for (int i = tid; i < KEYS * Ev; i += THREADS) {
      const int c = i / Ev, d = i % Ev;
      kv_s[c * Ev + d] = c < count ? float(v_data[v_base + (k0 + c) * value_stride + d]) : 0.0;
    }
    barrier();
    for (int i = 0; i < OUT_ROWS; ++i) {
      const float alpha = row_scale[out_row0 + i];
      for (int a = 0; a < 4; ++a) acc[i][a] *= alpha;
    }
    for (int c = 0; c < count; ++c) {
      float vv[4];
      for (int a = 0; a < 4; ++a) {
        const int d = dim_slot + a * DIM_SLOTS;
        vv[a] = d < Ev ? kv_s[c * Ev + d] : 0.0;
      }
      for (int i = 0; i < OUT_ROWS; ++i) {
        const float pr = prob_s[(out_row0 + i) * (KEYS + 1) + c];
        for (int a = 0; a < 4; ++a) acc[i][a] += pr * vv[a];
      }
    }
    barrier();
  }

  for (int i = 0; i < OUT_ROWS; ++i) {
    const int rr = out_row0 + i, r = r0 + rr;
    if (r >= rows_total) break;
    const float l = row_sum[rr];
    const float inv_l = l > 0.0 ? 1.0 / l : 0.0;
    const int o = ((b * p.queries + r / G) * p.heads + kv * G + r % G) * Ev;
    for (int a = 0; a < 4; ++a) {
      const int d = dim_slot + a * DIM_SLOTS;
      if (d < Ev) out_data[o + d] = T(acc[i][a] * inv_l);
    }
  }
}
