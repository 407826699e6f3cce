// dtypes: f32 f16 i32
// out[i] = start + i * step: full and full_like (step 0), arange, scalar_tensor.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
// params-struct: FillParams
layout(set = 0, binding = 1) uniform Params {
  float fstart;
  float fstep;
  int istart;
  int istep;
  int numel;
  int pad0, pad1, pad2;  // 32 bytes, as the runtime has always uploaded
} p;

void main() {
  const int i = int(flat_index());
  if (i >= p.numel) return;
#if IS_FLOAT
  out_data[i] = T(p.fstart + float(i) * p.fstep);
#else
  out_data[i] = p.istart + i * p.istep;
#endif
}
