// dtypes: f32 f16 i32 i64
// out[i] = in[offset + strided position of i]: permute, and later transpose,
// expand, slice and select, are all this gather with other strides.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
// params-struct: StridedCopyParams
layout(set = 0, binding = 2) uniform Params {
  ivec4 out_sizes[2];
  ivec4 in_strides[2];  // stride in `in` of each out dim
  int numel;
  int rank;
  int in_offset;
  int pad;
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  out_data[i] = in_data[p.in_offset + strided_offset(i, p.rank, p.out_sizes, p.in_strides)];
}
