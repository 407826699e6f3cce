// The float32 matrix multiply for large products (mm, bmm, addmm, linear):
//   out[b, m, n] = alpha * sum_k A[b, m, k] * B[b, k, n] + beta * bias[b, m, n]
// with A contiguous in k (a_sk == 1) and B contiguous in n (variant nb: mm,
// bmm, addmm) or in k (variant kb: linear's weight [N, K]); the host picks it
// (runtime/ops/matmul.cpp) and keeps matmul.glsl for everything else.
//
// A workgroup of (WX, WY) invocations computes a (8*WY) x (8*WX) tile; each
// invocation 8 x 8 outputs, as 16 named vec4 accumulators (arrays spilled to
// local memory on NVIDIA): rows 4ty..4ty+3 and TM/2+4ty..+3, columns
// 4tx..4tx+3 and TN/2+4tx..+3, so that the four 16-byte shared loads per k
// step are spread over the banks. K advances in steps of BK through two
// shared buffers: the next step's global loads (16-byte vec4 loads when
// p.aligned: K and N multiples of 4) go to registers before the current step's
// products, then to the other buffer, one barrier per step. A is stored
// transposed ([k][m]) so that both operands are read as vec4 along m and n.
// Rows of the shared tiles are padded by 4 floats against bank conflicts of
// the transposed stores.
// float32 only (fp16 products go to matmul.glsl or the cooperative-matrix path).
// Variants "u" (the default) unroll the K steps by two (constant buffer indices)
// and the products of a step ([[unroll]]): 36.5 TF/s at 4096^3 on the H100
// against 31.4 without (2026-11-22). Measured no faster and dropped: subgroups
// laid out 8 x 4 instead of 16 x 2, a variant without the scalar path; bk 16
// (the "16u" variants) is slower, kept to compare.
// Split-K (the _sk variants, SPLITK=1): workgroup z runs K slice z / batch,
// [slice * k_chunk, + k_chunk), of batch z % batch and writes its raw sums to
// row block z of binding 0, a scratch [splits * batch, M, N] (the host sets
// alpha 1 and no bias); matmul_splitk_reduce.glsl adds the slices and applies
// alpha, beta and the bias. k_chunk is a multiple of BK, so the vec4 loads stay
// aligned; empty slices (K below splits * BK) write zeros.
// A variant of its own, so that the products without a split keep their code (K
// bound and batch from the parameters, loop start 0).
// variant matmul_tiled_nb: B_KMAJOR=0 BK=8 UNROLL=0 SPLITK=0
// variant matmul_tiled_kb: B_KMAJOR=1 BK=8 UNROLL=0 SPLITK=0
// variant matmul_tiledu_nb: B_KMAJOR=0 BK=8 UNROLL=1 SPLITK=0
// variant matmul_tiledu_kb: B_KMAJOR=1 BK=8 UNROLL=1 SPLITK=0
// variant matmul_tiled16u_nb: B_KMAJOR=0 BK=16 UNROLL=1 SPLITK=0
// variant matmul_tiled16u_kb: B_KMAJOR=1 BK=16 UNROLL=1 SPLITK=0
// The _res variants (no split: the reduce adds it there) add a residual (matmul_params.glslh)
// after the activation; only linears (kb) take them.
// variant matmul_tiled_kb_res: B_KMAJOR=1 BK=8 UNROLL=0 SPLITK=0 RESIDUAL=1
// variant matmul_tiledu_kb_res: B_KMAJOR=1 BK=8 UNROLL=1 SPLITK=0 RESIDUAL=1
// variant matmul_tiled16u_kb_res: B_KMAJOR=1 BK=16 UNROLL=1 SPLITK=0 RESIDUAL=1
// variant matmul_tiled_sk_nb: B_KMAJOR=0 BK=8 UNROLL=0 SPLITK=1
// variant matmul_tiled_sk_kb: B_KMAJOR=1 BK=8 UNROLL=0 SPLITK=1
// variant matmul_tiledu_sk_nb: B_KMAJOR=0 BK=8 UNROLL=1 SPLITK=1
// variant matmul_tiledu_sk_kb: B_KMAJOR=1 BK=8 UNROLL=1 SPLITK=1
// variant matmul_tiled16u_sk_nb: B_KMAJOR=0 BK=16 UNROLL=1 SPLITK=1
// variant matmul_tiled16u_sk_kb: B_KMAJOR=1 BK=16 UNROLL=1 SPLITK=1
// dtypes: f32
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"
#if UNROLL
#define UNROLL_KK [[unroll]]
#else
#define UNROLL_KK
#endif

