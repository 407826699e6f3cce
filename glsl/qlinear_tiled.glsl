// Weight-only quantized linear for many rows (prefill): the tiled matmul of
// matmul.glsl with the weight tile dequantized as it is loaded into shared memory.
// out[m, n] = sum_k x[m, k] * (q[n, k] - zero[n, g]) * scale[n, g] + bias[n];
// q packed 32 / bits per uint word (see qlinear_rows.glsl).
// Each workgroup computes a (4*WY) x (4*WX) tile; each invocation 4 x 4 outputs.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
layout(set = 0, binding = 1) readonly buffer X { float x_data[]; };
layout(set = 0, binding = 2) readonly buffer W { uint w_data[]; };
layout(set = 0, binding = 3) readonly buffer S { float s_data[]; };
layout(set = 0, binding = 4) readonly buffer Z { int z_data[]; };
layout(set = 0, binding = 5) readonly buffer Bias { float bias_data[]; };
#include "qlinear_params.glslh"

const uint BK = 16;
const uint TM = gl_WorkGroupSize.y * 4;
const uint TN = gl_WorkGroupSize.x * 4;
shared float a_tile[BK][TM];
shared float b_tile[BK][TN];

float weight(int n, int k) {
  const int per = 32 / p.bits;
  const uint word = w_data[n * p.words_per_row + k / per];
  const int i = k % per;
  const int q = int(word << uint(32 - p.bits * (i + 1))) >> (32 - p.bits);
  const int g = k / p.group_size;
  const int zero = p.has_zeros != 0 ? z_data[n * p.groups + g] : 0;
  return float(q - zero) * s_data[n * p.groups + g];
}

void main() {
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint nthreads = gl_WorkGroupSize.x * gl_WorkGroupSize.y;
  const uint tid = ty * gl_WorkGroupSize.x + tx;
  const int m0 = int(gl_WorkGroupID.y * TM);
  const int n0 = int(gl_WorkGroupID.x * TN);

  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;

  for (int k0 = 0; k0 < p.K; k0 += int(BK)) {
    for (uint e = tid; e < BK * TM; e += nthreads) {
      uint kk = e % BK, mm = e / BK;
      int m = m0 + int(mm), k = k0 + int(kk);
      a_tile[kk][mm] = (m < p.M && k < p.K) ? x_data[m * p.K + k] : 0.0;
    }
    for (uint e = tid; e < BK * TN; e += nthreads) {
      uint kk = e % BK, nn = e / BK;
      int n = n0 + int(nn), k = k0 + int(kk);
      b_tile[kk][nn] = (n < p.N && k < p.K) ? weight(n, k) : 0.0;
    }
    barrier();
    for (uint kk = 0; kk < BK; ++kk) {
      float av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = a_tile[kk][ty + i * gl_WorkGroupSize.y];
      for (int j = 0; j < 4; ++j) bv[j] = b_tile[kk][tx + j * gl_WorkGroupSize.x];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }

  for (int i = 0; i < 4; ++i) {
    int m = m0 + int(ty + i * gl_WorkGroupSize.y);
    if (m >= p.M) continue;
    for (int j = 0; j < 4; ++j) {
      int n = n0 + int(tx + j * gl_WorkGroupSize.x);
      if (n >= p.N) continue;
      float v = acc[i][j];
      if (p.has_bias != 0) v += bias_data[n];
      out_data[m * p.N + n] = v;
    }
  }
}
