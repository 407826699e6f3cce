// pixel_shuffle / pixel_unshuffle on [..., C, H, W] (r = the factor); one
// invocation per output element, gathering its input element.
//   shuffle:   out[b, c, h*r+i, w*r+j] = in[b, c*r*r + i*r + j, h, w]
// dtypes: f32 f16 i32 i64
// variant pixel_shuffle: SHUFFLE=1
// variant pixel_unshuffle: UNSHUFFLE=1
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
// params-struct: ShuffleParams
layout(set = 0, binding = 2) uniform Params {
  int total, OC, OH, OW;
  int r, pad0, pad1, pad2;
} p;

void main() {
  const int i = int(flat_index());
  if (i >= p.total) return;
  const int ow = i % p.OW;
  const int oh = (i / p.OW) % p.OH;
  const int oc = (i / (p.OW * p.OH)) % p.OC;
  const int b = i / (p.OW * p.OH * p.OC);
#ifdef SHUFFLE
  // input [b, OC*r*r, OH/r, OW/r]
  const int H = p.OH / p.r, W = p.OW / p.r;
  const int c = oc * p.r * p.r + (oh % p.r) * p.r + (ow % p.r);
  out_data[i] = in_data[((b * p.OC * p.r * p.r + c) * H + oh / p.r) * W + ow / p.r];
#else
  // input [b, OC/(r*r), OH*r, OW*r]
  const int C = p.OC / (p.r * p.r), H = p.OH * p.r, W = p.OW * p.r;
  const int c = oc / (p.r * p.r), k = oc % (p.r * p.r);
  const int h = oh * p.r + k / p.r, w = ow * p.r + k % p.r;
  out_data[i] = in_data[((b * C + c) * H + h) * W + w];
#endif
}
