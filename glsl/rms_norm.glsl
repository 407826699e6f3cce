// rms_norm over the trailing `D` elements of each row:
//   out = x * rsqrt(mean(x^2) + eps) * weight
// One workgroup per row, as wide as the row needs (the host picks the workgroup size from D
// and the device's limit: add_rms_norm), so that a single row (decode) is not latency bound
// on one narrow workgroup. The _vec4 variants, for D % 4 == 0, load and store 4-vectors
// (every tensor starts at offset 0 of its buffer and rows start at multiples of D, so the
// 16-byte accesses are aligned).
// subgroup-variants
// dtypes: f32 f16
// variant rms_norm: VEC4=0
// variant rms_norm_vec4: VEC4=1
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"
#include "workgroup_reduce.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
layout(set = 0, binding = 2) readonly buffer Weight { T weight_data[]; };
layout(set = 0, binding = 0) writeonly buffer Out4 { T4 out4[]; };
layout(set = 0, binding = 1) readonly buffer In4 { T4 in4[]; };
layout(set = 0, binding = 2) readonly buffer Weight4 { T4 weight4[]; };
// params-struct: RmsNormParams
layout(set = 0, binding = 3) uniform Params {
  int rows;
  int D;
  int has_weight;
  float eps;
} p;

void main() {
  const int row = int(flat_group());
  if (row >= p.rows) return;  // uniform across the workgroup
  const int t = int(gl_LocalInvocationID.x);
  const int n = int(gl_WorkGroupSize.x);
#if VEC4
  const int D4 = p.D >> 2;
  const int base = row * D4;
  float s = 0.0;
  for (int d = t; d < D4; d += n) {
    const vec4 x = vec4(in4[base + d]);
    s += dot(x, x);
  }
  const float rstd = inversesqrt(workgroup_sum(s) / float(p.D) + p.eps);
  for (int d = t; d < D4; d += n) {
    vec4 y = vec4(in4[base + d]) * rstd;
    if (p.has_weight != 0) y *= vec4(weight4[d]);
    out4[base + d] = T4(y);
  }
#else
  const int base = row * p.D;
  float s = 0.0;
  for (int d = t; d < p.D; d += n) {
    const float x = float(in_data[base + d]);
    s += x * x;
  }
  const float rstd = inversesqrt(workgroup_sum(s) / float(p.D) + p.eps);
  for (int d = t; d < p.D; d += n) {
    float y = float(in_data[base + d]) * rstd;
    if (p.has_weight != 0) y *= float(weight_data[d]);
    out_data[base + d] = T(y);
  }
#endif
}
