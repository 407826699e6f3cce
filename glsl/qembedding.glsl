// Quantized embedding: out[i, d] = (q[idx[i], d] - zero[idx[i], g]) * scale[idx[i], g],
// g = d / group_size; q packed 32 / bits per uint word (see qlinear_rows.glsl).
// Indices are int32 or int64, read as words (READ_INDEX in common.glslh); one out
// of range (negative ones too, as F.embedding) is a fault (fault.glslh) and gives zeros. The _nocheck variant,
// for measuring the check's cost, only gives the zeros.
// variant qembedding: CHECKED=1
// variant qembedding_nocheck: CHECKED=0
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
layout(set = 0, binding = 1) readonly buffer W { uint w_data[]; };
layout(set = 0, binding = 2) readonly buffer S { float s_data[]; };
layout(set = 0, binding = 3) readonly buffer Z { int z_data[]; };
layout(set = 0, binding = 4) readonly buffer Idx { int idx_data[]; };
#define FAULT_BINDING 5
#include "fault.glslh"
// params-struct: QEmbeddingParams
layout(set = 0, binding = PARAMS_BINDING) uniform Params {
  int numel, dim, rows, words_per_row;
  int group_size, groups, bits, has_zeros;
  int index_words, pad0, pad1, pad2;  // index_words: per index (2: int64 storage)
} p;

void main() {
  const int e = int(flat_index());
  if (e >= p.numel) return;
  const int i = e / p.dim, d = e % p.dim;
  int row, hi;
  READ_INDEX(idx_data, i, p.index_words, row, hi);
  if (!index_fits(row, hi) || row < 0 || row >= p.rows) {
#if CHECKED
    report_fault_words(FAULT_INDEX, 0u, uint(row), uint(hi), uint(p.rows), 0u);
#endif
    out_data[e] = 0.0;
    return;
  }
  const int per = 32 / p.bits;
  const uint word = w_data[row * p.words_per_row + d / per];
  const int k = d % per;
  const int q = int(word << uint(32 - p.bits * (k + 1))) >> (32 - p.bits);
  const int g = d / p.group_size;
  const int zero = p.has_zeros != 0 ? z_data[row * p.groups + g] : 0;
  out_data[e] = float(q - zero) * s_data[row * p.groups + g];
}