// Each buffer is declared twice (the same binding): as vec4 for the aligned
// path, as scalars for the rest.
layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
layout(set = 0, binding = 0) writeonly buffer Out4 { vec4 out4[]; };
layout(set = 0, binding = 1) restrict readonly buffer A { float a_data[]; };
layout(set = 0, binding = 1) restrict readonly buffer A4 { vec4 a4[]; };
layout(set = 0, binding = 2) restrict readonly buffer B { float b_data[]; };
layout(set = 0, binding = 2) restrict readonly buffer B4 { vec4 b4[]; };
layout(set = 0, binding = 3) restrict readonly buffer Bias { float bias_data[]; };
#define PARAMS_BINDING 4
#include "matmul_params.glslh"

const uint WX = gl_WorkGroupSize.x;
const uint WY = gl_WorkGroupSize.y;
const uint NT = WX * WY;
const uint TM = WY * 8;
const uint TN = WX * 8;
const uint SA = TM / 4 + 1;  // padded row length of the tiles, in vec4
const uint SB = TN / 4 + 1;
// vec4 loads per invocation and step (the host keeps them at 1 or 2).
const uint A_LOADS = (TM * BK / 4 + NT - 1) / NT;
const uint B_LOADS = (TN * BK / 4 + NT - 1) / NT;

shared vec4 a_tile[2][BK][SA];
shared vec4 b_tile[2][BK][SB];

#if SPLITK
// End of this workgroup's K range: the end of its slice.
int k_end;
#define K_END k_end
#else
#define K_END p.K
#endif

// The vec4 of A at row m, k .. k + 3 (zeros outside).
vec4 load_a(int a_base, int m, int k) {
  if (m >= p.M || k >= K_END) return vec4(0.0);
  const int i = a_base + m * p.a_sm + k;
  if (p.aligned != 0) return a4[i >> 2];
  vec4 v = vec4(0.0);
  for (int j = 0; j < 4; ++j) {
    if (k + j < K_END) v[j] = a_data[i + j];
  }
  return v;
}

#if B_KMAJOR
// The vec4 of B at column n, k .. k + 3 (B contiguous in k).
vec4 load_b(int b_base, int n, int k) {
  if (n >= p.N || k >= K_END) return vec4(0.0);
  const int i = b_base + n * p.b_sn + k;
  if (p.aligned != 0) return b4[i >> 2];
  vec4 v = vec4(0.0);
  for (int j = 0; j < 4; ++j) {
    if (k + j < K_END) v[j] = b_data[i + j];
  }
  return v;
}
#else
// The vec4 of B at row k, columns n .. n + 3 (B contiguous in n).
vec4 load_b(int b_base, int k, int n) {
  if (n >= p.N || k >= K_END) return vec4(0.0);
  const int i = b_base + k * p.b_sk + n;
  if (p.aligned != 0) return b4[i >> 2];
  vec4 v = vec4(0.0);
  for (int j = 0; j < 4; ++j) {
    if (n + j < p.N) v[j] = b_data[i + j];
  }
  return v;
}
#endif

// Element e (in vec4 units) of the A tile: row e / (BK/4), k quad e % (BK/4).
#define A_ROW(e) int((e) / (BK / 4))
#define A_KQ(e) int((e) % (BK / 4))

void store_a(uint buf, uint e, vec4 v) {
  if (e >= TM * BK / 4) return;
  const uint r = e / (BK / 4), k = (e % (BK / 4)) * 4;
  a_tile[buf][k + 0][r >> 2][r & 3] = v.x;
  a_tile[buf][k + 1][r >> 2][r & 3] = v.y;
  a_tile[buf][k + 2][r >> 2][r & 3] = v.z;
  a_tile[buf][k + 3][r >> 2][r & 3] = v.w;
}

