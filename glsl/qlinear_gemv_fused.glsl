// et_vk.vkd_linear_qw_fused at one row (decode), in one dispatch: up to three weight-only
// quantized linears of one input x [K] (q, k, v; or w1, w3), each with its own N and output,
// optionally of rms_norm(x) and with the epilogues silu(a) * b and + residual.
//   out_j[n] = r * sum_k (x[k] * gamma[k]) * w_j[n, k] + bias_j[n],   r = rsqrt(mean(x^2) + eps)
// (no norm: r = 1, gamma = 1). The norm's scale r is one number per row, so it comes out of the
// sum: each workgroup sums x^2 over the words its invocations read anyway (the whole row), in
// the same loop and the same reduction as the products; no pass over x before the weights.
// PAIR (silu_mul): a workgroup makes NC columns of both w_0 and w_1 and stores
// silu(a) * b to out_0; else workgroups map onto the weights' concatenated column ranges
// (weight j from workgroup wg_start[j]), NC columns of one weight each.
// The residual (one output) is added last.
//
// The loop is qlinear_gemv.glsl's (invocations split K word by word; words decode as
// qlinear_gemv.glslh says); the columns of all weights together give enough workgroups
// where one small weight (k, v: 2048 -> 256) alone would not fill the GPU.
// X4: x (and gamma) read as vec4 (K a multiple of 4 and of the word's values); else scalar.
#version 450
#extension GL_GOOGLE_include_directive : require
// variant qlinear_gemv_fused_b4: BITS=4 X4=0 PAIR=0 NC=4 U=1
// variant qlinear_gemv_fused_b4_x4: BITS=4 X4=1 PAIR=0 NC=4 U=1
// variant qlinear_gemv_fused_b8: BITS=8 X4=0 PAIR=0 NC=4 U=1
// variant qlinear_gemv_fused_b8_x4: BITS=8 X4=1 PAIR=0 NC=4 U=1
// variant qlinear_gemv_fused_pair_b4: BITS=4 X4=0 PAIR=1 NC=4 U=1
// variant qlinear_gemv_fused_pair_b4_x4: BITS=4 X4=1 PAIR=1 NC=4 U=1
// variant qlinear_gemv_fused_pair_b8: BITS=8 X4=0 PAIR=1 NC=4 U=1
// variant qlinear_gemv_fused_pair_b8_x4: BITS=8 X4=1 PAIR=1 NC=4 U=1
// Other shapes of the int4 kernels, to compare (the setting QLINEAR_GEMV_FUSED_SHAPE, "cNuM":
// N columns per workgroup, M words of each column per invocation and step):
// variant qlinear_gemv_fused_b4_c1u1: BITS=4 X4=0 PAIR=0 NC=1 U=1
// variant qlinear_gemv_fused_b4_c2u1: BITS=4 X4=0 PAIR=0 NC=2 U=1
// variant qlinear_gemv_fused_b4_c1u2: BITS=4 X4=0 PAIR=0 NC=1 U=2
// variant qlinear_gemv_fused_b4_c2u2: BITS=4 X4=0 PAIR=0 NC=2 U=2
// variant qlinear_gemv_fused_b4_c4u2: BITS=4 X4=0 PAIR=0 NC=4 U=2
// variant qlinear_gemv_fused_b4_c1u4: BITS=4 X4=0 PAIR=0 NC=1 U=4
// variant qlinear_gemv_fused_b4_c2u4: BITS=4 X4=0 PAIR=0 NC=2 U=4
// variant qlinear_gemv_fused_b4_c4u4: BITS=4 X4=0 PAIR=0 NC=4 U=4
// variant qlinear_gemv_fused_b4_x4_c1u1: BITS=4 X4=1 PAIR=0 NC=1 U=1
// variant qlinear_gemv_fused_b4_x4_c2u1: BITS=4 X4=1 PAIR=0 NC=2 U=1
// variant qlinear_gemv_fused_b4_x4_c1u2: BITS=4 X4=1 PAIR=0 NC=1 U=2
// variant qlinear_gemv_fused_b4_x4_c2u2: BITS=4 X4=1 PAIR=0 NC=2 U=2
// variant qlinear_gemv_fused_b4_x4_c4u2: BITS=4 X4=1 PAIR=0 NC=4 U=2
// variant qlinear_gemv_fused_b4_x4_c1u4: BITS=4 X4=1 PAIR=0 NC=1 U=4
// variant qlinear_gemv_fused_b4_x4_c2u4: BITS=4 X4=1 PAIR=0 NC=2 U=4
// variant qlinear_gemv_fused_b4_x4_c4u4: BITS=4 X4=1 PAIR=0 NC=4 U=4
// variant qlinear_gemv_fused_pair_b4_c1u1: BITS=4 X4=0 PAIR=1 NC=1 U=1
// variant qlinear_gemv_fused_pair_b4_c2u1: BITS=4 X4=0 PAIR=1 NC=2 U=1
// variant qlinear_gemv_fused_pair_b4_c1u2: BITS=4 X4=0 PAIR=1 NC=1 U=2
// variant qlinear_gemv_fused_pair_b4_c2u2: BITS=4 X4=0 PAIR=1 NC=2 U=2
// variant qlinear_gemv_fused_pair_b4_c4u2: BITS=4 X4=0 PAIR=1 NC=4 U=2
// variant qlinear_gemv_fused_pair_b4_c1u4: BITS=4 X4=0 PAIR=1 NC=1 U=4
// variant qlinear_gemv_fused_pair_b4_c2u4: BITS=4 X4=0 PAIR=1 NC=2 U=4
// variant qlinear_gemv_fused_pair_b4_c4u4: BITS=4 X4=0 PAIR=1 NC=4 U=4
// variant qlinear_gemv_fused_pair_b4_x4_c1u1: BITS=4 X4=1 PAIR=1 NC=1 U=1
// variant qlinear_gemv_fused_pair_b4_x4_c2u1: BITS=4 X4=1 PAIR=1 NC=2 U=1
// variant qlinear_gemv_fused_pair_b4_x4_c1u2: BITS=4 X4=1 PAIR=1 NC=1 U=2
// variant qlinear_gemv_fused_pair_b4_x4_c2u2: BITS=4 X4=1 PAIR=1 NC=2 U=2
// variant qlinear_gemv_fused_pair_b4_x4_c4u2: BITS=4 X4=1 PAIR=1 NC=4 U=2
// variant qlinear_gemv_fused_pair_b4_x4_c1u4: BITS=4 X4=1 PAIR=1 NC=1 U=4
// variant qlinear_gemv_fused_pair_b4_x4_c2u4: BITS=4 X4=1 PAIR=1 NC=2 U=4
// variant qlinear_gemv_fused_pair_b4_x4_c4u4: BITS=4 X4=1 PAIR=1 NC=4 U=4
// SG: the sums across the workgroup by subgroupAdd, then one partial per subgroup through
// shared memory (one barrier; the tree takes log2(local size)); the residual and biases are
// read before the loop, so the epilogue waits on no load. "cNuMs" shapes, only where the device
// has subgroup arithmetic; c4u2s is the int4 default there (runtime/ops/quantized_linear.cpp).
// H100 (benchmarks/results/decode_gemv_h100_2026-11-25.md): c4u4s and c8u1s were slower than c4u1.
// variant qlinear_gemv_fused_b4_c4u1s: BITS=4 X4=0 PAIR=0 NC=4 U=1 SG=1
// variant qlinear_gemv_fused_b4_x4_c4u1s: BITS=4 X4=1 PAIR=0 NC=4 U=1 SG=1
// variant qlinear_gemv_fused_pair_b4_c4u1s: BITS=4 X4=0 PAIR=1 NC=4 U=1 SG=1
// variant qlinear_gemv_fused_pair_b4_x4_c4u1s: BITS=4 X4=1 PAIR=1 NC=4 U=1 SG=1
// variant qlinear_gemv_fused_b4_c4u2s: BITS=4 X4=0 PAIR=0 NC=4 U=2 SG=1
// variant qlinear_gemv_fused_b4_x4_c4u2s: BITS=4 X4=1 PAIR=0 NC=4 U=2 SG=1
// variant qlinear_gemv_fused_pair_b4_c4u2s: BITS=4 X4=0 PAIR=1 NC=4 U=2 SG=1
// variant qlinear_gemv_fused_pair_b4_x4_c4u2s: BITS=4 X4=1 PAIR=1 NC=4 U=2 SG=1
// variant qlinear_gemv_fused_b4_c2u1s: BITS=4 X4=0 PAIR=0 NC=2 U=1 SG=1
// variant qlinear_gemv_fused_b4_x4_c2u1s: BITS=4 X4=1 PAIR=0 NC=2 U=1 SG=1
// variant qlinear_gemv_fused_pair_b4_c2u1s: BITS=4 X4=0 PAIR=1 NC=2 U=1 SG=1
// variant qlinear_gemv_fused_pair_b4_x4_c2u1s: BITS=4 X4=1 PAIR=1 NC=2 U=1 SG=1
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#ifndef SG
#define SG 0
#endif
#if SG
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

