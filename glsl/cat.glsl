// One input of aten.cat: copies `in` into its slice of `out` along the cat dim.
// Tensors viewed as [outer, dim, inner]; the input's slice starts at `offset`.
// dtypes: f32 f16 i32 i64
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
// params-struct: CatParams
layout(set = 0, binding = 2) uniform Params {
  int numel;   // of the input
  int inner;
  int in_dim;
  int out_dim;
  int offset;
  int pad0, pad1, pad2;  // 32 bytes, as the runtime has always uploaded
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  int inner = i % p.inner;
  int rest = i / p.inner;
  int d = rest % p.in_dim;
  int outer = rest / p.in_dim;
  out_data[(outer * p.out_dim + p.offset + d) * p.inner + inner] = in_data[i];
}
