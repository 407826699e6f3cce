// dtypes: f32 f16 i32 i64
// variant index_put: CHECKED=1
// variant index_put_nocheck: CHECKED=0
// In place: out[.., idx[j], ..] = values[.., j, ..] along dim p.dim, where `out`
// is a state tensor (a KV cache) that keeps everything else. One invocation per
// element of `values`. Index tensors are int32 or int64, read as words (READ_INDEX in
// common.glslh); a negative index counts
// from the end (as eager index_put). An index out of range is a fault
// (fault.glslh) and its element is not written, so the state stays as it was
// there and no write leaves the buffer.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer Values { T values_data[]; };
layout(set = 0, binding = 2) readonly buffer Idx { int idx[]; };
#if CHECKED
#define FAULT_BINDING 3
#include "fault.glslh"
#endif
// params-struct: IndexPutParams
layout(set = 0, binding = 3 + CHECKED) uniform Params {
  ivec4 values_sizes[2];
  ivec4 out_strides[2];
  int numel;     // of values
  int rank;
  int dim;       // the dim idx selects along
  int dim_size;  // its size in out
  int index_words;  // per index (2: int64 storage)
} p;

void main() {
  const int i = int(flat_index());
  if (i >= p.numel) return;
  int rem = i;
  int offset = 0;
  int position = 0, hi = 0;
  for (int d = not_inlined(p.rank) - 1; d >= 0; --d) {
    const int s = DIM(p.values_sizes, d);
    const int c = rem % s;
    rem /= s;
    if (d == p.dim) {
      READ_INDEX(idx, c, p.index_words, position, hi);
    } else {
      offset += c * DIM(p.out_strides, d);
    }
  }
  const int w = position < 0 ? position + p.dim_size : position;
  if (!index_fits(position, hi) || w < 0 || w >= p.dim_size) {
#if CHECKED
    report_fault_words(FAULT_INDEX, uint(p.dim), uint(position), uint(hi), uint(p.dim_size), 0u);
#endif
    return;
  }
  out_data[offset + w * DIM(p.out_strides, p.dim)] = values_data[i];
}
