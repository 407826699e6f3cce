// aten.convolution (not transposed) as an implicit GEMM per (batch, group):
//   out[oc, pix] = sum_k W[oc, k] * X[k, pix],  k = (ic, kh, kw), pix = (oh, ow)
// where X is the im2col matrix of the input, gathered on the fly into shared
// memory (never materialized). A workgroup computes a TM-channel x TN-pixel
// tile, each invocation 4 x 4 outputs; K advances in steps of BK.
// The split-K variants (for few tiles, e.g. batch 1 with small images) have
// SLICES groups of invocations (local z) walk interleaved K steps of one
// smaller tile, then sum their partial tiles in shared memory: more
// workgroups, and each runs SLICES times fewer serial steps (sk16: 16 x 16
// tiles and 16 slices, for the deepest layers; smaller tiles with 32 or 64
// slices measured slower on every ResNet-18 layer on the H100: too little
// reuse per load).
// The host's local size is (TNT, TMT, SLICES).
// variants-from: conv_variants.py
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
layout(set = 0, binding = 2) readonly buffer Weight { T w_data[]; };
layout(set = 0, binding = 3) readonly buffer Bias { T bias_data[]; };
layout(set = 0, binding = 4) readonly buffer Residual { T res_data[]; };
#define PARAMS_BINDING 5
#include "conv_params.glslh"

#define TM (TMT * 4)  // output channels per tile
#define TN (TNT * 4)  // output pixels per tile
#define NT (TMT * TNT)  // invocations per slice
#define SLICE_FLOATS (BK * (TM + TN))
#define RED_FLOATS ((SLICES - 1) * TM * TN)
#define SMEM_FLOATS (SLICES * SLICE_FLOATS > RED_FLOATS ? SLICES * SLICE_FLOATS : RED_FLOATS)
// Per slice: the weight tile [BK][TM], then the im2col tile [BK][TN]; after
// the K loop the same memory holds the partial tiles of slices 1.. for the sum.
shared float smem[SMEM_FLOATS];
// Per step an invocation loads WITER weights and XITER im2col values: rows
// my_kk, my_kk + XROWS, ... of the step's BK, at its pixel my_nn.
#define WITER (BK * TM / NT)
#define XROWS (NT / TN)
#define XITER (BK / XROWS)
#if (BK * TM) % NT != 0 || NT % TN != 0 || BK % XROWS != 0
#error "tile, slices and BK do not divide evenly"
#endif

// Loads step S's weights and im2col values of this slice into wreg / xreg.
#define LOAD_STEP(S)                                                                     \
  {                                                                                      \
    const int k0 = ((S) * SLICES + slice) * BK;                                          \
    for (int i = 0; i < WITER; ++i) {                                                    \
      const int e = tid + i * NT;                                                        \
      const int oc = oc0 + e / BK, k = k0 + e % BK;                                      \
      wreg[i] = (oc < p.ocpg && k < K) ? float(w_data[w_base + oc * K + k]) : 0.0;        \
    }                                                                                    \
    for (int i = 0; i < XITER; ++i) {                                                    \
      float v = 0.0;                                                                     \
      if (pix_ok && xic[i] < p.icpg) {                                                   \
        const int ih = ih0 + xkh[i] * p.dil_h;                                           \
        const int iw = iw0 + xkw[i] * p.dil_w;                                           \
        if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) v = float(in_data[in_base + (xic[i] * p.H + ih) * p.W + iw]); \
      }                                                                                  \
      /* the next step's k is SLICES * BK further: advance (ic, kh, kw) without dividing */ \
      xkw[i] += d_kw;                                                                    \
      if (xkw[i] >= p.KW) { xkw[i] -= p.KW; xkh[i] += 1; }                               \
      xkh[i] += d_kh;                                                                    \
      if (xkh[i] >= p.KH) { xkh[i] -= p.KH; xic[i] += 1; }                               \
      xic[i] += d_ic;                                                                    \
      xreg[i] = v;                                                                       \
    }                                                                                    \
  }

