// aten.convolution with transposed=True on NCHW (1-D: H = 1), as a gather:
// out[n, oc, oh, ow] sums in[n, ic, ih, iw] * w[ic, oc % ocpg, kh, kw] over the
// (ih, kh) with ih * stride + kh * dil - pad == oh (same along w).
// Weight layout [IC, OC / groups, KH, KW] as PyTorch has it.
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
layout(set = 0, binding = 2) readonly buffer Weight { T w_data[]; };
layout(set = 0, binding = 3) readonly buffer Bias { T bias_data[]; };
#define PARAMS_BINDING 4
#include "conv_params.glslh"

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
  const int ocl = oc % p.ocpg;
  const int ksize = p.KH * p.KW;

  float acc = p.has_bias != 0 ? bias_data[oc] : 0.0;
  for (int kh = 0; kh < p.KH; ++kh) {
    const int th = oh + p.pad_h - kh * p.dil_h;
    if (th < 0 || th % p.stride_h != 0) continue;
    const int ih = th / p.stride_h;
    if (ih >= p.H) continue;
    for (int kw = 0; kw < p.KW; ++kw) {
      const int tw = ow + p.pad_w - kw * p.dil_w;
      if (tw < 0 || tw % p.stride_w != 0) continue;
      const int iw = tw / p.stride_w;
      if (iw >= p.W) continue;
      for (int icl = 0; icl < p.icpg; ++icl) {
        const int ic = g * p.icpg + icl;
        acc = fma(float(in_data[((n * p.C + ic) * p.H + ih) * p.W + iw]),
                  float(w_data[(ic * p.ocpg + ocl) * ksize + kh * p.KW + kw]), acc);
      }
    }
  }
  out_data[i] = T(acc);
}
