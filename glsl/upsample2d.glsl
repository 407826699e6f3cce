// upsample_nearest2d / upsample_bilinear2d on [N, C, H, W]; one invocation per
// output element. scale_h / scale_w map output to input coordinates as ATen's
// compute_scales_value / area_pixel_compute_scale do.
// variant upsample_nearest2d: NEAREST=1
// variant upsample_bilinear2d: BILINEAR=1
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
// params-struct: UpsampleParams
layout(set = 0, binding = 2) uniform Params {
  int total, H, W, OH;
  int OW, align_corners, pad0, pad1;
  float scale_h, scale_w, pad2, pad3;
} p;

void main() {
  const int i = int(flat_index());
  if (i >= p.total) return;
  const int ow = i % p.OW;
  const int oh = (i / p.OW) % p.OH;
  const int base = (i / (p.OW * p.OH)) * p.H * p.W;
#ifdef NEAREST
  const int h = min(int(floor(float(oh) * p.scale_h)), p.H - 1);
  const int w = min(int(floor(float(ow) * p.scale_w)), p.W - 1);
  out_data[i] = T(in_data[base + h * p.W + w]);
#else
  float sh, sw;
  if (p.align_corners != 0) {
    sh = p.scale_h * float(oh);
    sw = p.scale_w * float(ow);
  } else {
    sh = max(p.scale_h * (float(oh) + 0.5) - 0.5, 0.0);
    sw = max(p.scale_w * (float(ow) + 0.5) - 0.5, 0.0);
  }
  const int h0 = min(int(sh), p.H - 1), w0 = min(int(sw), p.W - 1);
  const int h1 = h0 + (h0 < p.H - 1 ? 1 : 0), w1 = w0 + (w0 < p.W - 1 ? 1 : 0);
  const float lh = sh - float(h0), lw = sw - float(w0);
  const float top = (1.0 - lw) * in_data[base + h0 * p.W + w0] + lw * in_data[base + h0 * p.W + w1];
  const float bottom = (1.0 - lw) * in_data[base + h1 * p.W + w0] + lw * in_data[base + h1 * p.W + w1];
  out_data[i] = T((1.0 - lh) * top + lh * bottom);
#endif
}
