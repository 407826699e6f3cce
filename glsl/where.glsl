// where(cond, a, b) with broadcasting of all three; cond is bool stored as int.
// dtypes: f32 f16 i32 i64
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer C { int cond_data[]; };
layout(set = 0, binding = 2) readonly buffer A { T a_data[]; };
layout(set = 0, binding = 3) readonly buffer B { T b_data[]; };
// params-struct: WhereParams
layout(set = 0, binding = 4) uniform Params {
  ivec4 out_sizes[2];
  ivec4 cond_strides[2];  // broadcast dims have stride 0
  ivec4 a_strides[2];
  ivec4 b_strides[2];
  int numel;
  int rank;
  int pad0;
  int pad1;
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  bool c = cond_data[strided_offset(i, p.rank, p.out_sizes, p.cond_strides)] != 0;
  out_data[i] = c ? a_data[strided_offset(i, p.rank, p.out_sizes, p.a_strides)]
                  : b_data[strided_offset(i, p.rank, p.out_sizes, p.b_strides)];
}