#if B_KMAJOR
vec4 fetch_b(int b_base, int n0, int k0, uint e) {
  if (e >= TN * BK / 4) return vec4(0.0);
  return load_b(b_base, n0 + int(e / (BK / 4)), k0 + int(e % (BK / 4)) * 4);
}
void store_b(uint buf, uint e, vec4 v) {
  if (e >= TN * BK / 4) return;
  const uint c = e / (BK / 4), k = (e % (BK / 4)) * 4;
  b_tile[buf][k + 0][c >> 2][c & 3] = v.x;
  b_tile[buf][k + 1][c >> 2][c & 3] = v.y;
  b_tile[buf][k + 2][c >> 2][c & 3] = v.z;
  b_tile[buf][k + 3][c >> 2][c & 3] = v.w;
}
#else
vec4 fetch_b(int b_base, int n0, int k0, uint e) {
  if (e >= TN * BK / 4) return vec4(0.0);
  return load_b(b_base, k0 + int(e / (TN / 4)), n0 + int(e % (TN / 4)) * 4);
}
void store_b(uint buf, uint e, vec4 v) {
  if (e >= TN * BK / 4) return;
  b_tile[buf][e / (TN / 4)][e % (TN / 4)] = v;
}
#endif

vec4 fetch_a(int a_base, int m0, int k0, uint e) {
  if (e >= TM * BK / 4) return vec4(0.0);
  return load_a(a_base, m0 + A_ROW(e), k0 + A_KQ(e) * 4);
}

// Writes 4 outputs of row m from column n.
void store4(int b, int m, int n, vec4 v) {
  if (m >= p.M) return;
  v *= p.alpha;
  const int o = b * p.c_sb + m * p.N + n;
  if (p.has_bias == 0 && p.aligned != 0 && n + 3 < p.N) {
    if (p.act != 0 || RESIDUAL != 0) {
      for (int j = 0; j < 4; ++j) v[j] = epilogue_tail(v[j], o + j);
    }
    out4[o >> 2] = v;
    return;
  }
  for (int j = 0; j < 4; ++j) {
    if (n + j >= p.N) return;
    float x = v[j];
    if (p.has_bias != 0) x += p.beta * bias_data[b * p.bias_sb + m * p.bias_sm + (n + j) * p.bias_sn];
    out_data[o + j] = epilogue_tail(x, o + j);
  }
}

#define DECL4(P) vec4 P##0 = vec4(0.0), P##1 = vec4(0.0), P##2 = vec4(0.0), P##3 = vec4(0.0)
// Rows a.x .. a.w of block P times the 4 columns bv.
#define FMA4(P, a, bv)                 \
  P##0 = fma(vec4(a.x), bv, P##0);     \
  P##1 = fma(vec4(a.y), bv, P##1);     \
  P##2 = fma(vec4(a.z), bv, P##2);     \
  P##3 = fma(vec4(a.w), bv, P##3)
