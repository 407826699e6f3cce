// dtypes: f32 f16 i32 i64
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
  int istart;  // integer start and step (their low words)
  int istep;
  int numel;
  int istart_hi;
  int istep_hi;
  int pad0;
} p;

void main() {
  const int i = int(flat_index());
  if (i >= p.numel) return;
#if IS_FLOAT
  out_data[i] = T(p.fstart + float(i) * p.fstep);
#else
  out_data[i] = INT_PARAM(p.istart, p.istart_hi) + CT(i) * INT_PARAM(p.istep, p.istep_hi);
#endif
}
