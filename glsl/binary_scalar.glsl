// Elementwise op of a tensor with a scalar: out = x OP s (the .Scalar overloads), s = S.
// The _int64 variants (CHECKED), where the graph stores int64 as int32, report int64 results outside
// int32 (fault.glslh).
// dtypes: f32 f16 i32 i64
// variant scalar_add: OP(a,b)=(a+CT(p.alpha)*b)
// variant scalar_sub: OP(a,b)=(a-CT(p.alpha)*b)
// variant scalar_mul: OP(a,b)=(a*b)
// variant scalar_div(f32 f16): OP(a,b)=(a/b)
// variant scalar_add_int64(i32): OP(a,b)=add_int64(a,mul_int64(int(p.alpha),b)) CHECKED=1
// variant scalar_sub_int64(i32): OP(a,b)=sub_int64(a,mul_int64(int(p.alpha),b)) CHECKED=1
// variant scalar_mul_int64(i32): OP(a,b)=mul_int64(a,b) CHECKED=1
// variant scalar_pow_int64(i32): OP(a,b)=power_int64(a,b) CHECKED=1
// variant scalar_rpow_int64(i32): OP(a,b)=power_int64(b,a) CHECKED=1
// variant scalar_pow: OP(a,b)=power(a,b)
// variant scalar_rpow: OP(a,b)=power(b,a)
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
#define FAULT_BINDING 2
#include "fault.glslh"
// params-struct: ScalarParams
layout(set = 0, binding = PARAMS_BINDING) uniform Params {
  int numel;
  float scalar;
  float alpha;
  int int_scalar;  // the scalar for integer tensors (its low word)
  int int_scalar_hi;
  int pad0, pad1, pad2;
} p;

#include "scalar_math.glslh"

#if IS_FLOAT
#define S p.scalar
#else
#define S INT_PARAM(p.int_scalar, p.int_scalar_hi)
#endif

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  out_data[i] = T(OP(CT(in_data[i]), S));
}
