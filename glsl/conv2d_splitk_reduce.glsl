// Cooperative-matrix convolution, split-K: the second pass of a conv2d_coop _sk convolution
// (runtime/ops/conv.cpp). The first wrote each K slice's raw float sums into a
// scratch [splits][N][OC][pixels]; this one adds the slices in order and applies
// the convolution's epilogue, as conv2d_coop does without a split:
//   out[n, c, pix] = clamp(sum_s part[s, n, c, pix] + bias[c] + residual[n, c, pix])
// One output per invocation (consecutive invocations, consecutive pixels).
// dtypes: f16 f32
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) restrict readonly buffer Part { float part_data[]; };
layout(set = 0, binding = 2) restrict readonly buffer Bias { T bias_data[]; };
layout(set = 0, binding = 3) restrict readonly buffer Residual { T res_data[]; };
#define PARAMS_BINDING 4
#define CONV_SPLITK_REDUCE
#include "conv_params.glslh"

void main() {
  const int o = int(flat_index());
  if (o >= p.total) return;
  float v = part_data[o];
  for (int s = 1; s < p.splits; ++s) v += part_data[s * p.total + o];
  if (p.has_bias != 0) v += float(bias_data[(o / p.npix) % p.OC]);
  if (p.has_residual != 0) v += float(res_data[o]);
  if (p.has_clamp != 0) v = clamp_keep_nan(v, p.out_min, p.out_max);
  out_data[o] = T(v);
}
