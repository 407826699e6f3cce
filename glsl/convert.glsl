// dtype conversion: out = CONVERT(x). bool is stored as int 0/1; int32 <-> int64 and bool -> int
// copy int32 storage (a view cannot change the dtype: the host converts by each tensor's dtype).
// Float to int64 (_i64, CHECKED): a value outside int32, the int64's storage, is a fault (fault.glslh).
// variant convert_f32_to_i32: IN_T=float OUT_T=int CONVERT(x)=int(x)
// variant convert_i32_to_f32: IN_T=int OUT_T=float CONVERT(x)=float(x)
// variant convert_f32_to_bool: IN_T=float OUT_T=int CONVERT(x)=(x!=0.0?1:0)
// variant convert_i32_to_i32: IN_T=int OUT_T=int CONVERT(x)=x
// variant convert_i32_to_bool: IN_T=int OUT_T=int CONVERT(x)=(x!=0?1:0)
// variant convert_f32_to_i64: IN_T=float OUT_T=int CONVERT(x)=float_to_int64(x) CHECKED=1
// variant convert_f16_to_i64: IN_T=float16_t OUT_T=int CONVERT(x)=float_to_int64(float(x)) STORAGE_F16=1 CHECKED=1
// variant convert_f32_to_f16: IN_T=float OUT_T=float16_t CONVERT(x)=float16_t(x) STORAGE_F16=1
// variant convert_f16_to_f32: IN_T=float16_t OUT_T=float CONVERT(x)=float(x) STORAGE_F16=1
// variant convert_f16_to_i32: IN_T=float16_t OUT_T=int CONVERT(x)=int(x) STORAGE_F16=1
// variant convert_i32_to_f16: IN_T=int OUT_T=float16_t CONVERT(x)=float16_t(x) STORAGE_F16=1
// variant convert_f16_to_bool: IN_T=float16_t OUT_T=int CONVERT(x)=(x!=float16_t(0)?1:0) STORAGE_F16=1
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { OUT_T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { IN_T in_data[]; };
#ifndef CHECKED
#define CHECKED 0
#endif
#if CHECKED
#define FAULT_BINDING 2
#include "fault.glslh"

// Truncates as int64(x) would; NaN and values outside int32 are faults (detail 'c',
// value: the float's bits).
int float_to_int64(float x) {
  if (!(x >= -2147483648.0 && x < 2147483648.0)) {
    report_fault(FAULT_INT64_RANGE, uint(0x63), floatBitsToInt(x), 0);
    return 0;
  }
  return int(x);
}
#endif
// params-struct: ConvertParams
layout(set = 0, binding = 2 + CHECKED) uniform Params {
  int numel;
  int pad0, pad1, pad2;  // 16 bytes, as the runtime has always uploaded
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  out_data[i] = CONVERT(in_data[i]);
}
