// Matrix-vector products (matmul.glsl's problem with few rows, e.g. a linear
// layer at batch 1) where B is contiguous in k (a linear weight [N, K]):
// a workgroup computes local-y outputs of one row m, the local-x invocations
// of each output split K (coalesced reads of the weight row) and sum their
// partial dot products in shared memory. Same bindings and parameters as matmul.glsl.
// Storage is T (f32 or f16); products accumulate in float. The _res variants add a residual
// (matmul_params.glslh) after the activation.
// variant gemv: RESIDUAL=0
// variant gemv_res: RESIDUAL=1
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer A { T a_data[]; };
layout(set = 0, binding = 2) readonly buffer B { T b_data[]; };
layout(set = 0, binding = 3) readonly buffer Bias { T bias_data[]; };
#define PARAMS_BINDING 4
#include "matmul_params.glslh"

shared float partial[gl_WorkGroupSize.x * gl_WorkGroupSize.y];

void main() {
  const uint tx = gl_LocalInvocationID.x;
  const uint width = gl_WorkGroupSize.x;
  const uint row = gl_LocalInvocationID.y * width;
  const int n = int(gl_WorkGroupID.x * gl_WorkGroupSize.y + gl_LocalInvocationID.y);
  const int m = int(gl_WorkGroupID.y);
  const int b = int(gl_WorkGroupID.z);

  float acc = 0.0;
  if (n < p.N) {
    const int a0 = b * p.a_sb + m * p.a_sm;
    const int b0 = b * p.b_sb + n * p.b_sn;
    for (int k = int(tx); k < p.K; k += int(width)) acc = fma(float(a_data[a0 + k * p.a_sk]), float(b_data[b0 + k * p.b_sk]), acc);
  }
  partial[row + tx] = acc;
  barrier();
  for (uint s = width / 2; s > 0; s >>= 1) {
    if (tx < s) partial[row + tx] += partial[row + tx + s];
    barrier();
  }
  if (tx == 0 && n < p.N) {
    float v = p.alpha * partial[row];
    if (p.has_bias != 0) v += p.beta * float(bias_data[b * p.bias_sb + m * p.bias_sm + n * p.bias_sn]);
    const int o = b * p.c_sb + m * p.N + n;
    out_data[o] = T(epilogue_tail(v, o));
  }
}
