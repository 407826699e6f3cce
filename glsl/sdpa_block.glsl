// dtypes: f32 f16
// variant sdpa_block_d64: MAX_D=64
// variant sdpa_block_d128: MAX_D=128
// scaled_dot_product_attention without a mask (or causal) over few keys (S <= MAX_KEYS) with plain
// arithmetic: runtime/ops/attention.cpp's choice where the cooperative-matrix kernel does not apply
// (float32: ViT-tiny's 197 tokens on 3 heads). A workgroup takes a block of ROWS = 4 query rows of
// one KV head, (l, g) for the group's heads h = kv * group + g in l-major order (as sdpa_coop), and
// keeps their whole score rows in shared memory; the keys, then the values, stream through shared
// memory in chunks of CHUNK rows (64 for head dims up to MAX_D = 64, 32 up to 128: the variants),
// the next chunk's loads in flight while this one is multiplied. Scores: an invocation per key of
// the chunk and DOTS rows; each row's max and sum with ROW_LANES invocations a row; the output: an
// invocation per (row, dim) of each 16 dims, accumulating over the keys. Loads and stores are
// coalesced elements (consecutive invocations, consecutive elements of a row), so any head dim and
// stride works. Causal: row (l, g) counts keys 0..l (PyTorch's top-left aligned mask); a row that
// counts no key is zeros (as sdpa_coop). Tensors through strides (sdpa_strided_params.glslh).
// 4 * (4 * MAX_D + 4 * 256 + CHUNK * (MAX_D + 1) + 2 * 4 * 32) bytes: 22.3 KiB (d64) or 23.1 KiB
// (d128), under lavapipe's 32 (blocks of 8 rows, 27-29 KiB, were slower on the H200: ViT-tiny's
// attention 21.6 against 19.7 us a layer). The host's kBlockAttention mirrors ROWS, MAX_KEYS, MAX_D, CHUNK,
// THREADS and the shared bytes.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

#define THREADS 128
#define ROWS 4
#define MAX_KEYS 256
#if MAX_D == 64
#define CHUNK 64
#elif MAX_D == 128
#define CHUNK 32
#else
#error MAX_D must be 64 or 128
#endif
#define KV_ROW (MAX_D + 1)                  // padded: an invocation per key reads its row conflict-free
#define CHUNK_LOADS (CHUNK * MAX_D / THREADS)  // elements per invocation and chunk
#define DOTS (ROWS * CHUNK / THREADS)       // score rows per invocation and chunk
#define ROW_LANES (THREADS / ROWS)          // invocations per row in the softmax and the output
#define OUT_DIMS (MAX_D / ROW_LANES)        // output dims per invocation

#include "sdpa_strided_io.glslh"

shared float q_sh[ROWS * MAX_D];      // the block's query rows, scaled
shared float s_sh[ROWS * MAX_KEYS];   // scores, then exp(score - row max)
shared float kv_sh[CHUNK * KV_ROW];   // a chunk of key rows, then of value rows
shared float red_sh[2 * ROWS * ROW_LANES];  // each row's lanes' max, then sum

// Chunk c's rows (keys c * CHUNK ..) of K or V (`data`, from `base`, rows `row_stride` apart,
// `width` elements each) into registers: load i of invocation tid is row e / MAX_D, element
// e % MAX_D, e = tid + i * THREADS; zeros past the keys or the row.
#define FETCH_CHUNK(regs, data, base, row_stride, width, c)                      \
  [[unroll]] for (int i = 0; i < CHUNK_LOADS; ++i) {                             \
    const int e = tid + i * THREADS;                                             \
    const int j = (c) * CHUNK + e / MAX_D, x = e % MAX_D;                        \
    regs[i] = j < keys_end && x < (width) ? float(data[(base) + j * (row_stride) + x]) : 0.0; \
  }
#define STORE_CHUNK(regs)                                                        \
  [[unroll]] for (int i = 0; i < CHUNK_LOADS; ++i) {                             \
    const int e = tid + i * THREADS;                                             \
    kv_sh[(e / MAX_D) * KV_ROW + e % MAX_D] = regs[i];                           \
  }

