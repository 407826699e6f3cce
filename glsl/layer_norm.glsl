// native_layer_norm over the trailing `D` elements of each row:
//   out = (x - mean) * rstd * weight + bias, also writing mean and rstd per row.
// One workgroup per row (256 invocations for rows of 1024 or more); mean first,
// then the variance around it (two passes keep precision for rows with a large mean).
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
// params-struct: LayerNormParams
layout(set = 0, binding = 6) uniform Params {
  int rows;
  int D;
  int has_weight;
  int has_bias;
  float eps;
  int pad0, pad1, pad2;  // 32 bytes, as the runtime has always uploaded
} p;

// A row of at most CACHE elements per invocation stays in registers: one read
// of the input instead of three.
const int CACHE = 16;

void main() {
  const int row = int(flat_group());
  if (row >= p.rows) return;  // uniform across the workgroup
  const int base = row * p.D;
  const int t = int(gl_LocalInvocationID.x);
  const int n = int(gl_WorkGroupSize.x);

  float mean, rstd;
  if (p.D <= n * CACHE) {  // uniform
    float x[CACHE];
    float s = 0.0;
    for (int j = 0; j < CACHE; ++j) {
      const int d = t + j * n;
      x[j] = d < p.D ? float(in_data[base + d]) : 0.0;
      s += x[j];
    }
    mean = workgroup_sum(s) / float(p.D);
    float v = 0.0;
    for (int j = 0; j < CACHE; ++j) {
      const float c = t + j * n < p.D ? x[j] - mean : 0.0;
      v += c * c;
    }
    rstd = inversesqrt(workgroup_sum(v) / float(p.D) + p.eps);
    for (int j = 0; j < CACHE; ++j) {
      const int d = t + j * n;
      if (d < p.D) {
        float y = (x[j] - mean) * rstd;
        if (p.has_weight != 0) y *= float(weight_data[d]);
        if (p.has_bias != 0) y += float(bias_data[d]);
        out_data[base + d] = T(y);
      }
    }
  } else {
    float s = 0.0;
    for (int d = t; d < p.D; d += n) s += in_data[base + d];
    mean = workgroup_sum(s) / float(p.D);
    float v = 0.0;
    for (int d = t; d < p.D; d += n) {
      float c = in_data[base + d] - mean;
      v += c * c;
    }
    rstd = inversesqrt(workgroup_sum(v) / float(p.D) + p.eps);
    for (int d = t; d < p.D; d += n) {
      float y = (in_data[base + d] - mean) * rstd;
      if (p.has_weight != 0) y *= weight_data[d];
      if (p.has_bias != 0) y += bias_data[d];
      out_data[base + d] = T(y);
    }
  }
  if (t == 0) {
    mean_data[row] = T(mean);
    rstd_data[row] = T(rstd);
  }
}