void main() {
  const int tx = int(gl_LocalInvocationID.x);
  const int ty = int(gl_LocalInvocationID.y);
  const int slice = int(gl_LocalInvocationID.z);
  const int tid = ty * TNT + tx;
  const int pix0 = int(gl_WorkGroupID.x) * TN;
  const int oc0 = int(gl_WorkGroupID.y) * TM;
  const int n = int(gl_WorkGroupID.z) / p.groups;
  const int g = int(gl_WorkGroupID.z) % p.groups;
  const int wbase_s = slice * SLICE_FLOATS;
  const int xbase_s = wbase_s + BK * TM;

  const int ksize = p.KH * p.KW;
  const int K = p.icpg * ksize;
  const int npix = p.OH * p.OW;
  const int w_base = g * p.ocpg * K;
  const int in_base = (n * p.C + g * p.icpg) * p.H * p.W;

  // Each invocation gathers im2col values of one pixel (TN divides NT), so
  // its coordinates are decoded once, above the K loop.
  const int my_nn = tid % TN;
  const int my_kk = tid / TN;
  const int my_pix = pix0 + my_nn;
  const bool pix_ok = my_pix < npix;
  const int ih0 = (my_pix / p.OW) * p.stride_h - p.pad_h;
  const int iw0 = (my_pix % p.OW) * p.stride_w - p.pad_w;

  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;

  // Every slice runs the same number of steps (barriers need uniform flow);
  // a slice past the end of K loads zeros. Each step's global loads go to
  // registers first, all issued together (loops of constant trip count), and
  // the next step's are in flight while this one multiplies.
  const int steps = (K + BK * SLICES - 1) / (BK * SLICES);
  float wreg[WITER];
  float xreg[XITER];
  // The im2col rows this invocation loads, as (ic, kh, kw), and how far they move per step.
  int xic[XITER], xkh[XITER], xkw[XITER];
  for (int i = 0; i < XITER; ++i) {
    const int k = slice * BK + my_kk + i * XROWS;
    xic[i] = k / ksize;
    xkh[i] = (k - xic[i] * ksize) / p.KW;
    xkw[i] = k - xic[i] * ksize - xkh[i] * p.KW;
  }
  const int d_ic = (SLICES * BK) / ksize;
  const int d_kh = ((SLICES * BK) - d_ic * ksize) / p.KW;
  const int d_kw = (SLICES * BK) - d_ic * ksize - d_kh * p.KW;
  LOAD_STEP(0);
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < WITER; ++i) {
      const int e = tid + i * NT;
      smem[wbase_s + (e % BK) * TM + e / BK] = wreg[i];
    }
    for (int i = 0; i < XITER; ++i) smem[xbase_s + (my_kk + i * XROWS) * TN + my_nn] = xreg[i];
    barrier();
    if (s + 1 < steps) LOAD_STEP(s + 1);
    for (int kk = 0; kk < BK; ++kk) {
      float wv[4], xv[4];
      for (int i = 0; i < 4; ++i) wv[i] = smem[wbase_s + kk * TM + ty + i * TMT];
      for (int j = 0; j < 4; ++j) xv[j] = smem[xbase_s + kk * TN + tx + j * TNT];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(wv[i], xv[j], acc[i][j]);
    }
    barrier();
  }

#if SLICES > 1
  if (slice > 0) {
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        smem[((slice - 1) * TM + ty + i * TMT) * TN + tx + j * TNT] = acc[i][j];
  }
  barrier();
  if (slice > 0) return;
  for (int s = 0; s < SLICES - 1; ++s)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) acc[i][j] += smem[(s * TM + ty + i * TMT) * TN + tx + j * TNT];
#endif

  for (int i = 0; i < 4; ++i) {
    const int oc = oc0 + ty + i * TMT;
    if (oc >= p.ocpg) continue;
    const int c = g * p.ocpg + oc;
    const float b = p.has_bias != 0 ? bias_data[c] : 0.0;
    for (int j = 0; j < 4; ++j) {
      const int pix = pix0 + tx + j * TNT;
      if (pix >= npix) continue;
      const int o = (n * p.OC + c) * npix + pix;
      float v = acc[i][j] + b;
      if (p.has_residual != 0) v += float(res_data[o]);
      if (p.has_clamp != 0) v = clamp_keep_nan(v, p.out_min, p.out_max);
      out_data[o] = T(v);
    }
  }
}
