// Batched matrix multiply with optional bias:
//   out[b, m, n] = alpha * sum_k A[b, m, k] * B[b, k, n] + beta * bias[b, m, n]
// A, B and bias are addressed through strides, so one kernel serves mm, bmm,
// addmm and linear (whose weight [N, K] is B with strides (1, K)).
// Each workgroup computes a (4*WX) x (4*WY) tile; each invocation 4 x 4 outputs.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
layout(set = 0, binding = 1) readonly buffer A { float a_data[]; };
layout(set = 0, binding = 2) readonly buffer B { float b_data[]; };
layout(set = 0, binding = 3) readonly buffer Bias { float bias_data[]; };
layout(set = 0, binding = 4) uniform Params {
  int M, N, K, batch;
  int a_sb, a_sm, a_sk, b_sb;
  int b_sk, b_sn, c_sb, bias_sb;
  int bias_sm, bias_sn, has_bias, pad0;
  float alpha, beta, pad1, pad2;
} p;

const uint BK = 16;
const uint TM = gl_WorkGroupSize.y * 4;
const uint TN = gl_WorkGroupSize.x * 4;
shared float a_tile[BK][TM];
shared float b_tile[BK][TN];

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

  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;

  for (int k0 = 0; k0 < p.K; k0 += int(BK)) {
    for (uint e = tid; e < BK * TM; e += nthreads) {
      uint kk = e % BK, mm = e / BK;
      int m = m0 + int(mm), k = k0 + int(kk);
      a_tile[kk][mm] = (m < p.M && k < p.K) ? a_data[a_base + m * p.a_sm + k * p.a_sk] : 0.0;
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
      b_tile[kk][nn] = (n < p.N && k < p.K) ? b_data[b_base + k * p.b_sk + n * p.b_sn] : 0.0;
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
      float v = p.alpha * acc[i][j];
      if (p.has_bias != 0) {
        v += p.beta * bias_data[b * p.bias_sb + m * p.bias_sm + n * p.bias_sn];
      }
      out_data[b * p.c_sb + m * p.N + n] = v;
    }
  }
}
