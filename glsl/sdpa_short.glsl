// dtypes: f32 f16
// scaled_dot_product_attention without a mask (or causal) over few keys (S <= MAX_KEYS):
// runtime/ops/attention.cpp's path where the tiled kernel would leave the GPU mostly idle
// (ViT's 197 tokens on 3 heads). A workgroup takes a block of p.block_rows (<= MAX_ROWS) query
// rows of one KV head, (l, g) for the group's heads h = kv * group + g in l-major order, and
// keeps their whole score rows in shared memory: the scores with an invocation per key (no
// serial walk over the keys), each row's max and sum with MAX_LANES invocations per row, then
// the output with an invocation per (row, dim) and, where those are fewer than the workgroup,
// the keys split between them. Four barriers in all. The loops over a key row and over the keys'
// values load KEY_STEP / VALUE_STEP at a time before they multiply (each step one round trip to the
// caches, not one per element: ViT-tiny's attention 44 -> 30 us a layer on the H100). Causal: row (l, g) counts keys 0..l
// (PyTorch's top-left aligned mask). Tensors through strides (sdpa_strided_params.glslh).
// The host's kShortAttention mirrors MAX_ROWS, MAX_KEYS, MAX_E and THREADS.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

#define THREADS 128
#define MAX_ROWS 4
#define MAX_KEYS 512
#define MAX_E 256
#define MAX_LANES (THREADS / MAX_ROWS)  // invocations per row for its max and sum
#define KEYS_PER_INVOCATION (MAX_KEYS / THREADS)
#define KEY_STEP 16   // elements of a key row in flight per invocation (the scores)
#define VALUE_STEP 16  // keys' values in flight per invocation (the output; even)

#include "sdpa_strided_io.glslh"

