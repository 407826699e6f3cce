// dtypes: f32 f16
// variant sdpa_kv_split: CHECKED=1
// variant sdpa_kv_split_nocheck: CHECKED=0
// Attention over a KV cache for few queries (decode), split along the keys (flash decoding):
// the first pass of runtime/ops/attention.cpp's two-pass path (the default; the setting
// SDPA_KV_ONE_PASS takes sdpa_kv_decode.glsl, one dispatch); sdpa_kv_reduce.glsl combines.
// Workgroup (c, hb, b * T + t) takes keys c * chunk .. c * chunk + chunk - 1 (those up to
// pos[t]) for the split_heads query heads hb * split_heads .. that share one KV head, so
// each key and value row is read once for them all, and writes per head its chunk's
// score max m, sum l = sum_j exp(s_j - m) and un-normalized output sum_j exp(s_j - m) v_j
// into part [B * T * H, chunks, 2 + Ev] (float32). A chunk past pos[t] writes nothing
// (the reduce reads the positions too and skips it).
// Positions are int32 or int64, read as words (READ_INDEX in common.glslh). A position
// outside [0, S) is a fault (fault.glslh); its rows get zeros (the reduce).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

// Shared-memory bounds (runtime/ops/attention.cpp: kSplitQueryFloats, kSplitScores):
// split_heads * E and split_heads * chunk. 12.5 KiB in all, under the 16 KiB of small GPUs.
#define SPLIT_QUERY_FLOATS 1024
#define SPLIT_SCORES 1024
#define SPLIT_MAX_HEADS 32
// The keys go through shared memory in tiles of STAGE x STAGE (keys x dims), read by
// whole rows (neighbouring invocations, neighbouring addresses) where a key per
// invocation would read 32 rows at once.
#define STAGE 32
// Outputs of one dim tile per invocation: SPLIT_MAX_HEADS * STAGE over the 64 invocations of a
// workgroup (runtime/ops/attention.cpp: kRowLocal).
#define OUT_PER_INVOCATION 16

layout(set = 0, binding = 0) writeonly buffer Part { float part_data[]; };
layout(set = 0, binding = 1) readonly buffer Q { T q_data[]; };
layout(set = 0, binding = 2) readonly buffer K { T k_data[]; };
layout(set = 0, binding = 3) readonly buffer V { T v_data[]; };
layout(set = 0, binding = 4) readonly buffer Pos { int pos_data[]; };
#define FAULT_BINDING 5
#include "fault.glslh"
#include "sdpa_kv_params.glslh"

