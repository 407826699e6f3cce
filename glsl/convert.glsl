// dtype conversion: out = CONVERT(x), named convert_FROM_to_TO by storage. bool is stored as int 0/1;
// int32 <-> int64 and bool -> int where both are int32 storage copy (a view cannot change the dtype:
// the host converts by each tensor's dtype).
// Float to int64 checks (CHECKED, fault.glslh): NaN and values outside int64 are faults, and where the
// graph stores int64 as int32 (the _int64 variants to i32), values outside int32.
// variant convert_f32_to_i32: IN_T=float OUT_T=int CONVERT(x)=int(x)
// variant convert_i32_to_f32: IN_T=int OUT_T=float CONVERT(x)=float(x)
// variant convert_f32_to_bool: IN_T=float OUT_T=int CONVERT(x)=(x!=0.0?1:0)
// variant convert_i32_to_i32: IN_T=int OUT_T=int CONVERT(x)=x
// variant convert_i32_to_bool: IN_T=int OUT_T=int CONVERT(x)=(x!=0?1:0)
// variant convert_f32_to_i32_int64: IN_T=float OUT_T=int CONVERT(x)=float_to_int64(x) CHECKED=1
// variant convert_f16_to_i32_int64: IN_T=float16_t OUT_T=int CONVERT(x)=float_to_int64(float(x)) STORAGE_F16=1 CHECKED=1
// variant convert_f32_to_f16: IN_T=float OUT_T=float16_t CONVERT(x)=float16_t(x) STORAGE_F16=1
// variant convert_f16_to_f32: IN_T=float16_t OUT_T=float CONVERT(x)=float(x) STORAGE_F16=1
// variant convert_f16_to_i32: IN_T=float16_t OUT_T=int CONVERT(x)=int(x) STORAGE_F16=1
// variant convert_i32_to_f16: IN_T=int OUT_T=float16_t CONVERT(x)=float16_t(x) STORAGE_F16=1
// variant convert_f16_to_bool: IN_T=float16_t OUT_T=int CONVERT(x)=(x!=float16_t(0)?1:0) STORAGE_F16=1
// variant convert_f32_to_i64: IN_T=float OUT_T=int64_t CONVERT(x)=float_to_int64(x) STORAGE_I64=1 CHECKED=1
// variant convert_f32_to_i64_nocheck: IN_T=float OUT_T=int64_t CONVERT(x)=int64_t(x) STORAGE_I64=1
// variant convert_f16_to_i64: IN_T=float16_t OUT_T=int64_t CONVERT(x)=float_to_int64(float(x)) STORAGE_F16=1 STORAGE_I64=1 CHECKED=1
// variant convert_f16_to_i64_nocheck: IN_T=float16_t OUT_T=int64_t CONVERT(x)=int64_t(float(x)) STORAGE_F16=1 STORAGE_I64=1
// variant convert_i64_to_f32: IN_T=int64_t OUT_T=float CONVERT(x)=float(x) STORAGE_I64=1
// variant convert_i64_to_f16: IN_T=int64_t OUT_T=float16_t CONVERT(x)=float16_t(float(x)) STORAGE_F16=1 STORAGE_I64=1
// variant convert_i32_to_i64: IN_T=int OUT_T=int64_t CONVERT(x)=int64_t(x) STORAGE_I64=1
// variant convert_i64_to_i32: IN_T=int64_t OUT_T=int CONVERT(x)=int(x) STORAGE_I64=1
// variant convert_i64_to_bool: IN_T=int64_t OUT_T=int CONVERT(x)=(x!=int64_t(0)?1:0) STORAGE_I64=1
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { OUT_T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { IN_T in_data[]; };
#define FAULT_BINDING 2
#include "fault.glslh"

#if CHECKED
// Truncates as a cast to int64 would; NaN and values outside the storage's range
// (int64, or int32 where int64 is stored as int32) are faults (detail 'c', value:
// the float's bits, bound: the storage's bits).
#if STORAGE_I64
int64_t float_to_int64(float x) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) {
    report_fault(FAULT_INT64_RANGE, uint(0x63), floatBitsToInt(x), 64);
    return 0l;
  }
  return int64_t(x);
}
#else
int float_to_int64(float x) {
  if (!(x >= -2147483648.0 && x < 2147483648.0)) {
    report_fault(FAULT_INT64_RANGE, uint(0x63), floatBitsToInt(x), 32);
    return 0;
  }
  return int(x);
}
#endif
#endif
// params-struct: ConvertParams
layout(set = 0, binding = PARAMS_BINDING) uniform Params {
  int numel;
  int pad0, pad1, pad2;  // 16 bytes, as the runtime has always uploaded
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  out_data[i] = CONVERT(in_data[i]);
}
