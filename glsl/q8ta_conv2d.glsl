// et_vk.vkd_q8ta_conv2d: int8 NCHW input (per-tensor scale and zero point),
// int8 weight [OC, IC / groups, KH, KW] with a scale and zero point per output
// channel, optional float bias; int8 output. One invocation per output element:
// the sum of (x - x_zero_point) * (w - w_zero_point) is exact in int32 (the
// partitioner bounds the reduction length); padding contributes zero, as the
// dequantized zero does in the float model.
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
// params-struct: Q8taConvParams
layout(set = 0, binding = 6) uniform Params {
  int N, C, H, W;
  int OC, OH, OW, KH;
  int KW, stride_h, stride_w, pad_h;
  int pad_w, dil_h, dil_w, groups;
  int icpg, ocpg, has_bias, total;
  int x_zero_point, out_zero_point, out_min, out_max;
  float x_scale, inv_out_scale; int zero_words, pad0;  // zero_words: per weight zero point (2: int64 storage)
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.total) return;
  const int ow = i % p.OW;
  int r = i / p.OW;
  const int oh = r % p.OH;
  r /= p.OH;
  const int oc = r % p.OC;
  const int n = r / p.OC;
  const int g = oc / p.ocpg;
  const int wz = w_zeros[oc * p.zero_words];  // the low word of an int64
  const int ksize = p.KH * p.KW;
  int acc = 0;
  for (int icl = 0; icl < p.icpg; ++icl) {
    const int cbase = (n * p.C + g * p.icpg + icl) * p.H;
    const int wbase = (oc * p.icpg + icl) * ksize;
    for (int kh = 0; kh < p.KH; ++kh) {
      const int ih = oh * p.stride_h - p.pad_h + kh * p.dil_h;
      if (ih < 0 || ih >= p.H) continue;
      for (int kw = 0; kw < p.KW; ++kw) {
        const int iw = ow * p.stride_w - p.pad_w + kw * p.dil_w;
        if (iw < 0 || iw >= p.W) continue;
        acc += (in_data[(cbase + ih) * p.W + iw] - p.x_zero_point) * (w_data[wbase + kh * p.KW + kw] - wz);
      }
    }
  }
  precise float y = float(acc) * (p.x_scale * w_scales[oc]);
  if (p.has_bias != 0) y += bias_data[oc];
  out_data[i] = requantize(y, p.inv_out_scale, p.out_zero_point, p.out_min, p.out_max);
}
