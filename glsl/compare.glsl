// Comparisons and logical ops with broadcasting: out (bool, as int 0/1) = a OP b.
// The compare_scalar_* variants compare with a scalar in the parameters instead of b.
// dtypes: f32 f16 i32 i64
// variant compare_eq: OP(a,b)=(a==b)
// variant compare_ne: OP(a,b)=(a!=b)
// variant compare_lt: OP(a,b)=(a<b)
// variant compare_le: OP(a,b)=(a<=b)
// variant compare_gt: OP(a,b)=(a>b)
// variant compare_ge: OP(a,b)=(a>=b)
// variant compare_logical_and: OP(a,b)=(a!=T(0)&&b!=T(0))
// variant compare_logical_or: OP(a,b)=(a!=T(0)||b!=T(0))
// variant compare_logical_xor: OP(a,b)=((a!=T(0))!=(b!=T(0)))
// variant compare_scalar_eq: OP(a,b)=(a==b) SCALAR=1
// variant compare_scalar_ne: OP(a,b)=(a!=b) SCALAR=1
// variant compare_scalar_lt: OP(a,b)=(a<b) SCALAR=1
// variant compare_scalar_le: OP(a,b)=(a<=b) SCALAR=1
// variant compare_scalar_gt: OP(a,b)=(a>b) SCALAR=1
// variant compare_scalar_ge: OP(a,b)=(a>=b) SCALAR=1
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { int out_data[]; };
layout(set = 0, binding = 1) readonly buffer A { T a_data[]; };
#if SCALAR
#define PARAMS_BINDING 2
#else
#define PARAMS_BINDING 3
layout(set = 0, binding = 2) readonly buffer B { T b_data[]; };
#endif
// params-struct: CompareParams
layout(set = 0, binding = PARAMS_BINDING) uniform Params {
  ivec4 out_sizes[2];
  ivec4 a_strides[2];  // broadcast dims have stride 0
  ivec4 b_strides[2];
  int numel;
  int rank;
  int same_shape;  // a, b and out all have the out sizes: index directly
  int int_scalar;  // the scalar of compare_scalar_* for integer tensors (its low word)
  float scalar;    // ... for float tensors
  int int_scalar_hi;
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  CT a, b;
#if SCALAR
  a = a_data[i];
#if IS_FLOAT
  b = CT(T(p.scalar));  // the scalar in the tensor's dtype, as torch compares
#else
  b = INT_PARAM(p.int_scalar, p.int_scalar_hi);
#endif
#else
  if (p.same_shape != 0) {
    a = a_data[i];
    b = b_data[i];
  } else {
    a = a_data[strided_offset(i, p.rank, p.out_sizes, p.a_strides)];
    b = b_data[strided_offset(i, p.rank, p.out_sizes, p.b_strides)];
  }
#endif
  out_data[i] = OP(a, b) ? 1 : 0;
}
