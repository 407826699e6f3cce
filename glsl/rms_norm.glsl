// rms_norm over the trailing `D` elements of each row:
//   out = x * rsqrt(mean(x^2) + eps) * weight
// One workgroup per row.
// subgroup-variants
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"
#include "workgroup_reduce.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
layout(set = 0, binding = 2) readonly buffer Weight { T weight_data[]; };
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
  const int base = row * p.D;
  const int t = int(gl_LocalInvocationID.x);
  const int n = int(gl_WorkGroupSize.x);

  float s = 0.0;
  for (int d = t; d < p.D; d += n) {
    const float x = in_data[base + d];
    s += x * x;
  }
  const float rstd = inversesqrt(workgroup_sum(s) / float(p.D) + p.eps);
  for (int d = t; d < p.D; d += n) {
    float y = in_data[base + d] * rstd;
    if (p.has_weight != 0) y *= weight_data[d];
    out_data[base + d] = T(y);
  }
}
