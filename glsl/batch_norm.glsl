// _native_batch_norm_legit_no_training: per channel (dim 1),
//   out = (x - running_mean) * inversesqrt(running_var + eps) * weight + bias.
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
layout(set = 0, binding = 2) readonly buffer Weight { T weight_data[]; };
layout(set = 0, binding = 3) readonly buffer Bias { T bias_data[]; };
layout(set = 0, binding = 4) readonly buffer Mean { T mean_data[]; };
layout(set = 0, binding = 5) readonly buffer Var { T var_data[]; };
// params-struct: BatchNormParams
layout(set = 0, binding = 6) uniform Params {
  int numel;
  int C;
  int inner;  // elements per (n, c)
  int has_weight;
  int has_bias;
  float eps;
  int pad0, pad1;  // 32 bytes, as the runtime has always uploaded
} p;

void main() {
  const int i = int(flat_index());
  if (i >= p.numel) return;
  const int c = (i / p.inner) % p.C;
  float y = (in_data[i] - mean_data[c]) * inversesqrt(var_data[c] + p.eps);
  if (p.has_weight != 0) y *= weight_data[c];
  if (p.has_bias != 0) y += bias_data[c];
  out_data[i] = T(y);
}
