// The float32 tiled convolution: aten.convolution (not transposed, groups 1, float32) as an
// implicit GEMM on the register blocking of matmul_tiled.glsl:
//   out[oc, m] = sum_k W[oc, k] * X[k, m],  m = (n, oh, ow) over the whole batch
// (tiles cross image boundaries: no tile is wasted on a small image's remainder).
// A workgroup of (WX, WY) invocations computes a TC-channel x TP-pixel tile
// (TC = 8 WY, TP = 8 WX); each invocation 8 channels x 8 pixels as 16 vec4
// accumulators (channels 4ty.. and TC/2+4ty.., pixels 4tx.. and TP/2+4tx..).
// K is walked tap-major: a step is one filter tap (kh, kw) and BK input
// channels, so that the tap's bounds check is made once per pixel and step and
// the step's im2col rows are one plane (H*W) apart; the tap and channel counters
// advance without divisions. The last step of a tap loads zeros past icpg. Each
// invocation gathers the im2col values of its own pixel(s), decoded once above
// the K loop. Two shared buffers: the next step's global loads go to registers
// before the current step's products, then to the other buffer, one barrier per
// step; the K loop is unrolled by two (constant buffer indices).
// The epilogue adds bias and residual, clamps, and stores vec4 along pixels when
// OH*OW is a multiple of 4 (four consecutive outputs of one image and channel).
// runtime/ops/conv_choice.cpp picks it (float32 only) and the variant (c64; c32 where
// it pads fewer channels or gives enough workgroups; c128 only to compare); the
// variants (WX, WY, BK) are glsl/conv_variants.py's.
// variants-from: conv_variants.py
// dtypes: f32
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
layout(set = 0, binding = 0) writeonly buffer Out4 { vec4 out4[]; };
layout(set = 0, binding = 1) restrict readonly buffer In { float in_data[]; };
layout(set = 0, binding = 2) restrict readonly buffer Weight { float w_data[]; };
layout(set = 0, binding = 3) restrict readonly buffer Bias { float bias_data[]; };
layout(set = 0, binding = 4) restrict readonly buffer Residual { float res_data[]; };
layout(set = 0, binding = 4) restrict readonly buffer Residual4 { vec4 res4[]; };
#define PARAMS_BINDING 5
#include "conv_params.glslh"

#define NT (WX * WY)
#define TP (WX * 8)  // pixels per tile
#define TC (WY * 8)  // channels per tile
// im2col values per invocation and step: PPI pixels x RPI rows, rows RSTEP apart.
#define B_LOADS (BK * TP / NT)
#define PPI (TP >= NT ? TP / NT : 1)
#define RPI (B_LOADS / PPI)
#define RSTEP (NT >= TP ? NT / TP : 1)
// weights per invocation and step
#define A_LOADS (BK * TC / NT)
#if B_LOADS * NT != BK * TP || A_LOADS * NT != BK * TC || (TP % NT != 0 && NT % TP != 0) || NT % TC != 0
#error the tiles must divide evenly among the invocations
#endif

shared vec4 a_tile[2][BK][TC / 4];  // weights [k][channel]
shared vec4 b_tile[2][BK][TP / 4];  // im2col [k][pixel]

#define DECL4(P) vec4 P##0 = vec4(0.0), P##1 = vec4(0.0), P##2 = vec4(0.0), P##3 = vec4(0.0)
// Channels a.x .. a.w of block P times the 4 pixels bv.
#define FMA4(P, a, bv)             \
  P##0 = fma(vec4(a.x), bv, P##0); \
  P##1 = fma(vec4(a.y), bv, P##1); \
  P##2 = fma(vec4(a.z), bv, P##2); \
  P##3 = fma(vec4(a.w), bv, P##3)

int M, npix;
bool vec_out;