const int PER = 32 / BITS;  // values per word
// NC columns per workgroup (of each weight of the pair); NS dot products per invocation;
// U words of each column per invocation and step (U * NS loads in flight per invocation).
const int NS = PAIR != 0 ? 2 * NC : NC;

// Absent tensors are bound to a present one and not read (outputs: not written).
layout(set = 0, binding = 0) writeonly buffer Out0 { float out0_data[]; };
layout(set = 0, binding = 1) writeonly buffer Out1 { float out1_data[]; };
layout(set = 0, binding = 2) writeonly buffer Out2 { float out2_data[]; };
#if X4
layout(set = 0, binding = 3) readonly buffer X { vec4 x_data[]; };
layout(set = 0, binding = 4) readonly buffer Gamma { vec4 gamma_data[]; };
#else
layout(set = 0, binding = 3) readonly buffer X { float x_data[]; };
layout(set = 0, binding = 4) readonly buffer Gamma { float gamma_data[]; };
#endif
layout(set = 0, binding = 5) readonly buffer Residual { float residual_data[]; };
layout(set = 0, binding = 6) readonly buffer W0 { uint w0_data[]; };
layout(set = 0, binding = 7) readonly buffer W1 { uint w1_data[]; };
layout(set = 0, binding = 8) readonly buffer W2 { uint w2_data[]; };
layout(set = 0, binding = 9) readonly buffer S0 { float s0_data[]; };
layout(set = 0, binding = 10) readonly buffer S1 { float s1_data[]; };
layout(set = 0, binding = 11) readonly buffer S2 { float s2_data[]; };
layout(set = 0, binding = 12) readonly buffer Z0 { int z0_data[]; };
layout(set = 0, binding = 13) readonly buffer Z1 { int z1_data[]; };
layout(set = 0, binding = 14) readonly buffer Z2 { int z2_data[]; };
layout(set = 0, binding = 15) readonly buffer B0 { float b0_data[]; };
layout(set = 0, binding = 16) readonly buffer B1 { float b1_data[]; };
layout(set = 0, binding = 17) readonly buffer B2 { float b2_data[]; };
// params-struct: QLinearFusedParams
layout(set = 0, binding = 18) uniform Params {
  int K, words_per_row, group_size, groups;
  int group_words_log2;  // log2 of the words per group where a power of two (31: one group), else -1
  int has_zeros, has_norm, has_gamma;
  int has_residual, has_bias0, has_bias1, has_bias2;
  int N0, N1, N2;
  int wg_start1;  // the first workgroup of weight 1 (not PAIR)
  int wg_start2;  // of weight 2
  int total_groups;  // the dispatch's x and y may hold a few more (a 1-D dispatch spilled into y)
  float eps;
} p;

