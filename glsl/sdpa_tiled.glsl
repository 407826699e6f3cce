// dtypes: f32 f16
// variant sdpa_tiled_d64: MAX_D=64
// variant sdpa_tiled_d128: MAX_D=128
// scaled_dot_product_attention without a mask (or causal), tiled: runtime/ops/attention.cpp's
// path for many queries. q [B, H, L, E], k [B, KVH, S, E], v [B, KVH, S, Ev], out [B, H, L, Ev]
// (B: the lead dims before the heads, flattened), each addressed through its strides and offset
// (sdpa_strided_params.glslh). The query rows of one KV head, (l, g) for the group's
// heads h = kv * group + g in l-major order, go in blocks of ROWS; workgroup (block, kv, b)
// streams the keys and values through shared memory (sdpa_tile.glslh), each tile read once for
// ROWS rows. Causal: row (l, g) counts keys 0..l (PyTorch's top-left aligned mask), and a block
// reads keys up to its last row's only.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

#include "sdpa_strided_io.glslh"

// Row r of KV head kv is query (l, g) = (r / group, r % group) of head kv * group + g.
int q_base, k_base, v_base, out_base, head0;
float tile_query(int r, int e) {
  return float(q_data[q_base + (head0 + r % p.group) * p.q_strides.y + (r / p.group) * p.q_strides.z + e]);
}
float tile_key(int j, int e) { return float(k_data[k_base + j * p.k_strides.z + e]); }
float tile_value(int j, int d) { return float(v_data[v_base + j * p.v_strides.z + d]); }
void tile_store(int r, int d, float x) {
  out_data[out_base + (head0 + r % p.group) * p.out_strides.y + (r / p.group) * p.out_strides.z + d] = T(x);
}
#include "sdpa_tile.glslh"

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int block = int(gl_WorkGroupID.x);
  const int kv = int(gl_WorkGroupID.y);
  const int b = int(gl_WorkGroupID.z);
  const int rows_total = p.L * p.group;  // of this KV head
  const int r0 = block * ROWS;
  head0 = kv * p.group;
  sdpa_bases(b, kv, q_base, out_base, k_base, v_base);

  if (tid < ROWS) {
    const int r = r0 + tid;
    row_last[tid] = r >= rows_total ? -1 : p.causal != 0 ? min(r / p.group, p.S - 1) : p.S - 1;
  }
  // The block's keys: all, or causal, up to its last row's.
  const int keys_end = p.causal != 0 ? min(p.S, (min(r0 + ROWS, rows_total) - 1) / p.group + 1) : p.S;
  tile_load_queries(r0, rows_total, p.E, p.scale);
  tile_attend(r0, rows_total, keys_end, p.E, p.Ev);
}
