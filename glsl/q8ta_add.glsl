// et_vk.vkd_q8ta_add: int8 a and b, each with its own per-tensor scale and zero
// point, broadcast; int8 output. Dequantizes both in float32 exactly as the
// dequantize nodes do, adds, and requantizes (relu folded into out_min).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"
#include "q8ta.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { int out_data[]; };
layout(set = 0, binding = 1) readonly buffer A { int a_data[]; };
layout(set = 0, binding = 2) readonly buffer B { int b_data[]; };
// params-struct: Q8taAddParams
layout(set = 0, binding = 3) uniform Params {
  ivec4 out_sizes[2];
  ivec4 a_strides[2];  // broadcast dims have stride 0
  ivec4 b_strides[2];
  int numel, rank, a_zero_point, b_zero_point;
  float a_scale, b_scale, inv_out_scale, pad0;
  int out_zero_point, out_min, out_max, same_shape;
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  int a, b;
  if (p.same_shape != 0) {
    a = a_data[i];
    b = b_data[i];
  } else {
    a = a_data[strided_offset(i, p.rank, p.out_sizes, p.a_strides)];
    b = b_data[strided_offset(i, p.rank, p.out_sizes, p.b_strides)];
  }
  precise float fa = float(a - p.a_zero_point) * p.a_scale;
  precise float fb = float(b - p.b_zero_point) * p.b_scale;
  precise float y = fa + fb;
  out_data[i] = requantize(y, p.inv_out_scale, p.out_zero_point, p.out_min, p.out_max);
}