void main() {
  const int tid = int(gl_LocalInvocationIndex);
  const int kv = int(gl_WorkGroupID.y);
  const int b = int(gl_WorkGroupID.z);
  const int rows_total = p.L * p.group;  // of this KV head
  const int r0 = int(gl_WorkGroupID.x) * ROWS;
  const int rows_here = min(ROWS, rows_total - r0);
  const int head0 = kv * p.group;
  int q_base, out_base, k_base, v_base;
  sdpa_bases(b, kv, q_base, out_base, k_base, v_base);
  const int E = p.E, Ev = p.Ev;
  // The keys any row of the block counts (all, or causal, up to its last row's).
  const int keys_end = p.causal != 0 ? min((r0 + rows_here - 1) / p.group + 1, p.S) : p.S;
  const int chunks = (keys_end + CHUNK - 1) / CHUNK;

  // The block's query rows, scaled; zeros past the rows or E.
  for (int e = tid; e < ROWS * MAX_D; e += THREADS) {
    const int rr = e / MAX_D, x = e % MAX_D, r = r0 + rr;
    q_sh[e] = rr < rows_here && x < E
                  ? float(q_data[q_base + (head0 + r % p.group) * p.q_strides.y + (r / p.group) * p.q_strides.z + x]) *
                        p.scale
                  : 0.0;
  }
  // Scores: invocation tid takes key tid % CHUNK of each chunk against rows tid / CHUNK + d * (THREADS / CHUNK).
  const int key = tid % CHUNK, row1 = tid / CHUNK;
  float regs[CHUNK_LOADS];
  if (chunks > 0) {
    FETCH_CHUNK(regs, k_data, k_base, p.k_strides.z, E, 0)
  }
  for (int c = 0; c < chunks; ++c) {
    barrier();  // the chunk before is multiplied (and, at c = 0, q_sh stored)
    STORE_CHUNK(regs)
    barrier();
    // The next chunk (or the values' first) in flight while this one is multiplied.
    if (c + 1 < chunks) {
      FETCH_CHUNK(regs, k_data, k_base, p.k_strides.z, E, c + 1)
    } else {
      FETCH_CHUNK(regs, v_data, v_base, p.v_strides.z, Ev, 0)
    }
    float dot[DOTS];
    [[unroll]] for (int d = 0; d < DOTS; ++d) dot[d] = 0.0;
    for (int x = 0; x < E; ++x) {
      const float kx = kv_sh[key * KV_ROW + x];
      [[unroll]] for (int d = 0; d < DOTS; ++d) dot[d] += q_sh[(row1 + d * (THREADS / CHUNK)) * MAX_D + x] * kx;
    }
    [[unroll]] for (int d = 0; d < DOTS; ++d) s_sh[(row1 + d * (THREADS / CHUNK)) * MAX_KEYS + c * CHUNK + key] = dot[d];
  }
  barrier();

  // Each row's max, then its exponentials and their sum: ROW_LANES invocations a row.
  const int row = tid / ROW_LANES, lane = tid % ROW_LANES;
  const int r = r0 + row;
  const int last = row >= rows_here ? -1 : p.causal != 0 ? min(r / p.group, p.S - 1) : p.S - 1;
  float m = -1.0 / 0.0;
  for (int j = lane; j <= last; j += ROW_LANES) m = max(m, s_sh[row * MAX_KEYS + j]);
  red_sh[row * ROW_LANES + lane] = m;
  barrier();
  [[unroll]] for (int i = 0; i < ROW_LANES; ++i) m = max(m, red_sh[row * ROW_LANES + i]);
  float sum = 0.0;
  for (int j = lane; j < chunks * CHUNK; j += ROW_LANES) {
    // Keys past the row's last (causal, or the chunk's padding) weigh nothing.
    const float e = j <= last ? exp(s_sh[row * MAX_KEYS + j] - m) : 0.0;
    s_sh[row * MAX_KEYS + j] = e;
    sum += e;
  }
  red_sh[ROWS * ROW_LANES + row * ROW_LANES + lane] = sum;

  // The output: invocation (row, lane) accumulates dims lane, lane + ROW_LANES, .. of its row.
  float o[OUT_DIMS];
  [[unroll]] for (int i = 0; i < OUT_DIMS; ++i) o[i] = 0.0;
  for (int c = 0; c < chunks; ++c) {
    barrier();  // the exponentials are written (c = 0) or the chunk before is multiplied
    STORE_CHUNK(regs)
    barrier();
    if (c + 1 < chunks) {
      FETCH_CHUNK(regs, v_data, v_base, p.v_strides.z, Ev, c + 1)
    }
    for (int j = 0; j < CHUNK; ++j) {
      const float pj = s_sh[row * MAX_KEYS + c * CHUNK + j];
      [[unroll]] for (int i = 0; i < OUT_DIMS; ++i) o[i] += pj * kv_sh[j * KV_ROW + lane + i * ROW_LANES];
    }
  }
  barrier();  // the sums are written (no chunk: no barrier above)
  float l_sum = 0.0;
  [[unroll]] for (int i = 0; i < ROW_LANES; ++i) l_sum += red_sh[ROWS * ROW_LANES + row * ROW_LANES + i];
  if (row < rows_here) {
    const float inv = l_sum > 0.0 ? 1.0 / l_sum : 0.0;  // 0 for a row that counted no key: zeros
    const int o_base = out_base + (head0 + r % p.group) * p.out_strides.y + (r / p.group) * p.out_strides.z;
    [[unroll]] for (int i = 0; i < OUT_DIMS; ++i) {
      const int x = lane + i * ROW_LANES;
      if (x < Ev) out_data[o_base + x] = T(o[i] * inv);
    }
  }
}