// z: the output's row block (the batch, or the scratch's slice and batch).
#define STORE4(P, M, N)                \
  store4(z, M + 0, N, P##0);           \
  store4(z, M + 1, N, P##1);           \
  store4(z, M + 2, N, P##2);           \
  store4(z, M + 3, N, P##3)

void main() {
  const uint tid = gl_LocalInvocationID.y * WX + gl_LocalInvocationID.x;
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  // Tile (row tm, column tn); with group_m, consecutive workgroups walk down
  // group_m tile rows before moving right, so that they share rows of A and
  // columns of B in the cache.
  uint tm = gl_WorkGroupID.y, tn = gl_WorkGroupID.x;
  const uint group = uint(p.group_m);
  if (group > 0u) {
    const uint num_m = gl_NumWorkGroups.y, num_n = gl_NumWorkGroups.x;
    const uint id = gl_WorkGroupID.y * num_n + gl_WorkGroupID.x;
    const uint first = (id / (group * num_n)) * group;
    const uint rows = min(num_m - first, group);
    const uint r = id % (group * num_n);
    tm = first + r % rows;
    tn = r / rows;
  }
  const int m0 = int(tm * TM);
  const int n0 = int(tn * TN);
  // z: batch b, or slice z / batch of batch b with split-K (outputs at row block z).
  const int z = int(gl_WorkGroupID.z);
#if SPLITK
  const int b = z % p.batch;
  const int k_begin = (z / p.batch) * p.k_chunk;
  k_end = min(p.K, k_begin + p.k_chunk);
#else
  const int b = z;
  const int k_begin = 0;
#endif
  const int a_base = b * p.a_sb;
  const int b_base = b * p.b_sb;

  // Blocks: c<row half><column half>_.
  DECL4(c00_);
  DECL4(c01_);
  DECL4(c10_);
  DECL4(c11_);

  // Step 0 into buffer 0.
  vec4 pa0 = fetch_a(a_base, m0, k_begin, tid);
  vec4 pb0 = fetch_b(b_base, n0, k_begin, tid);
  vec4 pa1 = vec4(0.0), pb1 = vec4(0.0);
  if (A_LOADS > 1) pa1 = fetch_a(a_base, m0, k_begin, tid + NT);
  if (B_LOADS > 1) pb1 = fetch_b(b_base, n0, k_begin, tid + NT);
  store_a(0, tid, pa0);
  store_b(0, tid, pb0);
  if (A_LOADS > 1) store_a(0, tid + NT, pa1);
  if (B_LOADS > 1) store_b(0, tid + NT, pb1);
  barrier();

  const int steps = (K_END - k_begin + int(BK) - 1) / int(BK);
  // One step s on buffer CUR: the next step's loads, the products, the stores
  // into the other buffer.
#define STEP(S, CUR)                                                   \
  {                                                                    \
    const bool more = (S) + 1 < steps;                                 \
    if (more) {                                                        \
      const int k1 = k_begin + ((S) + 1) * int(BK);                    \
      pa0 = fetch_a(a_base, m0, k1, tid);                              \
      pb0 = fetch_b(b_base, n0, k1, tid);                              \
      if (A_LOADS > 1) pa1 = fetch_a(a_base, m0, k1, tid + NT);        \
      if (B_LOADS > 1) pb1 = fetch_b(b_base, n0, k1, tid + NT);        \
    }                                                                  \
    UNROLL_KK for (uint kk = 0; kk < BK; ++kk) {                       \
      const vec4 a0 = a_tile[CUR][kk][ty];                             \
      const vec4 a1 = a_tile[CUR][kk][ty + TM / 8];                    \
      const vec4 b0 = b_tile[CUR][kk][tx];                             \
      const vec4 b1 = b_tile[CUR][kk][tx + TN / 8];                    \
      FMA4(c00_, a0, b0);                                              \
      FMA4(c01_, a0, b1);                                              \
      FMA4(c10_, a1, b0);                                              \
      FMA4(c11_, a1, b1);                                              \
    }                                                                  \
    if (more) {                                                        \
      store_a((CUR) ^ 1u, tid, pa0);                                   \
      store_b((CUR) ^ 1u, tid, pb0);                                   \
      if (A_LOADS > 1) store_a((CUR) ^ 1u, tid + NT, pa1);             \
      if (B_LOADS > 1) store_b((CUR) ^ 1u, tid + NT, pb1);             \
    }                                                                  \
    barrier();                                                         \
  }
#if UNROLL
  // Two steps per iteration: the buffer indices are constants.
  for (int s = 0; s < steps; s += 2) {
    STEP(s, 0u);
    if (s + 1 < steps) STEP(s + 1, 1u);
  }
#else
  for (int s = 0; s < steps; ++s) {
    const uint cur = uint(s) & 1u;
    STEP(s, cur);
  }
#endif

  const int mr = m0 + int(ty * 4), nc = n0 + int(tx * 4);
  const int mh = int(TM / 2), nh = int(TN / 2);
  STORE4(c00_, mr, nc);
  STORE4(c01_, mr, nc + nh);
  STORE4(c10_, mr + mh, nc);
  STORE4(c11_, mr + mh, nc + nh);
}
