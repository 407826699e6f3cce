// dtypes: f32 f16
// Rotary position embedding, rotate-half layout, one invocation per output element:
// out[.., t, d] = x[.., t, d] * cos[t, d] + r * sin[t, d], where r is -x[.., t, d + D/2]
// for d < D/2 and x[.., t, d - D/2] above (quant/library.py's vkd_rope). With x [.., T, H, D]
// and cos, sin [T, 1, D], the H rows of one position share its table row.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer X { T x_data[]; };
layout(set = 0, binding = 2) readonly buffer Cos { T cos_data[]; };
layout(set = 0, binding = 3) readonly buffer Sin { T sin_data[]; };
// params-struct: RopeParams
layout(set = 0, binding = 4) uniform Params {
  int numel;
  int head_dim;   // D
  int positions;  // T: rows of cos and sin
  int heads;      // consecutive rows of x per position: H for cos [T, 1, D], 1 for [T, D]
} p;

void main() {
  const int i = int(flat_index());
  if (i >= p.numel) return;
  const int d = i % p.head_dim;
  const int row = (i / (p.head_dim * p.heads)) % p.positions;
  const int half_dim = p.head_dim / 2;
  const float x = float(x_data[i]);
  const float r = d < half_dim ? -float(x_data[i + half_dim]) : float(x_data[i - half_dim]);
  const int t = row * p.head_dim + d;
  out_data[i] = T(x * float(cos_data[t]) + r * float(sin_data[t]));
}
