// softmax / log_softmax along one dim. The tensor is viewed as [outer, D, inner];
// one workgroup reduces one (outer, inner) row of D elements with stride inner.
// variant softmax: LOG_SOFTMAX=0
// variant log_softmax: LOG_SOFTMAX=1
// subgroup-variants
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"
#include "workgroup_reduce.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
// params-struct: SoftmaxParams
layout(set = 0, binding = 2) uniform Params {
  int rows;   // outer * inner
  int D;
  int inner;
  int pad;
} p;

// A row of at most CACHE elements per invocation stays in registers: one read
// of the input instead of three.
const int CACHE = 16;

void main() {
  const int row = int(flat_group());
  if (row >= p.rows) return;  // uniform across the workgroup
  const int outer = row / p.inner;
  const int in_idx = row % p.inner;
  const int base = outer * p.D * p.inner + in_idx;
  const int t = int(gl_LocalInvocationID.x);
  const int n = int(gl_WorkGroupSize.x);

  if (p.D <= n * CACHE) {  // uniform
    float v[CACHE];
    float m = -1.0 / 0.0;
    for (int j = 0; j < CACHE; ++j) {
      const int d = t + j * n;
      v[j] = d < p.D ? float(in_data[base + d * p.inner]) : -1.0 / 0.0;
      m = max(m, v[j]);
    }
    m = workgroup_max(m);
    float s = 0.0;
    for (int j = 0; j < CACHE; ++j) {
      if (t + j * n < p.D) s += exp(v[j] - m);
    }
    s = workgroup_sum(s);
#if LOG_SOFTMAX
    const float log_s = log(s);
    for (int j = 0; j < CACHE; ++j) {
      const int d = t + j * n;
      if (d < p.D) out_data[base + d * p.inner] = T(v[j] - m - log_s);
    }
#else
    const float inv = 1.0 / s;
    for (int j = 0; j < CACHE; ++j) {
      const int d = t + j * n;
      if (d < p.D) out_data[base + d * p.inner] = T(exp(v[j] - m) * inv);
    }
#endif
    return;
  }

  float m = -1.0 / 0.0;
  for (int d = t; d < p.D; d += n) m = max(m, float(in_data[base + d * p.inner]));
  m = workgroup_max(m);
  float s = 0.0;
  for (int d = t; d < p.D; d += n) s += exp(in_data[base + d * p.inner] - m);
  s = workgroup_sum(s);
#if LOG_SOFTMAX
  const float log_s = log(s);
  for (int d = t; d < p.D; d += n) out_data[base + d * p.inner] = T(in_data[base + d * p.inner] - m - log_s);
#else
  const float inv = 1.0 / s;
  for (int d = t; d < p.D; d += n) out_data[base + d * p.inner] = T(exp(in_data[base + d * p.inner] - m) * inv);
#endif
}
