// Matrix-vector products (matmul.glsl's problem with few rows, e.g. a linear
// layer at batch 1) where B is contiguous in k (a linear weight [N, K]):
// a workgroup computes local-y outputs of one row m, the local-x invocations
// of each output split K (coalesced reads of the weight row) and sum their
// partial dot products in shared memory. Same bindings and parameters as matmul.glsl.
// Storage is T (f32 or f16); products accumulate in float. The _res variants add a residual
// (matmul_params.glslh) after the activation. The _ln variant (et_vk.vkd_ln_linear) layer-norms
// row m of A over K first: its mean, then the variance around it (two passes, as layer_norm.glsl),
// all the workgroup's invocations over the row (the _sg twin sums within subgroups first: two barriers a
// sum, not a tree of eight; the runtime takes it where the device has subgroup arithmetic); each element
// then normalized as it is read, (x - mean) * rstd * weight + bias, rounded to T as the norm's own output
// would be.
// variant gemv: RESIDUAL=0 LN_A=0 WG_SUBGROUP=0
// variant gemv_res: RESIDUAL=1 LN_A=0 WG_SUBGROUP=0
// variant gemv_ln: RESIDUAL=0 LN_A=1 WG_SUBGROUP=0
// variant gemv_ln_sg: RESIDUAL=0 LN_A=1 WG_SUBGROUP=1
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer A { T a_data[]; };
layout(set = 0, binding = 2) readonly buffer B { T b_data[]; };
layout(set = 0, binding = 3) readonly buffer Bias { T bias_data[]; };
#if LN_A
// The norm's weight and bias (bound to A where absent; p.ln_affine says which are).
layout(set = 0, binding = 4) readonly buffer LnWeight { T ln_w[]; };
layout(set = 0, binding = 5) readonly buffer LnBias { T ln_b[]; };
#define PARAMS_BINDING 6
#else
#define PARAMS_BINDING 4
#endif
#include "matmul_params.glslh"

shared float partial[gl_WorkGroupSize.x * gl_WorkGroupSize.y];

#if LN_A && WG_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// The sum of `v` over the workgroup, in every invocation: each subgroup's, then theirs.
float workgroup_sum(float v) {
  v = subgroupAdd(v);
  if (subgroupElect()) partial[gl_SubgroupID] = v;  // fewer subgroups than invocations
  barrier();
  float total = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) total += partial[i];
  barrier();
  return total;
}
#elif LN_A
// The sum of `v` over the workgroup (its size a power of two), in every invocation.
float workgroup_sum(float v) {
  const uint tid = gl_LocalInvocationIndex;
  partial[tid] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x * gl_WorkGroupSize.y / 2; s > 0; s >>= 1) {
    if (tid < s) partial[tid] += partial[tid + s];
    barrier();
  }
  const float total = partial[0];
  barrier();
  return total;
}
#endif

void main() {
  const uint tx = gl_LocalInvocationID.x;
  const uint width = gl_WorkGroupSize.x;
  const uint row = gl_LocalInvocationID.y * width;
  const int n = int(gl_WorkGroupID.x * gl_WorkGroupSize.y + gl_LocalInvocationID.y);
  const int m = int(gl_WorkGroupID.y);
  const int b = int(gl_WorkGroupID.z);

  const int a0 = b * p.a_sb + m * p.a_sm;
#if LN_A
  const int tid = int(gl_LocalInvocationIndex), threads = int(gl_WorkGroupSize.x * gl_WorkGroupSize.y);
  float s = 0.0;
  for (int k = tid; k < p.K; k += threads) s += float(a_data[a0 + k * p.a_sk]);
  const float mean = workgroup_sum(s) / float(p.K);
  s = 0.0;
  for (int k = tid; k < p.K; k += threads) {
    const float x = float(a_data[a0 + k * p.a_sk]) - mean;
    s += x * x;
  }
  const float rstd = inversesqrt(workgroup_sum(s) / float(p.K) + p.ln_eps);
#define A_AT(k)                                                                                      \
  float(T((float(a_data[a0 + (k) * p.a_sk]) - mean) * rstd * ((p.ln_affine & 1) != 0 ? float(ln_w[k]) : 1.0) + \
          ((p.ln_affine & 2) != 0 ? float(ln_b[k]) : 0.0)))
#else
#define A_AT(k) float(a_data[a0 + (k) * p.a_sk])
#endif
  float acc = 0.0;
  if (n < p.N) {
    const int b0 = b * p.b_sb + n * p.b_sn;
    for (int k = int(tx); k < p.K; k += int(width)) acc = fma(A_AT(k), float(b_data[b0 + k * p.b_sk]), acc);
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
