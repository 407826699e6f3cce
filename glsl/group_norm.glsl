// native_group_norm: one workgroup per (n, group), whose C / groups * HxW
// elements are contiguous; two passes (mean, then variance around it). Writes
// mean and rstd per (n, group) and the per-channel affine output.
// subgroup-variants
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"
#include "workgroup_reduce.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) writeonly buffer Mean { T mean_data[]; };
layout(set = 0, binding = 2) writeonly buffer Rstd { T rstd_data[]; };
layout(set = 0, binding = 3) readonly buffer In { T in_data[]; };
layout(set = 0, binding = 4) readonly buffer Weight { T weight_data[]; };
layout(set = 0, binding = 5) readonly buffer Bias { T bias_data[]; };
// params-struct: GroupNormParams
layout(set = 0, binding = 6) uniform Params {
  int rows;   // N * groups
  int D;      // C / groups * HxW
  int HxW;
  int cpg;    // channels per group
  int groups;
  int has_weight;
  int has_bias;
  float eps;
} p;

void main() {
  const int row = int(flat_group());
  if (row >= p.rows) return;  // uniform across the workgroup
  const int base = row * p.D;
  const int t = int(gl_LocalInvocationID.x);
  const int n = int(gl_WorkGroupSize.x);
  const int c0 = (row % p.groups) * p.cpg;

  float s = 0.0;
  for (int d = t; d < p.D; d += n) s += in_data[base + d];
  const float mean = workgroup_sum(s) / float(p.D);
  float v = 0.0;
  for (int d = t; d < p.D; d += n) {
    float c = in_data[base + d] - mean;
    v += c * c;
  }
  const float rstd = inversesqrt(workgroup_sum(v) / float(p.D) + p.eps);
  for (int d = t; d < p.D; d += n) {
    const int c = c0 + d / p.HxW;
    float y = (in_data[base + d] - mean) * rstd;
    if (p.has_weight != 0) y *= weight_data[c];
    if (p.has_bias != 0) y += bias_data[c];
    out_data[base + d] = T(y);
  }
  if (t == 0) {
    mean_data[row] = T(mean);
    rstd_data[row] = T(rstd);
  }
}
