// Elementwise op of a tensor with a scalar: out = x OP s (the .Scalar overloads), s = S.
// dtypes: f32 f16 i32
// variant scalar_add: OP(a,b)=(a+CT(p.alpha)*b)
// variant scalar_sub: OP(a,b)=(a-CT(p.alpha)*b)
// variant scalar_mul: OP(a,b)=(a*b)
// variant scalar_div(f32 f16): OP(a,b)=(a/b)
// variant scalar_pow: OP(a,b)=power(a,b)
// variant scalar_rpow: OP(a,b)=power(b,a)
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
// params-struct: ScalarParams
layout(set = 0, binding = 2) uniform Params {
  int numel;
  float scalar;
  float alpha;
  int int_scalar;  // the scalar for integer tensors
} p;

#include "scalar_math.glslh"

#if IS_FLOAT
#define S p.scalar
#else
#define S p.int_scalar
#endif

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  out_data[i] = T(OP(CT(in_data[i]), S));
}
