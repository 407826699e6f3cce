// dtypes: f32 f16
// variant sdpa_kv_cache: CHECKED=1
// variant sdpa_kv_cache_nocheck: CHECKED=0
// Attention over a KV cache at positions (quant/library.py's vkd_sdpa_kv_cache), one
// workgroup per query row (b, t, h): the fallback of runtime/ops/attention.cpp for many
// queries where sdpa_kv_tiled.glsl does not fit (head dims above its largest, or too
// little shared memory):
//   out[b, t, h] = softmax(q[b, t, h] . k[b, j, h / group] * scale) v[b, j, h / group], j = 0..pos[t]
// q [B, T, H, E], caches [B, S, KVH, E] and [B, S, KVH, Ev], out [B, T, H, Ev], contiguous.
// The positions are read on the GPU, so a row visits only its pos[t] + 1 keys (the work
// follows the context, not the cache length) and a decode step replays unchanged.
// Keys go by in blocks of one per invocation through the online softmax of
// online_softmax.glslh (as sdpa.glsl).
// Positions are int32 or int64, read as words (READ_INDEX in common.glslh). A position
// outside [0, S) is a fault (fault.glslh); its row attends to nothing.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

#define MAX_E 256
#define ACC_PER_INVOCATION 4  // Ev <= 4 * workgroup size (the host checks)

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer Q { T q_data[]; };
layout(set = 0, binding = 2) readonly buffer K { T k_data[]; };
layout(set = 0, binding = 3) readonly buffer V { T v_data[]; };
layout(set = 0, binding = 4) readonly buffer Pos { int pos_data[]; };
#define FAULT_BINDING 5
#include "fault.glslh"
#include "sdpa_kv_params.glslh"

shared float q_row[MAX_E];
#include "online_softmax.glslh"

void main() {
  const int row = int(flat_group());
  if (row >= p.batch * p.queries * p.heads) return;  // uniform across the workgroup
  const int t = int(gl_LocalInvocationID.x);
  const int n = int(gl_WorkGroupSize.x);
  const int b = row / (p.queries * p.heads);
  const int query = (row / p.heads) % p.queries;
  const int kv = (row % p.heads) / p.group;
  const int key_stride = p.kv_heads * p.E;  // between positions in the k cache
  const int value_stride = p.kv_heads * p.Ev;
  const int k_base = b * p.cache_len * key_stride + kv * p.E;
  const int v_base = b * p.cache_len * value_stride + kv * p.Ev;

  int position, hi;
  READ_INDEX(pos_data, query, p.index_words, position, hi);
  int S_end = position + 1;
  if (!index_fits(position, hi) || position < 0 || position >= p.cache_len) {
#if CHECKED
    if (t == 0) report_fault_words(FAULT_INDEX, 1u, uint(position), uint(hi), uint(p.cache_len), 0u);
#endif
    S_end = 0;
  }

  for (int e = t; e < p.E; e += n) q_row[e] = float(q_data[row * p.E + e]) * p.scale;
  barrier();

  float m = -1.0 / 0.0;
  float l = 0.0;
  float acc[ACC_PER_INVOCATION];
  for (int a = 0; a < ACC_PER_INVOCATION; ++a) acc[a] = 0.0;

  for (int j0 = 0; j0 < S_end; j0 += n) {
    const int j = j0 + t;
    float s = -1.0 / 0.0;
    if (j < S_end) {
      float dot_qk = 0.0;
      const int k_row = k_base + j * key_stride;
      for (int e = 0; e < p.E; ++e) dot_qk += q_row[e] * float(k_data[k_row + e]);
      s = dot_qk;
    }
    online_softmax_block(s, j0, min(n, S_end - j0), v_base, value_stride, p.Ev, m, l, acc);
  }
  online_softmax_store(row, p.Ev, l, acc);
}
