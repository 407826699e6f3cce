// aten.convolution (not transposed) as an implicit GEMM per (batch, group):
//   out[oc, pix] = sum_k W[oc, k] * X[k, pix],  k = (ic, kh, kw), pix = (oh, ow)
// where X is the im2col matrix of the input, gathered on the fly into shared
// memory (never materialized). Each workgroup computes a 64-channel x 64-pixel
// tile, each invocation 4 x 4 outputs; K advances in steps of BK.
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
layout(set = 0, binding = 2) readonly buffer Weight { T w_data[]; };
layout(set = 0, binding = 3) readonly buffer Bias { T bias_data[]; };
layout(set = 0, binding = 4) uniform Params {
  int N, C, H, W;
  int OC, OH, OW, KH;
  int KW, stride_h, stride_w, pad_h;
  int pad_w, dil_h, dil_w, groups;
  int icpg, ocpg, oc_blocks, ow_blocks;
  int has_bias, total, pad0, pad1;
} p;

const uint BK = 16;
const uint TM = gl_WorkGroupSize.y * 4;  // output channels per tile
const uint TN = gl_WorkGroupSize.x * 4;  // output pixels per tile
shared float w_tile[BK][TM];
shared float x_tile[BK][TN];

void main() {
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint nthreads = gl_WorkGroupSize.x * gl_WorkGroupSize.y;
  const uint tid = ty * gl_WorkGroupSize.x + tx;
  const int pix0 = int(gl_WorkGroupID.x * TN);
  const int oc0 = int(gl_WorkGroupID.y * TM);
  const int n = int(gl_WorkGroupID.z) / p.groups;
  const int g = int(gl_WorkGroupID.z) % p.groups;

  const int ksize = p.KH * p.KW;
  const int K = p.icpg * ksize;
  const int npix = p.OH * p.OW;
  const int w_base = g * p.ocpg * K;
  const int in_base = (n * p.C + g * p.icpg) * p.H * p.W;

  const uint my_nn = tid % TN;
  const int my_pix = pix0 + int(my_nn);
  const bool pix_ok = my_pix < npix;
  const int ih0 = (my_pix / p.OW) * p.stride_h - p.pad_h;
  const int iw0 = (my_pix % p.OW) * p.stride_w - p.pad_w;

  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;

  for (int k0 = 0; k0 < K; k0 += int(BK)) {
    // Weights [ocpg, K] of this group: walk k fastest (contiguous).
    for (uint e = tid; e < BK * TM; e += nthreads) {
      const uint kk = e % BK, mm = e / BK;
      const int oc = oc0 + int(mm), k = k0 + int(kk);
      w_tile[kk][mm] = (oc < p.ocpg && k < K) ? w_data[w_base + oc * K + k] : 0.0;
    }
    // im2col rows: walk pixels fastest (neighbouring input columns). Each
    // invocation keeps one pixel (TN divides the invocation count: the host
    // uses 16 x 16), so its coordinates are decoded once, above the k loop.
    for (uint kk = tid / TN; kk < BK; kk += nthreads / TN) {
      const int k = k0 + int(kk);
      float v = 0.0;
      if (pix_ok && k < K) {
        const int ic = k / ksize, r = k % ksize;
        const int ih = ih0 + (r / p.KW) * p.dil_h;
        const int iw = iw0 + (r % p.KW) * p.dil_w;
        if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) v = in_data[in_base + (ic * p.H + ih) * p.W + iw];
      }
      x_tile[kk][my_nn] = v;
    }
    barrier();
    for (uint kk = 0; kk < BK; ++kk) {
      float wv[4], xv[4];
      for (int i = 0; i < 4; ++i) wv[i] = w_tile[kk][ty + i * gl_WorkGroupSize.y];
      for (int j = 0; j < 4; ++j) xv[j] = x_tile[kk][tx + j * gl_WorkGroupSize.x];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(wv[i], xv[j], acc[i][j]);
    }
    barrier();
  }

  for (int i = 0; i < 4; ++i) {
    const int oc = oc0 + int(ty + i * gl_WorkGroupSize.y);
    if (oc >= p.ocpg) continue;
    const int c = g * p.ocpg + oc;
    const float b = p.has_bias != 0 ? bias_data[c] : 0.0;
    for (int j = 0; j < 4; ++j) {
      const int pix = pix0 + int(tx + j * gl_WorkGroupSize.x);
      if (pix < npix) out_data[(n * p.OC + c) * npix + pix] = T(acc[i][j] + b);
    }
  }
}
