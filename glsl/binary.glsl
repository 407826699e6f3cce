// Elementwise binary ops with broadcasting: out = a OP b. Float- or int-only bodies carry their dtype.
// The _checked and _int64 variants (CHECKED) report integer faults (fault.glslh): division by zero,
// and, where the graph stores int64 as int32 (the _int64 variants), int64 results outside int32.
// int32 and int64 storage wrap, as in PyTorch.
// dtypes: f32 f16 i32 i64
// variant binary_add: OP(a,b)=(a+CT(p.alpha)*b)
// variant binary_sub: OP(a,b)=(a-CT(p.alpha)*b)
// variant binary_mul: OP(a,b)=(a*b)
// variant binary_div(f32 f16): OP(a,b)=(a/b)
// variant binary_div_trunc: OP(a,b)=div_trunc(a,b)
// variant binary_div_floor: OP(a,b)=div_floor(a,b)
// variant binary_minimum: OP(a,b)=minimum(a,b)
// variant binary_maximum: OP(a,b)=maximum(a,b)
// variant binary_pow: OP(a,b)=power(a,b)
// variant binary_div_trunc_checked(i32 i64): OP(a,b)=div_trunc_checked(a,b) CHECKED=1
// variant binary_div_floor_checked(i32 i64): OP(a,b)=div_floor_checked(a,b) CHECKED=1
// variant binary_add_int64(i32): OP(a,b)=add_int64(a,mul_int64(int(p.alpha),b)) CHECKED=1
// variant binary_sub_int64(i32): OP(a,b)=sub_int64(a,mul_int64(int(p.alpha),b)) CHECKED=1
// variant binary_mul_int64(i32): OP(a,b)=mul_int64(a,b) CHECKED=1
// variant binary_pow_int64(i32): OP(a,b)=power_int64(a,b) CHECKED=1
// variant binary_bitwise_and(i32 i64): OP(a,b)=(a&b)
// variant binary_bitwise_or(i32 i64): OP(a,b)=(a|b)
// variant binary_bitwise_xor(i32 i64): OP(a,b)=(a^b)
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer A { T a_data[]; };
layout(set = 0, binding = 2) readonly buffer B { T b_data[]; };
// The same bindings seen as 4-vectors (every tensor starts at offset 0 of its
// buffer, so a 16-byte load of element 4k is aligned): 128-bit accesses for
// same-shape operands.
layout(set = 0, binding = 0) writeonly buffer Out4 { T4 out4[]; };
layout(set = 0, binding = 1) readonly buffer A4 { T4 a4[]; };
layout(set = 0, binding = 2) readonly buffer B4 { T4 b4[]; };
#define FAULT_BINDING 3
#include "fault.glslh"
// params-struct: BinaryParams
layout(set = 0, binding = PARAMS_BINDING) uniform Params {
  ivec4 out_sizes[2];
  ivec4 a_strides[2];  // broadcast dims have stride 0
  ivec4 b_strides[2];
  int numel;
  int rank;
  float alpha;
  int same_shape;  // a, b and out all have the out sizes: index directly
} p;

#include "scalar_math.glslh"

#if CHECKED
CT div_trunc_checked(CT a, CT b) { return division_faults(a, b) ? CT(0) : div_trunc(a, b); }
CT div_floor_checked(CT a, CT b) { return division_faults(a, b) ? CT(0) : div_floor(a, b); }
#endif

// Same-shape operands: each invocation does ELEMS 4-vectors, a workgroup-width
// apart (coalesced), so a large tensor needs 4 * ELEMS times fewer workgroups;
// the first invocation also does the last numel % 4 elements.
const int ELEMS = 4;

void main() {
  if (p.same_shape != 0) {
    const int width = int(gl_WorkGroupSize.x);
    const int base = int(flat_group()) * width * ELEMS + int(gl_LocalInvocationID.x);
    const int n4 = p.numel >> 2;
    for (int j = 0; j < ELEMS; ++j) {
      const int i = base + j * width;
      if (i < n4) {
        const T4 a = a4[i];
        const T4 b = b4[i];
        T4 r;
        for (int c = 0; c < 4; ++c) r[c] = T(OP(CT(a[c]), CT(b[c])));
        out4[i] = r;
      }
    }
    if (base == 0) {
      for (int i = n4 * 4; i < p.numel; ++i) out_data[i] = T(OP(CT(a_data[i]), CT(b_data[i])));
    }
    return;
  }
  int i = int(flat_index());
  if (i >= p.numel) return;
  const CT a = CT(a_data[strided_offset(i, p.rank, p.out_sizes, p.a_strides)]);
  const CT b = CT(b_data[strided_offset(i, p.rank, p.out_sizes, p.b_strides)]);
  out_data[i] = T(OP(a, b));
}
