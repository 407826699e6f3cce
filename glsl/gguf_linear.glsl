// Linear on GGUF-quantized weights, read in their own block layouts:
//   out[m, n] = sum_k x[m, k] * W[n, k] + bias[n]
// W [N, K] is the raw GGUF blocks of one tensor, row after row, in a buffer of
// 32-bit words (the bytes, little-endian; no 8-bit storage needed). Blocks are
// 18, 34, 144 or 210 bytes, so they start at even byte offsets but not always
// at word boundaries: load_u32 and load_half take bytes out of words.
// Every format decodes in chunks of 32 weights (a Q4_0/Q8_0 block, a quarter
// of a Q6_K half, a Q4_K sub-block); sums accumulate in float.
// Two paths, picked per dispatch by p.gemv: M <= 4 (decode): one workgroup
// per output feature, its invocations splitting K; larger M (prefill): 32 x 32
// output tiles, each chunk of weights decoded once into shared memory.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

// dtypes: f32
// variant gguf_linear_q4_0: FORMAT=2
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

#if FORMAT == 2
const uint BLOCK_BYTES = 18u, CHUNKS_PER_BLOCK = 1u;
#elif FORMAT == 8
const uint BLOCK_BYTES = 34u, CHUNKS_PER_BLOCK = 1u;
#elif FORMAT == 12
const uint BLOCK_BYTES = 144u, CHUNKS_PER_BLOCK = 8u;
#elif FORMAT == 14
const uint BLOCK_BYTES = 210u, CHUNKS_PER_BLOCK = 8u;
#else
#error unknown FORMAT
#endif

const uint GEMV_ROWS = 4u;  // the gemv path's largest M
const uint TILE = 32u;      // the tiled path's output tile (TILE x TILE, 64 invocations)

// The 4 bytes at an even byte offset, as one little-endian word.
uint load_u32(uint offset) {
  const uint w = offset >> 2;
  if ((offset & 3u) == 0u) return w_data[w];
  return (w_data[w] >> 16) | (w_data[w + 1u] << 16);
}

// The fp16 at an even byte offset, as float.
float load_half(uint offset) {
  const uint w = w_data[offset >> 2];
  return unpackHalf2x16((offset & 2u) != 0u ? (w >> 16) : (w & 0xFFFFu)).x;
}

uint byte_of(uint word, uint i) { return (word >> (8u * i)) & 0xFFu; }

