// The activations of vkd_linear_dq8a_qw, quantized once per row for every
// workgroup of qlinear_dq8a_*.glsl (which read them 4 bytes at a time) as torchao's
// per-token asymmetric int8 choose_qparams_affine and quantize_affine: min clamped
// to <= 0, max to >= 0, scale = max((max - min) / 255, FLT_MIN), zero =
// clamp(-128 - round(min / scale)), q = clamp(round(x * (1 / scale)) + zero).
// A workgroup takes rows gl_WorkGroupID.x, + gl_NumWorkGroups.x, ...; a row of the
// output holds [scale bits, zero, 0, 0] and then the values 4 per int (p.row_ints,
// a multiple of 4, so rows stay 16-byte aligned): for int4 weights word w's
// values 8w + 0, 2, 4, 6 then 8w + 1, 3, 5, 7 (the order of the weight nibbles the
// kernel pairs them with), for int8 in order; positions past K hold the zero point
// (they add nothing to sum (q - zero)(w - zero_w)).
#version 450
#extension GL_GOOGLE_include_directive : require
// subgroup-variants
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "workgroup_reduce.glslh"

layout(set = 0, binding = 0) writeonly buffer XQ { int xq_data[]; };
layout(set = 0, binding = 1) readonly buffer X { float x_data[]; };
// params-struct: QuantizeRowsParams
layout(set = 0, binding = 2) uniform Params {
  int M, K, bits, row_ints;
} p;

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int wg = int(gl_WorkGroupSize.x);
  const int stride = 4 + p.row_ints;
  for (int m = int(gl_WorkGroupID.x); m < p.M; m += int(gl_NumWorkGroups.x)) {
    float lo = 0.0, hi = 0.0;
    for (int k = tid; k < p.K; k += wg) {
      const float v = x_data[m * p.K + k];
      lo = min(lo, v);
      hi = max(hi, v);
    }
    lo = -workgroup_max(-lo);
    hi = workgroup_max(hi);
    const float scale = max((hi - lo) / 255.0, 1.17549435e-38);
    const float zero = clamp(-128.0 - roundEven(lo / scale), -128.0, 127.0);
    const float inv_scale = 1.0 / scale;
    if (tid == 0) {
      xq_data[m * stride] = floatBitsToInt(scale);
      xq_data[m * stride + 1] = int(zero);
      xq_data[m * stride + 2] = 0;
      xq_data[m * stride + 3] = 0;
    }
    for (int j = tid; j < p.row_ints; j += wg) {
      int packed = 0;
      for (int b = 0; b < 4; ++b) {
        // int4: int j is half h of word j / 2, byte b its value 2b + h.
        const int k = p.bits == 4 ? (j >> 1) * 8 + 2 * b + (j & 1) : 4 * j + b;
        int q = int(zero);
        if (k < p.K) q = int(clamp(roundEven(x_data[m * p.K + k] * inv_scale) + zero, -128.0, 127.0));
        packed |= (q & 0xFF) << (8 * b);
      }
      xq_data[m * stride + 4 + j] = packed;
    }
  }
}