// NS sums, then sum(x^2): per invocation (the tree), or per subgroup (SG: at most one per invocation).
shared float partial[NS + 1][gl_WorkGroupSize.x];

#include "qlinear_gemv.glslh"

// Weight j's word, scale and zero point (j uniform across the workgroup: no divergence).
uint word_of(int j, int i) { return j == 0 ? w0_data[i] : j == 1 ? w1_data[i] : w2_data[i]; }
float scale_of(int j, int i) { return j == 0 ? s0_data[i] : j == 1 ? s1_data[i] : s2_data[i]; }
int zero_of(int j, int i) { return j == 0 ? z0_data[i] : j == 1 ? z1_data[i] : z2_data[i]; }
// Output j's value n.
void store_out(int j, int n, float v) {
  if (j == 0) {
    out0_data[n] = v;
  } else if (j == 1) {
    out1_data[n] = v;
  } else {
    out2_data[n] = v;
  }
}

// x's PER values of word w and, with the norm, gamma's; sumsq += x^2.
void load_x(int w, out float xv[PER], inout float sumsq) {
#if X4
  for (int h = 0; h < PER / 4; ++h) {
    const vec4 a = x_data[w * (PER / 4) + h];
    sumsq += dot(a, a);
    const vec4 v = p.has_gamma != 0 ? a * gamma_data[w * (PER / 4) + h] : a;
    xv[4 * h] = v.x, xv[4 * h + 1] = v.y, xv[4 * h + 2] = v.z, xv[4 * h + 3] = v.w;
  }
#else
  for (int e = 0; e < PER; ++e) {
    const int k = w * PER + e;
    // The last word's padding values are 0; x past K is not read.
    const float a = k < p.K ? x_data[k] : 0.0;
    sumsq += a * a;
    xv[e] = p.has_gamma != 0 && k < p.K ? a * gamma_data[k] : a;
  }
#endif
}

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int wg = int(gl_WorkGroupSize.x);
  const int group_id = int(gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x);
  if (group_id >= p.total_groups) return;  // uniform across the workgroup: before any barrier
  const int words = p.words_per_row;
  // This workgroup's weight (not PAIR) and first column.
