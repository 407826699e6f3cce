// Elementwise op of a tensor with a scalar: out = x OP s (the .Scalar overloads).
// variant scalar_add: OP(a,b)=(a+p.alpha*b)
// variant scalar_sub: OP(a,b)=(a-p.alpha*b)
// variant scalar_mul: OP(a,b)=(a*b)
// variant scalar_div: OP(a,b)=(a/b)
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { float in_data[]; };
layout(set = 0, binding = 2) uniform Params {
  int numel;
  float scalar;
  float alpha;
  int pad;
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  out_data[i] = OP(in_data[i], p.scalar);
}