shared float q_s[SPLIT_QUERY_FLOATS];
shared float prob_s[SPLIT_SCORES];  // [split_heads, chunk]: scores, then exp(s - m)
shared float max_s[SPLIT_MAX_HEADS];
shared float k_s[STAGE * (STAGE + 1)];  // odd rows: one dim of several keys, different banks

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int n = int(gl_WorkGroupSize.x);
  const int c = int(gl_WorkGroupID.x);
  const int hb = int(gl_WorkGroupID.y);
  const int bt = int(gl_WorkGroupID.z);  // b * T + t
  const int b = bt / p.queries, t = bt % p.queries;
  const int hp = p.split_heads;
  const int h0 = hb * hp;
  const int kv = h0 / p.group;

  int position, hi;
  READ_INDEX(pos_data, t, p.index_words, position, hi);
  if (!index_fits(position, hi) || position < 0 || position >= p.cache_len) {
#if CHECKED
    if (tid == 0 && c == 0 && hb == 0) report_fault_words(FAULT_INDEX, 1u, uint(position), uint(hi), uint(p.cache_len), 0u);
#endif
    return;  // uniform
  }
  const int j0 = c * p.chunk;
  if (j0 > position) return;  // uniform: past this query's keys
  const int count = min(p.chunk, position + 1 - j0);

  const int key_stride = p.kv_heads * p.E;
  const int value_stride = p.kv_heads * p.Ev;
  const int k_base = (b * p.cache_len + j0) * key_stride + kv * p.E;
  const int v_base = (b * p.cache_len + j0) * value_stride + kv * p.Ev;
  // The heads' query rows are consecutive: q[b, t, h0 .. h0 + hp - 1, :].
  const int q_base = (bt * p.heads + h0) * p.E;
  for (int i = tid; i < hp * p.E; i += n) q_s[i] = float(q_data[q_base + i]) * p.scale;
  barrier();

  // Scores, summed over tiles of STAGE keys x STAGE dims (key-fastest pairs (g, j)).
  for (int i = tid; i < hp * p.chunk; i += n) prob_s[i] = 0.0;
  for (int jb = 0; jb < count; jb += STAGE) {
    const int keys = min(STAGE, count - jb);
    for (int eb = 0; eb < p.E; eb += STAGE) {
      const int dims = min(STAGE, p.E - eb);
      barrier();  // the previous tile's readers are done
      for (int i = tid; i < keys * dims; i += n) {
        const int j = i / dims, e = i % dims;
        k_s[j * (STAGE + 1) + e] = float(k_data[k_base + (jb + j) * key_stride + eb + e]);
      }
      barrier();
      for (int i = tid; i < hp * keys; i += n) {
        const int g = i / keys, j = i % keys;
        float dot_qk = 0.0;
        for (int e = 0; e < dims; ++e) dot_qk += q_s[g * p.E + eb + e] * k_s[j * (STAGE + 1) + e];
        prob_s[g * p.chunk + jb + j] += dot_qk;
      }
    }
  }
  barrier();
  if (tid < hp) {
    float m = prob_s[tid * p.chunk];
    for (int j = 1; j < count; ++j) m = max(m, prob_s[tid * p.chunk + j]);
    max_s[tid] = m;
  }
  barrier();
  for (int i = tid; i < hp * count; i += n) {
    const int g = i / count, j = i % count;
    prob_s[g * p.chunk + j] = exp(prob_s[g * p.chunk + j] - max_s[g]);
  }
  barrier();
  const int part_stride = 2 + p.Ev;
  // part row of head h0 + g: ((bt * H + h0 + g) * chunks + c) * part_stride
  const int part_base = ((bt * p.heads + h0) * p.chunks + c) * part_stride;
  const int head_stride = p.chunks * part_stride;
  if (tid < hp) {
    float l = 0.0;
    for (int j = 0; j < count; ++j) l += prob_s[tid * p.chunk + j];
    part_data[part_base + tid * head_stride] = max_s[tid];
    part_data[part_base + tid * head_stride + 1] = l;
  }
  // Outputs sum_j p[g, j] v[j, d]: the values go through shared memory in STAGE x STAGE tiles (keys x
  // dims) read by whole rows with many loads in flight, where a loop of global loads per output stalled;
  // each invocation keeps its (g, d) sums of one dim tile in registers.
  for (int eb = 0; eb < p.Ev; eb += STAGE) {
    const int dims = min(STAGE, p.Ev - eb);
    float acc[OUT_PER_INVOCATION];
    [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) acc[r] = 0.0;
    for (int jb = 0; jb < count; jb += STAGE) {
      const int keys = min(STAGE, count - jb);
      barrier();  // the previous tile's readers (or the scores' last) are done
      for (int i = tid; i < keys * dims; i += n) {
        const int j = i / dims, e = i % dims;
        k_s[j * (STAGE + 1) + e] = float(v_data[v_base + (jb + j) * value_stride + eb + e]);
      }
      barrier();
      [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) {
        const int o = tid + r * n;
        if (o < hp * dims) {
          const int g = o / dims, d = o % dims;
          float sum = 0.0;
          for (int j = 0; j < keys; ++j) sum += prob_s[g * p.chunk + jb + j] * k_s[j * (STAGE + 1) + d];
          acc[r] += sum;
        }
      }
    }
    [[unroll]] for (int r = 0; r < OUT_PER_INVOCATION; ++r) {
      const int o = tid + r * n;
      if (o < hp * dims) part_data[part_base + (o / dims) * head_stride + 2 + eb + o % dims] = acc[r];
    }
  }
}
