// dtypes: f32 f16 i32 i64
// variant index_gather1: NIDX=1 CHECKED=1
// variant index_gather2: NIDX=2 CHECKED=1
// variant index_gather3: NIDX=3 CHECKED=1
// variant index_gather4: NIDX=4 CHECKED=1
// variant index_gather1_nocheck: NIDX=1 CHECKED=0
// variant index_gather2_nocheck: NIDX=2 CHECKED=0
// variant index_gather3_nocheck: NIDX=3 CHECKED=0
// variant index_gather4_nocheck: NIDX=4 CHECKED=0
// out[i] = in[sum_d coord_d * in_stride_d + sum_k idx_k[offset_k(coord)] * sel_stride_k]:
// index_select, embedding, gather and index.Tensor are this gather with other
// strides. Index tensors are int32 or int64, read as words (READ_INDEX in
// common.glslh: an int64 index outside int32 is out of range, never wrapped);
// where the op allows it (wrap_negative) a negative index counts from the end of
// its dim. An index out of range is a
// fault (fault.glslh; the _nocheck variants, for measuring the check's cost,
// skip it) and is clamped, so that no read leaves the buffer.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
layout(set = 0, binding = 2) readonly buffer Idx0 { int idx0[]; };
#if NIDX > 1
layout(set = 0, binding = 3) readonly buffer Idx1 { int idx1[]; };
#endif
#if NIDX > 2
layout(set = 0, binding = 4) readonly buffer Idx2 { int idx2[]; };
#endif
#if NIDX > 3
layout(set = 0, binding = 5) readonly buffer Idx3 { int idx3[]; };
#endif
#define FAULT_BINDING (2 + NIDX)
#include "fault.glslh"
// params-struct: IndexGatherParams
layout(set = 0, binding = PARAMS_BINDING) uniform Params {
  ivec4 out_sizes[2];
  ivec4 in_strides[2];   // stride in `in` of each out dim (0 for dims an index decides)
  ivec4 idx_strides[8];  // per index tensor k: its stride of each out dim at [2k], [2k+1]
  ivec4 sel_strides;     // stride in `in` of the dim index tensor k selects along
  ivec4 sel_sizes;       // size of that dim
  ivec4 sel_dims;        // which dim of `in` that is (for the fault's message)
  int numel;
  int rank;
  int window_begin;  // rows of the dim idx0 selects that `in` is bound at (window_rows 0: all)
  int window_rows;
  int wrap_negative;  // 1: -n <= index < 0 counts from the end (index.Tensor, index_select); 0: a fault
  int index_words;    // bit k set: index tensor k has two words per element (int64 storage)
  int pad1;
  int pad2;
} p;

// Index io of index tensor k, wrapped and checked: in [0, sel_sizes[k]).
#define IN_RANGE(idx, io, k, result) \
  { \
    int lo, hi; \
    READ_INDEX(idx, io, 1 + ((p.index_words >> (k)) & 1), lo, hi); \
    result = in_range(lo, hi, k); \
  }

int in_range(int lo, int hi, int k) {
  const int n = p.sel_sizes[k];
  const bool fits = index_fits(lo, hi);
  const int w = !fits ? -1 : (lo < 0 && p.wrap_negative != 0 ? lo + n : lo);
#if CHECKED
  if (w < 0 || w >= n) report_fault_words(FAULT_INDEX, uint(p.sel_dims[k]), uint(lo), uint(hi), uint(n), 0u);
#endif
  return clamp(w, 0, n - 1);
}

void main() {
  const int i = int(flat_index());
  if (i >= p.numel) return;
  int rem = i;
  int offset = 0;
  ivec4 io = ivec4(0);
  for (int d = p.rank - 1; d >= 0; --d) {
    const int s = DIM(p.out_sizes, d);
    const int c = rem % s;
    rem /= s;
    offset += c * DIM(p.in_strides, d);
    for (int k = 0; k < NIDX; ++k) io[k] += c * p.idx_strides[2 * k + (d >> 2)][d & 3];
  }
  int r;
  IN_RANGE(idx0, io[0], 0, r);
  if (p.window_rows > 0) {
    // `in` is bound from row window_begin; other windows' dispatches write the rest.
    r -= p.window_begin;
    if (r < 0 || r >= p.window_rows) return;
  }
  offset += r * p.sel_strides[0];
#if NIDX > 1
  IN_RANGE(idx1, io[1], 1, r);
  offset += r * p.sel_strides[1];
#endif
#if NIDX > 2
  IN_RANGE(idx2, io[2], 2, r);
  offset += r * p.sel_strides[2];
#endif
#if NIDX > 3
  IN_RANGE(idx3, io[3], 3, r);
  offset += r * p.sel_strides[3];
#endif
  out_data[i] = in_data[offset];
}
