// et_vk.vkd_q8ta_linear: int8 input [..., K] (per-tensor scale and zero point),
// int8 weight [N, K] with a scale and zero point per output feature, optional
// float bias; int8 output [..., N]. One invocation per output element; exact
// int32 accumulation (the partitioner bounds K).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"
#include "q8ta.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { int out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { int in_data[]; };
layout(set = 0, binding = 2) readonly buffer Weight { int w_data[]; };
layout(set = 0, binding = 3) readonly buffer Scales { float w_scales[]; };
layout(set = 0, binding = 4) readonly buffer Zeros { int w_zeros[]; };
layout(set = 0, binding = 5) readonly buffer Bias { float bias_data[]; };
// params-struct: Q8taLinearParams
layout(set = 0, binding = 6) uniform Params {
  int K, N, total, has_bias;
  int x_zero_point, out_zero_point, out_min, out_max;
  float x_scale, inv_out_scale; int zero_words, pad0;  // zero_words: per weight zero point (2: int64 storage)
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.total) return;
  const int n = i % p.N;
  const int xbase = (i / p.N) * p.K;
  const int wbase = n * p.K;
  const int wz = w_zeros[n * p.zero_words];  // the low word of an int64
  int acc = 0;
  for (int k = 0; k < p.K; ++k) {
    acc += (in_data[xbase + k] - p.x_zero_point) * (w_data[wbase + k] - wz);
  }
  precise float y = float(acc) * (p.x_scale * w_scales[n]);
  if (p.has_bias != 0) y += bias_data[n];
  out_data[i] = requantize(y, p.inv_out_scale, p.out_zero_point, p.out_min, p.out_max);
}
