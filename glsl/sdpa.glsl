// variant sdpa: MASK=0
// variant sdpa_float_mask: MASK=1
// variant sdpa_bool_mask: MASK=2
// Fused scaled dot product attention, one workgroup per query row:
//   out = softmax(q k^T * scale + mask) v
// Keys go by in blocks of one per invocation through the online softmax of
// online_softmax.glslh (no score row is stored; a row whose keys are all masked
// gives zeros, as PyTorch does).
// Tensors are contiguous: q [rows, E], k [kv rows, S, E], v [kv rows, S, Ev].
// The mask (float added, bool keeps where true) broadcasts with strides.
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

#define MAX_E 256
#define ACC_PER_INVOCATION 4  // Ev <= 4 * workgroup size (the host checks)

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer Q { T q_data[]; };
layout(set = 0, binding = 2) readonly buffer K { T k_data[]; };
layout(set = 0, binding = 3) readonly buffer V { T v_data[]; };
#if MASK == 1
layout(set = 0, binding = 4) readonly buffer Mask { T mask_data[]; };
#elif MASK == 2
layout(set = 0, binding = 4) readonly buffer Mask { int mask_data[]; };
#endif
// params-struct: SdpaParams
layout(set = 0, binding = 4 + (MASK > 0 ? 1 : 0)) uniform Params {
  ivec4 lead_sizes[2];    // q's sizes before (L, E)
  ivec4 mask_strides[2];  // mask stride of each of those dims (0 where broadcast)
  int rows;               // prod(lead_sizes) * L
  int L;
  int S;
  int E;
  int Ev;
  int lead_rank;
  int heads;              // q heads (size of the last lead dim, 1 if none)
  int group;              // q heads per kv head
  int causal;
  float scale;
  int mask_stride_l;
  int mask_stride_s;
} p;

shared float q_row[MAX_E];
#include "online_softmax.glslh"

void main() {
  const int row = int(flat_group());
  if (row >= p.rows) return;  // uniform across the workgroup
  const int t = int(gl_LocalInvocationID.x);
  const int n = int(gl_WorkGroupSize.x);
  const int bh = row / p.L;  // flat index over the lead dims
  const int r = row % p.L;
  const int kv = (bh / p.heads) * (p.heads / p.group) + (bh % p.heads) / p.group;
  const int k_base = kv * p.S * p.E;
  const int v_base = kv * p.S * p.Ev;

  for (int e = t; e < p.E; e += n) q_row[e] = q_data[row * p.E + e] * p.scale;
#if MASK > 0
  int mask_base = r * p.mask_stride_l;
  int rem = bh;
  for (int d = p.lead_rank - 1; d >= 0; --d) {
    const int s = DIM(p.lead_sizes, d);
    mask_base += (rem % s) * DIM(p.mask_strides, d);
    rem /= s;
  }
#endif
  barrier();

  float m = -1.0 / 0.0;
  float l = 0.0;
  float acc[ACC_PER_INVOCATION];
  for (int a = 0; a < ACC_PER_INVOCATION; ++a) acc[a] = 0.0;

  const int S_end = p.causal != 0 ? min(p.S, r + 1) : p.S;
  for (int j0 = 0; j0 < S_end; j0 += n) {
    const int j = j0 + t;
    float s = -1.0 / 0.0;
    if (j < S_end) {
      float dot_qk = 0.0;
      for (int e = 0; e < p.E; ++e) dot_qk += q_row[e] * k_data[k_base + j * p.E + e];
      s = dot_qk;
#if MASK == 1
      s += mask_data[mask_base + j * p.mask_stride_s];
#elif MASK == 2
      if (mask_data[mask_base + j * p.mask_stride_s] == 0) s = -1.0 / 0.0;
#endif
    }
    online_softmax_block(s, j0, min(n, S_end - j0), v_base, p.Ev, p.Ev, m, l, acc);
  }
  online_softmax_store(row, p.Ev, l, acc);
}
