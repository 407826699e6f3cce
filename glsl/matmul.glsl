// Batched matrix multiply with optional bias:
//   out[b, m, n] = alpha * sum_k A[b, m, k] * B[b, k, n] + beta * bias[b, m, n]
// A, B and bias are addressed through strides, so one kernel serves mm, bmm,
// addmm and linear (whose weight [N, K] is B with strides (1, K)).
// Each invocation computes 4 x 4 adjacent outputs (4 rows x 4 columns) of a
// (4*WY) x (4*WX) tile. Accumulators are named variables, never arrays: the
// NVIDIA compiler put arrays in local memory and ran 10x slower. (8 x 8 per
// invocation in 128 x 128 tiles measured no faster on the H100.)
// Storage is T (f32 or f16); products accumulate in float. The _res variants add a residual
// (matmul_params.glslh) after the activation.
// variant matmul: RESIDUAL=0
// variant matmul_res: RESIDUAL=1
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

const uint BK = 16;
const uint TM = gl_WorkGroupSize.y * 4;
const uint TN = gl_WorkGroupSize.x * 4;
// Tiles of vec4: an invocation reads 4 rows of A and 4 columns of B at a k
// with one 16-byte shared load each.
shared vec4 a_tile[BK][TM / 4];
shared vec4 b_tile[BK][TN / 4];

// Writes row m of an invocation's block (columns n .. n + 3).
void store_row(int b, int m, int n, vec4 row) {
  if (m >= p.M) return;
  for (int j = 0; j < 4; ++j) {
    if (n + j >= p.N) return;
    float v = p.alpha * row[j];
    if (p.has_bias != 0) v += p.beta * float(bias_data[b * p.bias_sb + m * p.bias_sm + (n + j) * p.bias_sn]);
    const int o = b * p.c_sb + m * p.N + n + j;
    out_data[o] = T(epilogue_tail(v, o));
  }
}

#define DECLARE_BLOCK(P) vec4 P##0 = vec4(0.0), P##1 = vec4(0.0), P##2 = vec4(0.0), P##3 = vec4(0.0)
#define FMA_BLOCK(P, A, B)             \
  P##0 = fma(vec4(A.x), B, P##0);      \
  P##1 = fma(vec4(A.y), B, P##1);      \
  P##2 = fma(vec4(A.z), B, P##2);      \
  P##3 = fma(vec4(A.w), B, P##3)
#define STORE_BLOCK(P, M, N)           \
  store_row(b, M, N, P##0);            \
  store_row(b, M + 1, N, P##1);        \
  store_row(b, M + 2, N, P##2);        \
  store_row(b, M + 3, N, P##3)

void main() {
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint nthreads = gl_WorkGroupSize.x * gl_WorkGroupSize.y;
  const uint tid = ty * gl_WorkGroupSize.x + tx;
  const int m0 = int(gl_WorkGroupID.y * TM);
  const int n0 = int(gl_WorkGroupID.x * TN);
  const int b = int(gl_WorkGroupID.z);
  const int a_base = b * p.a_sb;
  const int b_base = b * p.b_sb;

  // Rows m0 + 4 ty + 0..3, columns n0 + 4 tx + 0..3.
  DECLARE_BLOCK(c00_);

  for (int k0 = 0; k0 < p.K; k0 += int(BK)) {
    for (uint e = tid; e < BK * TM; e += nthreads) {
      uint kk = e % BK, mm = e / BK;
      int m = m0 + int(mm), k = k0 + int(kk);
      a_tile[kk][mm >> 2][mm & 3] = (m < p.M && k < p.K) ? float(a_data[a_base + m * p.a_sm + k * p.a_sk]) : 0.0;
    }
    // Walk B along whichever of k and n is contiguous, so neighbouring
    // invocations read neighbouring addresses (linear weights are contiguous in k).
    for (uint e = tid; e < BK * TN; e += nthreads) {
      uint nn, kk;
      if (p.b_sk == 1) {
        kk = e % BK;
        nn = e / BK;
      } else {
        nn = e % TN;
        kk = e / TN;
      }
      int n = n0 + int(nn), k = k0 + int(kk);
      b_tile[kk][nn >> 2][nn & 3] = (n < p.N && k < p.K) ? float(b_data[b_base + k * p.b_sk + n * p.b_sn]) : 0.0;
    }
    barrier();
    for (uint kk = 0; kk < BK; ++kk) {
      const vec4 a0 = a_tile[kk][ty];
      const vec4 b0 = b_tile[kk][tx];
      FMA_BLOCK(c00_, a0, b0);
    }
    barrier();
  }

  const int m = m0 + int(ty * 4), n = n0 + int(tx * 4);
  STORE_BLOCK(c00_, m, n);
}
