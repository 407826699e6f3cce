// dtypes: f32 f16
// The second pass of runtime/ops/attention.cpp's two-pass attention over a KV cache (the default): one
// workgroup per query row (b, t, h) combines the chunks sdpa_kv_split.glsl wrote for it,
// those holding keys 0..pos[t] (the others hold stale data):
//   M = max_c m_c, out = sum_c exp(m_c - M) acc_c / sum_c exp(m_c - M) l_c
// The workgroup is WG / ceil(Ev / 4) lanes of ceil(Ev / 4) invocations, an output 4-vector each;
// lane k takes chunks k, k + lanes, ..., STEP of them per round of loads (all in flight: one round
// up to lanes * STEP live chunks, 64 at head dim 64), and keeps its own maximum, sum and output;
// the lanes' are then combined through shared memory (one barrier).
// A position outside [0, S) gives zeros (the split pass reported the fault).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 0) writeonly buffer Out4 { T4 out4[]; };
layout(set = 0, binding = 1) readonly buffer Part { vec4 part4[]; };
layout(set = 0, binding = 2) readonly buffer Pos { int pos_data[]; };
#define PARAMS_BINDING 3
#include "sdpa_kv_params.glslh"

// The workgroup size (runtime/ops/attention.cpp: kReduceLocal); ceil(Ev / 4) <= WG / 2.
#define WG 128
#define STEP 8
shared vec4 acc_s[WG];
shared vec2 ml_s[WG];

void main() {
  const int row = int(flat_group());
  if (row >= p.batch * p.queries * p.heads) return;  // uniform across the workgroup
  const int tid = int(gl_LocalInvocationID.x);
  const int t = (row / p.heads) % p.queries;
  int position, hi;
  READ_INDEX(pos_data, t, p.index_words, position, hi);
  const bool valid = index_fits(position, hi) && position >= 0 && position < p.cache_len;
  const int live = valid ? position / p.chunk + 1 : 0;
  const int Ev4 = (p.Ev + 3) >> 2;
  const int lanes = WG / max(Ev4, 1);
  const int lane = tid / max(Ev4, 1), e4 = tid - lane * Ev4;
  const bool in_lane = lane < lanes;
  const int part_stride = 1 + Ev4;  // 4-vectors per (row, chunk)
  const int base = row * p.chunks * part_stride;

  float m = -1.0 / 0.0, l = 0.0;
  vec4 acc = vec4(0.0);
  for (int c0 = lane; c0 < live; c0 += lanes * STEP) {
    vec4 ml[STEP], a[STEP];
    [[unroll]] for (int k = 0; k < STEP; ++k) {
      const int c = c0 + k * lanes;
      ml[k] = vec4(-1.0 / 0.0, 0.0, 0.0, 0.0);
      a[k] = vec4(0.0);
      if (in_lane && c < live) {
        ml[k] = part4[base + c * part_stride];
        a[k] = part4[base + c * part_stride + 1 + e4];
      }
    }
    float top = m;
    [[unroll]] for (int k = 0; k < STEP; ++k) top = max(top, ml[k].x);
    const float rescale = m == -1.0 / 0.0 ? 0.0 : exp(m - top);
    acc *= rescale;
    l *= rescale;
    [[unroll]] for (int k = 0; k < STEP; ++k) {
      const float w = ml[k].x == -1.0 / 0.0 ? 0.0 : exp(ml[k].x - top);
      acc += w * a[k];
      l += w * ml[k].y;
    }
    m = top;
  }
  acc_s[tid] = acc;
  if (e4 == 0) ml_s[lane] = vec2(m, l);
  barrier();
  if (tid < Ev4) {
    const int n = min(lanes, max(live, 1));  // the lanes that took a chunk
    float M = -1.0 / 0.0;
    for (int k = 0; k < n; ++k) M = max(M, ml_s[k].x);
    float L = 0.0;
    vec4 out_sum = vec4(0.0);
    for (int k = 0; k < n; ++k) {
      const float w = ml_s[k].x == -1.0 / 0.0 ? 0.0 : exp(ml_s[k].x - M);
      L += w * ml_s[k].y;
      out_sum += w * acc_s[k * Ev4 + tid];
    }
    const vec4 o = valid && L > 0.0 ? out_sum / L : vec4(0.0);
    if (p.vec4_loads != 0) {
      out4[row * Ev4 + tid] = T4(o);
    } else {
      [[unroll]] for (int i = 0; i < 4; ++i) {
        if (tid * 4 + i < p.Ev) out_data[row * p.Ev + tid * 4 + i] = T(o[i]);
      }
    }
  }
}