// Writes channel c's outputs at flat pixels gm .. gm + 3 (ob: the output offset
// of pixel gm at channel 0, for the vec4 path).
void store4(int c, int gm, int ob, vec4 v) {
  if (c >= p.ocpg || gm >= M) return;
  if (p.has_bias != 0) v += bias_data[c];
  if (vec_out) {
    const int o = ob + c * npix;
    if (p.has_residual != 0) v += res4[o >> 2];
    if (p.has_clamp != 0) v = clamp_keep_nan(v, p.out_min, p.out_max);
    out4[o >> 2] = v;
    return;
  }
  for (int j = 0; j < 4; ++j) {
    const int g = gm + j;
    if (g >= M) return;
    const int n = g / npix;
    const int o = (n * p.OC + c) * npix + (g - n * npix);
    float x = v[j];
    if (p.has_residual != 0) x += res_data[o];
    if (p.has_clamp != 0) x = clamp_keep_nan(x, p.out_min, p.out_max);
    out_data[o] = x;
  }
}

#define STORE4(P, C, GM, OB)     \
  store4(C + 0, GM, OB, P##0);   \
  store4(C + 1, GM, OB, P##1);   \
  store4(C + 2, GM, OB, P##2);   \
  store4(C + 3, GM, OB, P##3)

void main() {
  const int tid = int(gl_LocalInvocationIndex);
  const int tx = int(gl_LocalInvocationID.x);
  const int ty = int(gl_LocalInvocationID.y);
  // Channel tiles on x: consecutive workgroups share the pixels they gather.
  const int oc0 = int(gl_WorkGroupID.x) * TC;
  const int m0 = int(gl_WorkGroupID.y) * TP;
  npix = p.OH * p.OW;
  M = p.N * npix;
  vec_out = npix % 4 == 0;
  const int HW = p.H * p.W;
  const int ksize = p.KH * p.KW;
  const int K = p.icpg * ksize;

  // This invocation's pixels: base offset (at channel 0, tap 0; may point
  // outside the image, used only where the tap lands inside), first input row
  // and column, and whether the pixel exists.
  int px_base[PPI], px_ih[PPI], px_iw[PPI];
  bool px_ok[PPI];
  [[unroll]] for (int q = 0; q < PPI; ++q) {
    const int gm = m0 + tid % TP + q * NT;
    const int n = gm / npix, pix = gm - (gm / npix) * npix;
    const int oh = pix / p.OW, ow = pix - (pix / p.OW) * p.OW;
    px_ok[q] = gm < M;
    px_ih[q] = oh * p.stride_h - p.pad_h;
    px_iw[q] = ow * p.stride_w - p.pad_w;
    px_base[q] = n * p.C * HW + px_ih[q] * p.W + px_iw[q] + (tid / TP) * HW;
  }
  const int row0 = tid / TP;  // this invocation's first im2col row in a step
  // Weight elements: element i is channel tid % TC (NT is a multiple of TC), row
  // tid / TC + i * (NT / TC) of the step.
  const int w_row = tid / TC;
  const bool w_ok = oc0 + tid % TC < p.ocpg;
  const int w_off = (oc0 + tid % TC) * K + w_row * ksize;

  DECL4(c00_);
  DECL4(c01_);
  DECL4(c10_);
  DECL4(c11_);

  float ra[A_LOADS], rb[B_LOADS];
  // The step the next fetch loads: input channels l_ic .. l_ic + BK - 1 at tap (l_kh, l_kw).
  int l_ic = 0, l_kh = 0, l_kw = 0;
  // Predicated loads: masked-out lanes (padding, channels past the end) fetch
  // nothing. Loading index 0 there and selecting zero instead (the coopconv way)
  // touched another cache line per load and ran 3-10% slower on the H100.
#define LOAD(dst, buf, idx, ok) \
  dst = 0.0;                    \
  if (ok) dst = buf[idx]
#define FETCH()                                                                           \
  {                                                                                       \
    const int dh = l_kh * p.dil_h, dw = l_kw * p.dil_w;                                   \
    const int rem = p.icpg - l_ic;                                                        \
    const int wofs = l_ic * ksize + l_kh * p.KW + l_kw;                                   \
    [[unroll]] for (int i = 0; i < A_LOADS; ++i) {                                        \
      const bool ok = w_ok && w_row + i * (NT / TC) < rem;                                \
      LOAD(ra[i], w_data, w_off + wofs + i * (NT / TC) * ksize, ok);                      \
    }                                                                                     \
    const int toff = l_ic * HW + dh * p.W + dw;                                           \
    [[unroll]] for (int q = 0; q < PPI; ++q) {                                            \
      const bool in_img = px_ok[q] && uint(px_ih[q] + dh) < uint(p.H) &&                  \
                          uint(px_iw[q] + dw) < uint(p.W);                                \
      const int a = px_base[q] + toff;                                                    \
      [[unroll]] for (int j = 0; j < RPI; ++j) {                                          \
        const bool ok = in_img && row0 + j * RSTEP < rem;                                 \
        LOAD(rb[q * RPI + j], in_data, a + j * RSTEP * HW, ok);                           \
      }                                                                                   \
    }                                                                                     \
    l_ic += BK;                                                                           \
    if (l_ic >= p.icpg) {                                                                 \
      l_ic = 0;                                                                           \
      if (++l_kw == p.KW) {                                                               \
        l_kw = 0;                                                                         \
        ++l_kh;                                                                           \
      }                                                                                   \
    }                                                                                     \
  }
#define STORE_TILES(BUF)                                                                  \
  {                                                                                       \
    [[unroll]] for (int i = 0; i < A_LOADS; ++i) {                                        \
      const int c = tid % TC;                                                             \
      a_tile[BUF][w_row + i * (NT / TC)][c >> 2][c & 3] = ra[i];                          \
    }                                                                                     \
    [[unroll]] for (int q = 0; q < PPI; ++q) {                                            \
      const int px = tid % TP + q * NT;                                                   \
      [[unroll]] for (int j = 0; j < RPI; ++j) b_tile[BUF][row0 + j * RSTEP][px >> 2][px & 3] = rb[q * RPI + j]; \
    }                                                                                     \
  }

  const int steps = ksize * ((p.icpg + BK - 1) / BK);
  FETCH();
  STORE_TILES(0);
  barrier();

#define STEP(S, CUR)                                   \
  {                                                    \
    const bool more = (S) + 1 < steps;                 \
    if (more) FETCH();                                 \
    [[unroll]] for (int kk = 0; kk < BK; ++kk) {       \
      const vec4 a0 = a_tile[CUR][kk][ty];             \
      const vec4 a1 = a_tile[CUR][kk][ty + TC / 8];    \
      const vec4 b0 = b_tile[CUR][kk][tx];             \
      const vec4 b1 = b_tile[CUR][kk][tx + TP / 8];    \
      FMA4(c00_, a0, b0);                              \
      FMA4(c01_, a0, b1);                              \
      FMA4(c10_, a1, b0);                              \
      FMA4(c11_, a1, b1);                              \
    }                                                  \
    if (more) STORE_TILES((CUR) ^ 1);                  \
    barrier();                                         \
  }
  for (int s = 0; s < steps; s += 2) {
    STEP(s, 0);
    if (s + 1 < steps) STEP(s + 1, 1);
  }

  // Output offsets (channel 0) of this invocation's two groups of 4 pixels.
  const int gm0 = m0 + tx * 4, gm1 = gm0 + TP / 2;
  const int n0 = gm0 / npix, n1 = gm1 / npix;
  const int ob0 = n0 * p.OC * npix + (gm0 - n0 * npix);
  const int ob1 = n1 * p.OC * npix + (gm1 - n1 * npix);
  const int cr = oc0 + ty * 4, ch = TC / 2;
  STORE4(c00_, cr, gm0, ob0);
  STORE4(c01_, cr, gm1, ob1);
  STORE4(c10_, cr + ch, gm0, ob0);
  STORE4(c11_, cr + ch, gm1, ob1);
}