// Weights chunk*32 .. chunk*32+31 of row `row`.
void decode(uint row, uint chunk, out float w[32]) {
  const uint sub = chunk % CHUNKS_PER_BLOCK;
  const uint base = (row * uint(p.blocks_per_row) + chunk / CHUNKS_PER_BLOCK) * BLOCK_BYTES;
#if FORMAT == 2
  // fp16 d, then 16 bytes: weight i in the low nibble of byte i, weight 16+i in its high nibble.
  const float d = load_half(base);
  for (uint i = 0u; i < 4u; ++i) {
    const uint q = load_u32(base + 2u + 4u * i);
    for (uint t = 0u; t < 4u; ++t) {
      const uint b = byte_of(q, t);
      w[4u * i + t] = d * (float(b & 15u) - 8.0);
      w[16u + 4u * i + t] = d * (float(b >> 4) - 8.0);
    }
  }
#elif FORMAT == 8
  // fp16 d, then 32 int8.
  const float d = load_half(base);
  for (uint i = 0u; i < 8u; ++i) {
    const int q = int(load_u32(base + 2u + 4u * i));
    for (int t = 0; t < 4; ++t) w[4u * i + uint(t)] = d * float(bitfieldExtract(q, 8 * t, 8));
  }
#elif FORMAT == 12
  // fp16 d, fp16 dmin, 12 bytes of eight 6-bit scales and mins, 128 bytes of
  // nibbles: 32-byte group g holds sub-block 2g (low nibbles) and 2g+1 (high).
  const vec2 dm = unpackHalf2x16(load_u32(base));
  const uint s[3] = uint[3](load_u32(base + 4u), load_u32(base + 8u), load_u32(base + 12u));
#define SCALE_BYTE(k) byte_of(s[(k) >> 2], (k) & 3u)
  uint sc, mn;
  if (sub < 4u) {
    sc = SCALE_BYTE(sub) & 63u;
    mn = SCALE_BYTE(sub + 4u) & 63u;
  } else {
    sc = (SCALE_BYTE(sub + 4u) & 15u) | ((SCALE_BYTE(sub - 4u) >> 6) << 4);
    mn = (SCALE_BYTE(sub + 4u) >> 4) | ((SCALE_BYTE(sub) >> 6) << 4);
  }
#undef SCALE_BYTE
  const float scale = dm.x * float(sc);
  const float offset = dm.y * float(mn);
  const uint qbase = base + 16u + (sub >> 1) * 32u;
  const uint shift = 4u * (sub & 1u);
  for (uint i = 0u; i < 8u; ++i) {
    const uint q = load_u32(qbase + 4u * i);
    for (uint t = 0u; t < 4u; ++t) w[4u * i + t] = scale * float((q >> (8u * t + shift)) & 15u) - offset;
  }
#elif FORMAT == 14
  // 128 bytes of low nibbles, 64 bytes of high bit pairs, 16 int8 scales (one
  // per 16 weights), fp16 d. Each half of 128 weights: weight e has its low 4
  // bits in byte e % 64 (nibble e / 64) and its high 2 in byte e % 32 (pair e / 32).
  const uint half_index = sub >> 2;
  const uint e0 = (sub & 3u) * 32u;
  const float d = load_half(base + 208u);
  const int scales = int(load_u32(base + 192u + 2u * sub));
  const float s0 = d * float(bitfieldExtract(scales, 0, 8));
  const float s1 = d * float(bitfieldExtract(scales, 8, 8));
  const uint lbase = base + half_index * 64u + (e0 & 63u);
  const uint lshift = 4u * (e0 >> 6);
  const uint hbase = base + 128u + half_index * 32u;
  const uint hshift = 2u * (e0 >> 5);
  for (uint i = 0u; i < 8u; ++i) {
    const uint ql = load_u32(lbase + 4u * i);
    const uint qh = load_u32(hbase + 4u * i);
    for (uint t = 0u; t < 4u; ++t) {
      const uint l = 4u * i + t;
      const int q = int(((ql >> (8u * t + lshift)) & 15u) | (((qh >> (8u * t + hshift)) & 3u) << 4)) - 32;
      w[l] = (l < 16u ? s0 : s1) * float(q);
    }
  }
#endif
}

shared float partial[GEMV_ROWS][gl_WorkGroupSize.x];
shared float w_tile[TILE][TILE + 1u];  // [k][n]
shared float x_tile[TILE][TILE + 1u];  // [k][m]

float bias_of(uint n) { return p.has_bias != 0 ? float(bias_data[n]) : 0.0; }

void gemv() {
  const uint n = flat_group();
  if (n >= uint(p.N)) return;  // the whole workgroup
  const uint tid = gl_LocalInvocationID.x;
  const uint M = uint(p.M), K = uint(p.K);
  float acc[GEMV_ROWS];
  for (uint m = 0u; m < GEMV_ROWS; ++m) acc[m] = 0.0;
  for (uint c = tid; c < uint(p.chunks); c += gl_WorkGroupSize.x) {
    float w[32];
    decode(n, c, w);
    for (uint m = 0u; m < M; ++m) {
      const uint xo = m * K + c * 32u;
      float s = 0.0;
      for (uint l = 0u; l < 32u; ++l) s += w[l] * float(x_data[xo + l]);
      acc[m] += s;
    }
  }
  for (uint m = 0u; m < GEMV_ROWS; ++m) partial[m][tid] = acc[m];
  barrier();
  for (uint stride = gl_WorkGroupSize.x / 2u; stride > 0u; stride >>= 1) {
    if (tid < stride) {
      for (uint m = 0u; m < GEMV_ROWS; ++m) partial[m][tid] += partial[m][tid + stride];
    }
    barrier();
  }
  if (tid == 0u) {
    for (uint m = 0u; m < M; ++m) out_data[m * uint(p.N) + n] = T(partial[m][0] + bias_of(n));
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
        decode(row, c, w);
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
