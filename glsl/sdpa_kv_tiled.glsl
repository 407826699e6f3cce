// dtypes: f32 f16
// variant sdpa_kv_tiled_d64: MAX_D=64 CHECKED=1
// variant sdpa_kv_tiled_d64_nocheck: MAX_D=64 CHECKED=0
// variant sdpa_kv_tiled_d128: MAX_D=128 CHECKED=1
// variant sdpa_kv_tiled_d128_nocheck: MAX_D=128 CHECKED=0
// Attention over a KV cache for many queries (prefill), tiled: runtime/ops/attention.cpp's
// path for T above its split limit. The query rows of one KV head, (t, g) for the group's
// heads h = kv * group + g in t-major order, go in blocks of ROWS; workgroup (block, kv, b)
// streams the keys and values 0..max pos[t] of its rows through shared memory
// (sdpa_tile.glslh), each tile read once for ROWS rows (group heads of ROWS / group queries).
// Row (t, g) counts keys 0..pos[t] only (positions are data: no order is assumed).
// Positions are int32 or int64, read as words (READ_INDEX in common.glslh). A position
// outside [0, S) is a fault (fault.glslh); its rows attend to nothing (zeros).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer Q { T q_data[]; };
layout(set = 0, binding = 2) readonly buffer K { T k_data[]; };
layout(set = 0, binding = 3) readonly buffer V { T v_data[]; };
layout(set = 0, binding = 4) readonly buffer Pos { int pos_data[]; };
#define FAULT_BINDING 5
#include "fault.glslh"
#include "sdpa_kv_params.glslh"

shared int key_end;

// Row r of KV head kv is query (t, g) = (r / G, r % G) of head kv * G + g.
int b, kv, G, k_base, v_base, key_stride, value_stride;
float tile_query(int r, int e) {
  return float(q_data[((b * p.queries + r / G) * p.heads + kv * G + r % G) * p.E + e]);
}
float tile_key(int j, int e) { return float(k_data[k_base + j * key_stride + e]); }
float tile_value(int j, int d) { return float(v_data[v_base + j * value_stride + d]); }
void tile_store(int r, int d, float x) {
  out_data[((b * p.queries + r / G) * p.heads + kv * G + r % G) * p.Ev + d] = T(x);
}
#include "sdpa_tile.glslh"

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int block = int(gl_WorkGroupID.x);
  kv = int(gl_WorkGroupID.y);
  b = int(gl_WorkGroupID.z);
  G = p.group;
  const int rows_total = p.queries * G;  // of this KV head
  const int r0 = block * ROWS;
  key_stride = p.kv_heads * p.E;
  value_stride = p.kv_heads * p.Ev;
  k_base = b * p.cache_len * key_stride + kv * p.E;
  v_base = b * p.cache_len * value_stride + kv * p.Ev;

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
    row_last[tid] = position;
    atomicMax(key_end, position + 1);
  }
  tile_load_queries(r0, rows_total, p.E, p.scale);
  tile_attend(r0, rows_total, key_end, p.E, p.Ev);
}
