// dtype conversion: out = CONVERT(x). bool is stored as int 0/1; int32 <-> int64 and bool -> int
// copy int32 storage (a view cannot change the dtype: the host converts by each tensor's dtype).
// variant convert_f32_to_i32: IN_T=float OUT_T=int CONVERT(x)=int(x)
// variant convert_i32_to_f32: IN_T=int OUT_T=float CONVERT(x)=float(x)
// variant convert_f32_to_bool: IN_T=float OUT_T=int CONVERT(x)=(x!=0.0?1:0)
// variant convert_i32_to_i32: IN_T=int OUT_T=int CONVERT(x)=x
// variant convert_i32_to_bool: IN_T=int OUT_T=int CONVERT(x)=(x!=0?1:0)
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
// params-struct: ConvertParams
layout(set = 0, binding = 2) uniform Params {
  int numel;
  int pad0, pad1, pad2;  // 16 bytes, as the runtime has always uploaded
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  out_data[i] = CONVERT(in_data[i]);
}