// 4 * (4 * 256 + 4 * 512 + 2 * 4 * 32 + 128 + 4) bytes: 13 KiB, under every device's 16 KiB.
shared float q_s[MAX_ROWS * MAX_E];        // the block's query rows, scaled
shared float prob_s[MAX_ROWS * MAX_KEYS];  // scores, then exp(score - row max)
shared float lane_max[MAX_ROWS * MAX_LANES];
shared float lane_sum[MAX_ROWS * MAX_LANES];
shared float partial_s[THREADS];           // the output's key slices
shared int row_last[MAX_ROWS];             // the last key a row counts, -1 for no row

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int kv = int(gl_WorkGroupID.y);
  const int b = int(gl_WorkGroupID.z);
  const int R = p.block_rows;
  const int rows_total = p.L * p.group;  // of this KV head
  const int r0 = int(gl_WorkGroupID.x) * R;
  const int head0 = kv * p.group;
  int q_base, out_base, k_base, v_base;
  sdpa_bases(b, kv, q_base, out_base, k_base, v_base);
  const int E = p.E, Ev = p.Ev;

  // Row rr of the block is query (l, g) = (r / group, r % group), r = r0 + rr, of head head0 + g.
  if (tid < MAX_ROWS) {
    const int r = r0 + tid;
    row_last[tid] = tid >= R || r >= rows_total ? -1 : p.causal != 0 ? min(r / p.group, p.S - 1) : p.S - 1;
  }
  for (int i = tid; i < R * E; i += THREADS) {
    const int rr = i / E, e = i % E, r = r0 + rr;
    q_s[rr * E + e] = r < rows_total
        ? float(q_data[q_base + (head0 + r % p.group) * p.q_strides.y + (r / p.group) * p.q_strides.z + e]) * p.scale
        : 0.0;
  }
  barrier();
  // The keys any row of the block counts (all, or causal, up to its last row's).
  const int rows_here = min(R, rows_total - r0);
  const int keys_end = row_last[rows_here - 1] + 1;

  // Scores, an invocation per key: key j's row is read once for the block's rows, KEY_STEP
  // elements of it loaded together (one round trip each, not one per element).
  for (int a = 0; a < KEYS_PER_INVOCATION; ++a) {
    const int j = tid + a * THREADS;
    if (j >= keys_end) break;
    float s[MAX_ROWS];
    for (int rr = 0; rr < MAX_ROWS; ++rr) s[rr] = 0.0;
    const int k_row = k_base + j * p.k_strides.z;
    for (int e0 = 0; e0 < E; e0 += KEY_STEP) {
      float kk[KEY_STEP];
      [[unroll]] for (int i = 0; i < KEY_STEP; ++i) kk[i] = e0 + i < E ? float(k_data[k_row + e0 + i]) : 0.0;
      [[unroll]] for (int i = 0; i < KEY_STEP; ++i) {
        if (e0 + i < E) {
          [[unroll]] for (int rr = 0; rr < MAX_ROWS; ++rr) s[rr] += q_s[rr * E + e0 + i] * kk[i];
        }
      }
    }
    for (int rr = 0; rr < MAX_ROWS; ++rr) {
      if (rr < R) prob_s[rr * MAX_KEYS + j] = j <= row_last[rr] ? s[rr] : -1.0 / 0.0;
    }
  }
  barrier();

  // Each row's max, then its probabilities and sum: MAX_LANES invocations per row, a key in MAX_LANES each.
  const int lane = tid % MAX_LANES, row = tid / MAX_LANES;
  float m = -1.0 / 0.0;
  if (row < R) {
    for (int j = lane; j < keys_end; j += MAX_LANES) m = max(m, prob_s[row * MAX_KEYS + j]);
  }
  lane_max[row * MAX_LANES + lane] = m;
  barrier();
  float sum = 0.0;
  if (row < R) {
    for (int i = 0; i < MAX_LANES; ++i) m = max(m, lane_max[row * MAX_LANES + i]);
    if (!isinf(m)) {  // -inf: a row that counts no key (exp(-inf - -inf) is NaN)
      for (int j = lane; j < keys_end; j += MAX_LANES) {
        const float e = exp(prob_s[row * MAX_KEYS + j] - m);
        prob_s[row * MAX_KEYS + j] = e;
        sum += e;
      }
    }
  }
  lane_sum[row * MAX_LANES + lane] = sum;
  barrier();

  // The output, an invocation per (row, dim) and slice of the keys: slices of them where the
  // outputs are fewer than the invocations, their partial sums added in shared memory.
  const int outputs = R * Ev;
  const int slices = max(1, THREADS / max(outputs, 1));
  const int slice = tid / outputs;
  for (int o = tid % outputs; o < outputs && slice < slices; o += slices == 1 ? THREADS : outputs) {
    const int rr = o / Ev, d = o % Ev, r = r0 + rr;
    float l = 0.0;  // 0 for a row that counted no key (its scores are still -inf): zeros
    if (rr < rows_here) {
      for (int i = 0; i < MAX_LANES; ++i) l += lane_sum[rr * MAX_LANES + i];
    }
    float acc0 = 0.0, acc1 = 0.0;  // two chains of additions, alternating keys
    if (l > 0.0) {
      const int last = row_last[rr];
      int j = slice;
      // VALUE_STEP keys' values loaded together (one round trip per step, not one per key).
      for (; j + (VALUE_STEP - 1) * slices <= last; j += VALUE_STEP * slices) {
        float vv[VALUE_STEP];
        [[unroll]] for (int u = 0; u < VALUE_STEP; ++u) vv[u] = float(v_data[v_base + (j + u * slices) * p.v_strides.z + d]);
        [[unroll]] for (int u = 0; u < VALUE_STEP; u += 2) {
          acc0 += prob_s[rr * MAX_KEYS + j + u * slices] * vv[u];
          acc1 += prob_s[rr * MAX_KEYS + j + (u + 1) * slices] * vv[u + 1];
        }
      }
      // The rest (all of a short row's), two keys a step.
      for (; j + slices <= last; j += 2 * slices) {
        acc0 += prob_s[rr * MAX_KEYS + j] * float(v_data[v_base + j * p.v_strides.z + d]);
        acc1 += prob_s[rr * MAX_KEYS + j + slices] * float(v_data[v_base + (j + slices) * p.v_strides.z + d]);
      }
      if (j <= last) acc0 += prob_s[rr * MAX_KEYS + j] * float(v_data[v_base + j * p.v_strides.z + d]);
    }
    if (slices > 1) {
      partial_s[tid] = acc0 + acc1;
    } else if (rr < rows_here) {
      out_data[out_base + (head0 + r % p.group) * p.out_strides.y + (r / p.group) * p.out_strides.z + d] =
          T(l > 0.0 ? (acc0 + acc1) / l : 0.0);
    }
  }
  if (slices > 1) {  // uniform
    barrier();
    if (tid < outputs) {
      const int rr = tid / Ev, d = tid % Ev, r = r0 + rr;
      if (rr < rows_here) {
        float acc = 0.0;
        for (int s = 0; s < slices; ++s) acc += partial_s[s * outputs + tid];
        float l = 0.0;
        for (int i = 0; i < MAX_LANES; ++i) l += lane_sum[rr * MAX_LANES + i];
        out_data[out_base + (head0 + r % p.group) * p.out_strides.y + (r / p.group) * p.out_strides.z + d] =
            T(l > 0.0 ? acc / l : 0.0);
      }
    }
  }
}
