// aten.convolution, not transposed, on NCHW (1-D convolutions have H = 1).
// Each invocation computes TOC output channels of one group at TOW adjacent
// output columns, so every input load serves TOC channels and every weight load
// TOW columns. Weight layout [OC, IC / groups, KH, KW] as PyTorch has it.
// variant conv2d: TOC=4 TOW=4
// variant conv2d_dw: TOC=1 TOW=4
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
layout(set = 0, binding = 2) readonly buffer Weight { T w_data[]; };
layout(set = 0, binding = 3) readonly buffer Bias { T bias_data[]; };
layout(set = 0, binding = 4) readonly buffer Residual { T res_data[]; };
#define PARAMS_BINDING 5
#include "conv_params.glslh"

void main() {
  int i = int(flat_index());
  if (i >= p.total) return;
  const int owb = i % p.ow_blocks;
  int r = i / p.ow_blocks;
  const int oh = r % p.OH;
  r /= p.OH;
  const int blocks = p.groups * p.oc_blocks;
  const int ocb = r % blocks;
  const int n = r / blocks;
  const int g = ocb / p.oc_blocks;
  const int oc0 = g * p.ocpg + (ocb % p.oc_blocks) * TOC;
  const int oc_last = g * p.ocpg + p.ocpg - 1;
  const int ow0 = owb * TOW;

  float acc[TOC][TOW];
  for (int j = 0; j < TOC; ++j)
    for (int t = 0; t < TOW; ++t) acc[j][t] = 0.0;

  const int ksize = p.KH * p.KW;
  int wbase[TOC];
  for (int j = 0; j < TOC; ++j) wbase[j] = min(oc0 + j, oc_last) * p.icpg * ksize;
  const int iw0 = ow0 * p.stride_w - p.pad_w;
  for (int icl = 0; icl < p.icpg; ++icl) {
    const int cbase = (n * p.C + g * p.icpg + icl) * p.H;
    for (int kh = 0; kh < p.KH; ++kh) {
      const int ih = oh * p.stride_h - p.pad_h + kh * p.dil_h;
      if (ih < 0 || ih >= p.H) continue;
      const int rowbase = (cbase + ih) * p.W;
      const int wk = icl * ksize + kh * p.KW;
      for (int kw = 0; kw < p.KW; ++kw) {
        float x[TOW];
        for (int t = 0; t < TOW; ++t) {
          const int iw = iw0 + t * p.stride_w + kw * p.dil_w;
          x[t] = (iw >= 0 && iw < p.W) ? in_data[rowbase + iw] : 0.0;
        }
        for (int j = 0; j < TOC; ++j) {
          const float w = w_data[wbase[j] + wk + kw];
          for (int t = 0; t < TOW; ++t) acc[j][t] = fma(w, x[t], acc[j][t]);
        }
      }
    }
  }
  for (int j = 0; j < TOC; ++j) {
    const int oc = oc0 + j;
    if (oc > oc_last) break;
    const float b = p.has_bias != 0 ? bias_data[oc] : 0.0;
    const int obase = ((n * p.OC + oc) * p.OH + oh) * p.OW;
    for (int t = 0; t < TOW; ++t) {
      if (ow0 + t >= p.OW) continue;
      float v = acc[j][t] + b;
      if (p.has_residual != 0) v += float(res_data[obase + ow0 + t]);
      if (p.has_clamp != 0) v = clamp_keep_nan(v, p.out_min, p.out_max);
      out_data[obase + ow0 + t] = T(v);
    }
  }
}
