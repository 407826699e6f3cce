// vkd_linear_qw_fused's epilogue where it runs unfused (more than one row): in place on the
// first linear's output, out = silu(out) * b (silu_mul, b the second linear's), then
// out += residual. Elementwise over out's numel values.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { float out_data[]; };
layout(set = 0, binding = 1) readonly buffer B { float b_data[]; };
layout(set = 0, binding = 2) readonly buffer Residual { float residual_data[]; };
// params-struct: QLinearEpilogueParams
layout(set = 0, binding = 3) uniform Params {
  int numel, silu_mul, has_residual;
} p;

void main() {
  const int i = int(flat_index());
  if (i >= p.numel) return;
  float v = out_data[i];
  if (p.silu_mul != 0) v = v / (1.0 + exp(-v)) * b_data[i];
  if (p.has_residual != 0) v += residual_data[i];
  out_data[i] = v;
}
