// dtypes: f32 f16
// The second pass of runtime/ops/attention.cpp's split attention over a KV cache: one
// workgroup per query row (b, t, h) combines the chunks sdpa_kv_split.glsl wrote for it,
// those holding keys 0..pos[t] (the others hold stale data):
//   M = max_c m_c, out = sum_c exp(m_c - M) acc_c / sum_c exp(m_c - M) l_c
// A position outside [0, S) gives zeros (the split pass reported the fault).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer Part { float part_data[]; };
layout(set = 0, binding = 2) readonly buffer Pos { int pos_data[]; };
#define PARAMS_BINDING 3
#include "sdpa_kv_params.glslh"

void main() {
  const int row = int(flat_group());
  if (row >= p.batch * p.queries * p.heads) return;  // uniform
  const int tid = int(gl_LocalInvocationID.x);
  const int n = int(gl_WorkGroupSize.x);
  const int t = (row / p.heads) % p.queries;
  int position, hi;
  READ_INDEX(pos_data, t, p.index_words, position, hi);
  const bool valid = index_fits(position, hi) && position >= 0 && position < p.cache_len;
  const int live = valid ? position / p.chunk + 1 : 0;
  const int part_stride = 2 + p.Ev;
  const int base = row * p.chunks * part_stride;
  float M = -1.0 / 0.0;
  for (int c = 0; c < live; ++c) M = max(M, part_data[base + c * part_stride]);
  for (int d = tid; d < p.Ev; d += n) {
    float l = 0.0, acc = 0.0;
    for (int c = 0; c < live; ++c) {
      const int o = base + c * part_stride;
      const float w = exp(part_data[o] - M);
      l += w * part_data[o + 1];
      acc += w * part_data[o + 2 + d];
    }
    out_data[row * p.Ev + d] = T(l > 0.0 ? acc / l : 0.0);
  }
}