#if PAIR
  const int j = 0;
  const int n0 = group_id * NC;
  const int N = p.N0;
#else
  const int j = group_id >= p.wg_start2 ? 2 : group_id >= p.wg_start1 ? 1 : 0;
  const int n0 = (group_id - (j == 2 ? p.wg_start2 : j == 1 ? p.wg_start1 : 0)) * NC;
  const int N = j == 2 ? p.N2 : j == 1 ? p.N1 : p.N0;
#endif
  // Slot s: column n0 + s % NC of weight (PAIR: s / NC, else j). Columns past N read column
  // N - 1 (no divergence in the loop) and are not stored.
  int wrow[NS], wsrc[NS];
  for (int s = 0; s < NS; ++s) {
    wrow[s] = min(n0 + s % NC, N - 1);
    wsrc[s] = PAIR != 0 ? s / NC : j;
  }

#if SG
  // The epilogue's operands, loaded now so their latency hides behind the loop's.
  float early_add = 0.0, early_bias1 = 0.0;
  if (tid < NC) {
    const int n = min(n0 + tid, N - 1);
    const int jb = PAIR != 0 ? 0 : j;
    const int has_bias = jb == 0 ? p.has_bias0 : jb == 1 ? p.has_bias1 : p.has_bias2;
    if (has_bias != 0) early_add = jb == 0 ? b0_data[n] : jb == 1 ? b1_data[n] : b2_data[n];
#if PAIR
    if (p.has_bias1 != 0) early_bias1 = b1_data[n];
#endif
  }
  const float early_residual = tid < NC && p.has_residual != 0 ? residual_data[min(n0 + tid, N - 1)] : 0.0;
