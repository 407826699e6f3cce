// dtypes: f32 f16
// subgroup-variants
// The second pass of runtime/ops/attention.cpp's two-pass attention over a KV cache (the default): one
// workgroup per query row (b, t, h) combines the chunks sdpa_kv_split.glsl wrote for it,
// those holding keys 0..pos[t] (the others hold stale data):
//   M = max_c m_c, out = sum_c exp(m_c - M) acc_c / sum_c exp(m_c - M) l_c
// A position outside [0, S) gives zeros (the split pass reported the fault).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"
#include "workgroup_reduce.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer Part { float part_data[]; };
layout(set = 0, binding = 2) readonly buffer Pos { int pos_data[]; };
#define PARAMS_BINDING 3
#include "sdpa_kv_params.glslh"

// Ev <= ACC_PER_INVOCATION * the workgroup size (runtime/ops/attention.cpp: kMaxHeadDim 256, 64 invocations).
#define ACC_PER_INVOCATION 4
#define REDUCE_TILE 256
shared float weight_s[REDUCE_TILE];

void main() {
  const int row = int(flat_group());
  if (row >= p.batch * p.queries * p.heads) return;  // uniform across the workgroup
  const int tid = int(gl_LocalInvocationID.x);
  const int n = int(gl_WorkGroupSize.x);
  const int t = (row / p.heads) % p.queries;
  int position, hi;
  READ_INDEX(pos_data, t, p.index_words, position, hi);
  const bool valid = index_fits(position, hi) && position >= 0 && position < p.cache_len;
  const int live = valid ? position / p.chunk + 1 : 0;
  const int part_stride = 2 + p.Ev;
  const int base = row * p.chunks * part_stride;
  // M and L = sum_c exp(m_c - M) l_c across the workgroup (the chunks' loads all in flight), then
  // each chunk's weight exp(m_c - M) in shared memory, a tile of REDUCE_TILE chunks at a time, for
  // the output loop: where every invocation walked the chunks' maxima itself, the loads were a chain.
  float m = -1.0 / 0.0;
  for (int c = tid; c < live; c += n) m = max(m, part_data[base + c * part_stride]);
  const float M = workgroup_max(m);
  float l = 0.0;
  for (int c = tid; c < live; c += n) {
    const int o = base + c * part_stride;
    l += exp(part_data[o] - M) * part_data[o + 1];
  }
  const float L = workgroup_sum(l);
  float acc[ACC_PER_INVOCATION];
  [[unroll]] for (int r = 0; r < ACC_PER_INVOCATION; ++r) acc[r] = 0.0;
  for (int c0 = 0; c0 < live; c0 += REDUCE_TILE) {
    const int tile = min(REDUCE_TILE, live - c0);
    barrier();  // the previous tile's readers are done
    for (int c = tid; c < tile; c += n) weight_s[c] = exp(part_data[base + (c0 + c) * part_stride] - M);
    barrier();
    [[unroll]] for (int r = 0; r < ACC_PER_INVOCATION; ++r) {
      const int d = tid + r * n;
      if (d < p.Ev) {
        for (int c = 0; c < tile; ++c) acc[r] += weight_s[c] * part_data[base + (c0 + c) * part_stride + 2 + d];
      }
    }
  }
  [[unroll]] for (int r = 0; r < ACC_PER_INVOCATION; ++r) {
    const int d = tid + r * n;
    if (d < p.Ev) out_data[row * p.Ev + d] = T(L > 0.0 ? acc[r] / L : 0.0);
  }
}
