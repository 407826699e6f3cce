// Quantized weight-only linear of one row (decode): out[n] = sum_k x[k] * w[n, k] + bias[n]
// with w[n, k] = (q[n, k] - zero[n, g]) * scale[n, g], g = k / group_size, q packed
// 32 / bits per uint word (two's complement, lowest bits first; rows padded to words).
// Same bindings and parameters as qlinear_rows.glsl; the host takes this kernel where M = 1.
//
// Bound by memory: the packed rows stream once, so a workgroup makes NC columns and its
// invocations split K word by word (consecutive invocations, consecutive words: each
// warp-wide load is one 128-byte line), U words of each column per invocation and step.
// Words decode as qlinear_gemv.glslh says. The products sum in float per word,
// then scale once per word (as qlinear_rows.glsl); zero points: scale * (sum x q - z sum x).
// X4: x read as vec4 (K a multiple of 4 and of the word's values); else scalar, K checked.
#version 450
#extension GL_GOOGLE_include_directive : require
// variant qlinear_gemv_b4: BITS=4 X4=0 NC=4 U=1
// variant qlinear_gemv_b4_x4: BITS=4 X4=1 NC=4 U=1
// variant qlinear_gemv_b8: BITS=8 X4=0 NC=4 U=1
// variant qlinear_gemv_b8_x4: BITS=8 X4=1 NC=4 U=1
// Other shapes of the int4 vec4 kernel, to compare (the setting QLINEAR_GEMV_SHAPE; H100,
// benchmarks/results/gemv_h100_2026-11-25.md: c4u1 at 128 invocations was the fastest or
// within 3% on every shape; 4 words per step and 16 columns were slower everywhere):
// variant qlinear_gemv_b4_x4_c2u1: BITS=4 X4=1 NC=2 U=1
// variant qlinear_gemv_b4_x4_c4u2: BITS=4 X4=1 NC=4 U=2
// variant qlinear_gemv_b4_x4_c8u1: BITS=4 X4=1 NC=8 U=1
// SG: the sums across the workgroup by subgroupAdd, then one partial per subgroup through
// shared memory (one barrier; the tree takes log2(local size)); the bias is read before the
// loop. "c4u1s", to compare, where the device has subgroup arithmetic (H100: 0.2-0.4 us faster
// on the decode shapes, 1 us slower on 8192 -> 28672: not the default).
// variant qlinear_gemv_b4_x4_c4u1s: BITS=4 X4=1 NC=4 U=1 SG=1
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#ifndef SG
#define SG 0
#endif
#if SG
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

const int PER = 32 / BITS;  // values per word
// NC: columns per workgroup; U: words of each column per invocation and step.

layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
#if X4
layout(set = 0, binding = 1) readonly buffer X { vec4 x_data[]; };
#else
layout(set = 0, binding = 1) readonly buffer X { float x_data[]; };
#endif
layout(set = 0, binding = 2) readonly buffer W { uint w_data[]; };
layout(set = 0, binding = 3) readonly buffer S { float s_data[]; };
layout(set = 0, binding = 4) readonly buffer Z { int z_data[]; };
layout(set = 0, binding = 5) readonly buffer Bias { float bias_data[]; };
#include "qlinear_params.glslh"

shared float partial[NC][gl_WorkGroupSize.x];

#include "qlinear_gemv.glslh"

void load_x(int w, out float xv[PER]) {
#if X4
#if BITS == 4
  const vec4 a = x_data[2 * w], b = x_data[2 * w + 1];
  xv[0] = a.x, xv[1] = a.y, xv[2] = a.z, xv[3] = a.w;
  xv[4] = b.x, xv[5] = b.y, xv[6] = b.z, xv[7] = b.w;
#else
  const vec4 a = x_data[w];
  xv[0] = a.x, xv[1] = a.y, xv[2] = a.z, xv[3] = a.w;
#endif
#else
  for (int e = 0; e < PER; ++e) {
    const int k = w * PER + e;
    xv[e] = k < p.K ? x_data[k] : 0.0;  // the last word's padding values are 0, x past K is not read
  }
#endif
}

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int wg = int(gl_WorkGroupSize.x);
  const int n0 = int(gl_WorkGroupID.x) * NC;
  const int words = p.words_per_row;
  // Columns past N read column N - 1 (no divergence in the loop) and are not stored.
  int wrow[NC];
  for (int j = 0; j < NC; ++j) wrow[j] = min(n0 + j, p.N - 1);

#if SG
  // The bias, loaded now so its latency hides behind the loop's.
  const float early_bias = tid < NC && p.has_bias != 0 ? bias_data[min(n0 + tid, p.N - 1)] : 0.0;
#endif
  float acc[NC];
  for (int j = 0; j < NC; ++j) acc[j] = 0.0;

  for (int w0 = tid; w0 < words; w0 += U * wg) {
    // The step's loads first (U words of NC columns), so they are in flight together.
    uint wv[U][NC];
    float sv[U][NC];
    int zv[U][NC];
    for (int u = 0; u < U; ++u) {
      // A word past the row (the last step) reads the row's last word and is not added.
      const int w = min(w0 + u * wg, words - 1);
      const int g = group_of(w);
      for (int j = 0; j < NC; ++j) {
        wv[u][j] = w_data[wrow[j] * words + w];
        sv[u][j] = s_data[wrow[j] * p.groups + g];
        zv[u][j] = p.has_zeros != 0 ? z_data[wrow[j] * p.groups + g] : 0;
      }
    }
    for (int u = 0; u < U; ++u) {
      if (w0 + u * wg >= words) break;
      float xv[PER];
      load_x(w0 + u * wg, xv);
      const float xsum = x_sum(xv);
      for (int j = 0; j < NC; ++j) acc[j] = word_dot(xv, xsum, wv[u][j], zv[u][j], sv[u][j], acc[j]);
    }
  }

#if SG
  // Each subgroup's sums, then one partial per subgroup: the NC storing invocations add them.
  for (int j = 0; j < NC; ++j) acc[j] = subgroupAdd(acc[j]);
  if (subgroupElect()) {
    for (int j = 0; j < NC; ++j) partial[j][gl_SubgroupID] = acc[j];
  }
  barrier();
  if (tid < NC) {
    const int n = n0 + tid;
    if (n < p.N) {
      float v = 0.0;
      for (uint i = 0; i < gl_NumSubgroups; ++i) v += partial[tid][i];
      out_data[n] = v + early_bias;
    }
  }
#else
  // The NC partial sums across the workgroup (a power of two): a shared-memory tree.
  for (int j = 0; j < NC; ++j) partial[j][tid] = acc[j];
  barrier();
  for (int s = wg / 2; s > 0; s >>= 1) {
    if (tid < s) {
      for (int j = 0; j < NC; ++j) partial[j][tid] += partial[j][tid + s];
    }
    barrier();
  }
  if (tid < NC) {
    const int n = n0 + tid;
    if (n < p.N) {
      float v = partial[tid][0];
      if (p.has_bias != 0) v += bias_data[n];
      out_data[n] = v;
    }
  }
#endif
}
