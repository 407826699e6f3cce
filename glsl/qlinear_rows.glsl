// Quantized linear over a few rows of x (decode, M small): out[m, n] = sum_k x[m, k] * w[n, k] + bias[n]
// with w[n, k] = (q[n, k] - zero[n, g]) * scale[n, g], g = k / group_size, q packed
// 32 / bits per uint word (two's complement, lowest bits first; rows padded to words).
// A workgroup of 64 invocations makes R rows x NB columns; invocations split K by
// words, then reduce. A word never straddles groups (group size is a multiple of
// the values per word, or K).
// DQ8A: x is quantized per row to int8 as torchao's asymmetric choose_qparams_affine
// and quantize_affine do, inside the kernel; the products of (qx - zero_x) and
// (qw - zero_w) sum in int32 per word and scale once per word.
#version 450
#extension GL_GOOGLE_include_directive : require
// variant qlinear_rows: DQ8A=0
// variant qlinear_dq8a_rows: DQ8A=1
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
layout(set = 0, binding = 1) readonly buffer X { float x_data[]; };
layout(set = 0, binding = 2) readonly buffer W { uint w_data[]; };
layout(set = 0, binding = 3) readonly buffer S { float s_data[]; };
layout(set = 0, binding = 4) readonly buffer Z { int z_data[]; };
layout(set = 0, binding = 5) readonly buffer Bias { float bias_data[]; };
layout(set = 0, binding = 6) uniform Params {
  int M, N, K, words_per_row;
  int group_size, groups, bits, has_zeros;
  int has_bias, pad0, pad1, pad2;
} p;

const int R = 4;
const int NB = 4;
const uint WG = 64;  // must match the host's local size
shared float partial[R * NB][WG];
#if DQ8A
shared float act_scale[R];
shared float act_zero[R];
#endif

int wvalue(uint word, int i, int bits) {
  return int(word << uint(32 - bits * (i + 1))) >> (32 - bits);
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const int n0 = int(gl_WorkGroupID.x) * NB;
  const int m0 = int(gl_WorkGroupID.y) * R;
  const int per = 32 / p.bits;
  const int rows = min(R, p.M - m0);

#if DQ8A
  // Per-row min (clamped to <= 0) and max (>= 0), as torchao's choose_qparams_affine.
  for (int r = 0; r < R; ++r) {
    float lo = 0.0, hi = 0.0;
    if (r < rows) {
      for (int k = int(tid); k < p.K; k += int(WG)) {
        float v = x_data[(m0 + r) * p.K + k];
        lo = min(lo, v);
        hi = max(hi, v);
      }
    }
    partial[2 * r][tid] = lo;
    partial[2 * r + 1][tid] = hi;
  }
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (tid < s) {
      for (int r = 0; r < R; ++r) {
        partial[2 * r][tid] = min(partial[2 * r][tid], partial[2 * r][tid + s]);
        partial[2 * r + 1][tid] = max(partial[2 * r + 1][tid], partial[2 * r + 1][tid + s]);
      }
    }
    barrier();
  }
  if (tid < uint(R)) {
    float lo = partial[2 * tid][0], hi = partial[2 * tid + 1][0];
    float scale = max((hi - lo) / 255.0, 1.17549435e-38);
    act_scale[tid] = scale;
    act_zero[tid] = clamp(-128.0 - roundEven(lo / scale), -128.0, 127.0);
  }
  barrier();
  float inv_scale[R];
  for (int r = 0; r < R; ++r) inv_scale[r] = 1.0 / act_scale[r];
#endif

  float acc[R][NB];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < NB; ++j) acc[r][j] = 0.0;

  for (int w = int(tid); w < p.words_per_row; w += int(WG)) {
    const int k0 = w * per;
    const int g = k0 / p.group_size;
#if DQ8A
    int xv[R][8];
#else
    float xv[R][8];
#endif
    for (int r = 0; r < R; ++r) {
      for (int i = 0; i < per; ++i) {
        const int k = k0 + i;
#if DQ8A
        int v = 0;
        if (r < rows && k < p.K) {
          float q = clamp(roundEven(x_data[(m0 + r) * p.K + k] * inv_scale[r]) + act_zero[r], -128.0, 127.0);
          v = int(q - act_zero[r]);
        }
#else
        float v = (r < rows && k < p.K) ? x_data[(m0 + r) * p.K + k] : 0.0;
#endif
        xv[r][i] = v;
      }
    }
    for (int j = 0; j < NB; ++j) {
      const int n = n0 + j;
      if (n >= p.N) break;
      const uint word = w_data[n * p.words_per_row + w];
      const int zero = p.has_zeros != 0 ? z_data[n * p.groups + g] : 0;
      const float scale = s_data[n * p.groups + g];
      int wv[8];
      for (int i = 0; i < per; ++i) wv[i] = wvalue(word, i, p.bits) - zero;
      for (int r = 0; r < rows; ++r) {
#if DQ8A
        int dot = 0;
        for (int i = 0; i < per; ++i) dot += xv[r][i] * wv[i];
        acc[r][j] += float(dot) * scale;
#else
        float dot = 0.0;
        for (int i = 0; i < per; ++i) dot += xv[r][i] * float(wv[i]);
        acc[r][j] += dot * scale;
#endif
      }
    }
  }

  barrier();  // the DQ8A min/max reduction used `partial`
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < NB; ++j) partial[r * NB + j][tid] = acc[r][j];
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (tid < s) {
      for (int e = 0; e < R * NB; ++e) partial[e][tid] += partial[e][tid + s];
    }
    barrier();
  }
  if (tid < uint(R * NB)) {
    const int r = int(tid) / NB, j = int(tid) % NB;
    const int m = m0 + r, n = n0 + j;
    if (r < rows && n < p.N) {
      float v = partial[tid][0];
#if DQ8A
      v *= act_scale[r];
#endif
      if (p.has_bias != 0) v += bias_data[n];
      out_data[m * p.N + n] = v;
    }
  }
}
