// Standalone per-tensor quantize (float -> int8) and dequantize (int8 -> float)
// at the edges of a static int8 region; int8 is stored as int32.
// variant q8ta_quantize: QUANTIZE=1 OUT_T=int IN_T=float
// variant q8ta_dequantize: QUANTIZE=0 OUT_T=float IN_T=int
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"
#include "q8ta.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { OUT_T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { IN_T in_data[]; };
// params-struct: Q8taConvertParams
layout(set = 0, binding = 2) uniform Params {
  int numel;
  float scale;
  float inv_scale;
  int zero_point;
  int quant_min;
  int quant_max;
  int pad0;
  int pad1;
} p;

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
#if QUANTIZE
  out_data[i] = requantize(in_data[i], p.inv_scale, p.zero_point, p.quant_min, p.quant_max);
#else
  precise float x = float(in_data[i] - p.zero_point) * p.scale;
  out_data[i] = x;
#endif
}
