// Linear on GGUF-quantized weights, read in their own block layouts:
//   out[m, n] = sum_k x[m, k] * W[n, k] + bias[n]
// W [N, K] is the raw GGUF blocks of one tensor, row after row, in a buffer of
// 32-bit words (gguf_blocks.glslh decodes them in chunks of 32 weights); sums
// accumulate in float.
// Two paths, picked per dispatch by p.gemv: M <= 4 (decode): a workgroup per
// 4 output features, its invocations splitting K; larger M (prefill): 32 x 32
// output tiles, each chunk of weights decoded once into shared memory. The _sg
// variants reduce the gemv sums with subgroup arithmetic.
#version 450
#extension GL_GOOGLE_include_directive : require
// subgroup-variants
#include "common.glslh"
#if WG_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

// dtypes: f32
// variant gguf_linear_q4_0: FORMAT=2
// variant gguf_linear_q4_1: FORMAT=3
// variant gguf_linear_q8_0: FORMAT=8
// variant gguf_linear_q4_k: FORMAT=12
// variant gguf_linear_q6_k: FORMAT=14

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer X { T x_data[]; };
layout(set = 0, binding = 2) readonly buffer W { uint w_data[]; };
layout(set = 0, binding = 3) readonly buffer Bias { T bias_data[]; };
// params-struct: GGUFLinearParams
layout(set = 0, binding = 4) uniform Params {
  int M, N, K, chunks;  // chunks = K / 32
  int blocks_per_row, has_bias, gemv, pad0;
} p;

#include "gguf_blocks.glslh"

const uint GEMV_ROWS = 4u;  // the gemv path's largest M
const uint GEMV_COLS = 4u;  // output features per gemv workgroup
const uint GEMV_SUMS = GEMV_ROWS * GEMV_COLS;
const uint TILE = 32u;      // the tiled path's output tile (TILE x TILE, 64 invocations)

shared float partial[GEMV_SUMS][gl_WorkGroupSize.x];  // [sum][subgroup], or [sum][invocation]
shared float w_tile[TILE][TILE + 1u];  // [k][n]
shared float x_tile[TILE][TILE + 1u];  // [k][m]

float bias_of(uint n) { return p.has_bias != 0 ? float(bias_data[n]) : 0.0; }

// GEMV_COLS output features n0.. per workgroup; its invocations split K by chunks,
// each decoding a chunk of every feature, then the M x GEMV_COLS sums are reduced
// across the workgroup at once (one barrier with subgroup arithmetic, a tree of
// log2(workgroup size) barriers without).
void gemv() {
  const uint n0 = flat_group() * GEMV_COLS;
  if (n0 >= uint(p.N)) return;  // the whole workgroup
  const uint tid = gl_LocalInvocationID.x;
  const uint M = uint(p.M), K = uint(p.K), N = uint(p.N);
  const uint cols = min(GEMV_COLS, N - n0);
  float acc[GEMV_SUMS];
  for (uint i = 0u; i < GEMV_SUMS; ++i) acc[i] = 0.0;
  // Constant loop bounds: acc stays in registers.
  for (uint c = tid; c < uint(p.chunks); c += gl_WorkGroupSize.x) {
    for (uint j = 0u; j < GEMV_COLS; ++j) {
      if (j >= cols) break;
      float w[32];
      decode(n0 + j, c, uint(p.blocks_per_row), w);
      for (uint m = 0u; m < GEMV_ROWS; ++m) {
        if (m >= M) break;
        const uint xo = m * K + c * 32u;
        float s = 0.0;
        for (uint l = 0u; l < 32u; ++l) s += w[l] * float(x_data[xo + l]);
        acc[m * GEMV_COLS + j] += s;
      }
    }
  }
#if WG_SUBGROUP
  for (uint i = 0u; i < GEMV_SUMS; ++i) {
    const float v = subgroupAdd(acc[i]);
    if (subgroupElect()) partial[i][gl_SubgroupID] = v;
  }
  barrier();
  if (tid < GEMV_SUMS) {
    float r = 0.0;
    for (uint g = 0u; g < gl_NumSubgroups; ++g) r += partial[tid][g];
    partial[tid][0] = r;
  }
#else
  for (uint i = 0u; i < GEMV_SUMS; ++i) partial[i][tid] = acc[i];
  barrier();
  for (uint stride = gl_WorkGroupSize.x / 2u; stride > 0u; stride >>= 1) {
    if (tid < stride) {
      for (uint i = 0u; i < GEMV_SUMS; ++i) partial[i][tid] += partial[i][tid + stride];
    }
    barrier();
  }
#endif
  if (tid < GEMV_SUMS) {
    const uint m = tid / GEMV_COLS, j = tid % GEMV_COLS;
    if (m < M && j < cols) out_data[m * N + n0 + j] = T(partial[tid][0] + bias_of(n0 + j));
  }
}

void tiled() {
  const uint tid = gl_LocalInvocationID.x;
  const uint tx = tid % 8u, ty = tid / 8u;  // 8 x 8 invocations, 4 x 4 outputs each
  const uint n0 = gl_WorkGroupID.x * TILE, m0 = gl_WorkGroupID.y * TILE;
  const uint M = uint(p.M), N = uint(p.N), K = uint(p.K);
  float acc[4][4];
  for (uint i = 0u; i < 4u; ++i)
    for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
  for (uint c = 0u; c < uint(p.chunks); ++c) {
    if (tid < TILE) {
      float w[32];
      const uint row = n0 + tid;
      if (row < N) {
        decode(row, c, uint(p.blocks_per_row), w);
      } else {
        for (uint l = 0u; l < 32u; ++l) w[l] = 0.0;
      }
      for (uint l = 0u; l < 32u; ++l) w_tile[l][tid] = w[l];
    }
    for (uint e = tid; e < TILE * TILE; e += gl_WorkGroupSize.x) {
      const uint mm = e / TILE, kk = e % TILE;
      const uint m = m0 + mm;
      x_tile[kk][mm] = m < M ? float(x_data[m * K + c * 32u + kk]) : 0.0;
    }
    barrier();
    for (uint kk = 0u; kk < TILE; ++kk) {
      float av[4], bv[4];
      for (uint i = 0u; i < 4u; ++i) av[i] = x_tile[kk][ty + 8u * i];
      for (uint j = 0u; j < 4u; ++j) bv[j] = w_tile[kk][tx + 8u * j];
      for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  for (uint i = 0u; i < 4u; ++i) {
    const uint m = m0 + ty + 8u * i;
    if (m >= M) continue;
    for (uint j = 0u; j < 4u; ++j) {
      const uint n = n0 + tx + 8u * j;
      if (n < N) out_data[m * N + n] = T(acc[i][j] + bias_of(n));
    }
  }
}

void main() {
  if (p.gemv != 0) {
    gemv();
  } else {
    tiled();
  }
}