#endif

  float acc[NS];
  for (int s = 0; s < NS; ++s) acc[s] = 0.0;
  float sumsq = 0.0;

  for (int w0 = tid; w0 < words; w0 += U * wg) {
    // The step's loads first (U words of NS columns), so they are in flight together.
    uint wv[U][NS];
    float sv[U][NS];
    int zv[U][NS];
    for (int u = 0; u < U; ++u) {
      // A word past the row (the last step) reads the row's last word and is not added.
      const int w = min(w0 + u * wg, words - 1);
      const int g = group_of(w);
      for (int s = 0; s < NS; ++s) {
        wv[u][s] = word_of(wsrc[s], wrow[s] * words + w);
        sv[u][s] = scale_of(wsrc[s], wrow[s] * p.groups + g);
        zv[u][s] = p.has_zeros != 0 ? zero_of(wsrc[s], wrow[s] * p.groups + g) : 0;
      }
    }
    for (int u = 0; u < U; ++u) {
      const int w = w0 + u * wg;
      if (w >= words) break;
      float xv[PER];
      load_x(w, xv, sumsq);
      const float xsum = x_sum(xv);
      for (int s = 0; s < NS; ++s) acc[s] = word_dot(xv, xsum, wv[u][s], zv[u][s], sv[u][s], acc[s]);
    }
  }

#if SG
  // Each subgroup's sums, then one partial per subgroup: the NC storing invocations add them.
  for (int s = 0; s < NS; ++s) acc[s] = subgroupAdd(acc[s]);
  sumsq = subgroupAdd(sumsq);
  if (subgroupElect()) {
    for (int s = 0; s < NS; ++s) partial[s][gl_SubgroupID] = acc[s];
    partial[NS][gl_SubgroupID] = sumsq;
  }
  barrier();
  if (tid < NC) {
    const int n = n0 + tid;
    if (n < N) {
      float a = 0.0, total_sq = 0.0;
#if PAIR
      float b = 0.0;
#endif
      for (uint i = 0; i < gl_NumSubgroups; ++i) {
        a += partial[tid][i];
        total_sq += partial[NS][i];
#if PAIR
        b += partial[NC + tid][i];
#endif
      }
      const float r = p.has_norm != 0 ? inversesqrt(total_sq / float(p.K) + p.eps) : 1.0;
      float v = a * r + early_add;
#if PAIR
      b = b * r + early_bias1;
      v = v / (1.0 + exp(-v)) * b;  // silu(a) * b
#endif
      v += early_residual;
      store_out(j, n, v);
    }
  }
#else
  // The sums across the workgroup (a power of two): a shared-memory tree.
  for (int s = 0; s < NS; ++s) partial[s][tid] = acc[s];
  partial[NS][tid] = sumsq;
  barrier();
  for (int h = wg / 2; h > 0; h >>= 1) {
    if (tid < h) {
      for (int s = 0; s <= NS; ++s) partial[s][tid] += partial[s][tid + h];
    }
    barrier();
  }
  if (tid < NC) {
    const int n = n0 + tid;
    if (n < N) {
      const float r = p.has_norm != 0 ? inversesqrt(partial[NS][0] / float(p.K) + p.eps) : 1.0;
      float v = partial[tid][0] * r;
      const int jb = PAIR != 0 ? 0 : j;
      const int has_bias = jb == 0 ? p.has_bias0 : jb == 1 ? p.has_bias1 : p.has_bias2;
      if (has_bias != 0) v += jb == 0 ? b0_data[n] : jb == 1 ? b1_data[n] : b2_data[n];
#if PAIR
      float b = partial[NC + tid][0] * r;
      if (p.has_bias1 != 0) b += b1_data[n];
      v = v / (1.0 + exp(-v)) * b;  // silu(a) * b
#endif
      if (p.has_residual != 0) v += residual_data[n];
      store_out(j, n, v);
    }
  }
#endif
}
