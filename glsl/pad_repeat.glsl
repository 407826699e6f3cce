// dtypes: f32 f16 i32 i64
// variant constant_pad: PAD=1
// variant repeat: PAD=0
// Each output coordinate maps to an input coordinate per dim:
//   constant_pad_nd: c - before[d], and outside the input the fill value
//                    (a negative `before` crops);
//   repeat and roll: (c - shift[d]) mod in_size[d], with the input aligned to
//                    the right of the output (the host gives shift in [0, in_size)).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
// params-struct: PadRepeatParams
layout(set = 0, binding = 2) uniform Params {
  ivec4 out_sizes[2];
  ivec4 in_sizes[2];  // the input's sizes, left-padded with 1 to the output's rank
  ivec4 before[2];    // pad: the pad before each dim; repeat/roll: the shift
  int numel;
  int rank;
  float fvalue;
  int ivalue;  // the integer fill value (its low word)
  int ivalue_hi;
  int pad0, pad1, pad2;
} p;

void main() {
  const int i = int(flat_index());
  if (i >= p.numel) return;
  int rem = i;
  int offset = 0;
  int stride = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int s = DIM(p.out_sizes, d);
    const int c = rem % s;
    rem /= s;
    const int n = DIM(p.in_sizes, d);
#if PAD
    const int ic = c - DIM(p.before, d);
    if (ic < 0 || ic >= n) {
#if IS_FLOAT
      out_data[i] = T(p.fvalue);
#else
      out_data[i] = INT_PARAM(p.ivalue, p.ivalue_hi);
#endif
      return;
    }
#else
    const int ic = (c + n - DIM(p.before, d)) % n;
#endif
    offset += ic * stride;
    stride *= n;
  }
  out_data[i] = in_data[offset];
}
