// Embedding of GGUF blocks: out[i, :] = row idx[i] of W [rows, dim], W the raw
// GGUF blocks of one tensor row after row (gguf_blocks.glslh decodes them). One
// invocation per (index, chunk of 32 weights). Indices are int32 or int64, read as
// words (READ_INDEX in common.glslh); one out
// of range (negative ones too, as F.embedding) is a fault (fault.glslh) and gives
// zeros. The _nocheck variants, for when the graph has no fault slots, only give the zeros.
// variant gguf_embedding_q4_0: FORMAT=2 CHECKED=1
// variant gguf_embedding_q4_0_nocheck: FORMAT=2 CHECKED=0
// variant gguf_embedding_q4_1: FORMAT=3 CHECKED=1
// variant gguf_embedding_q4_1_nocheck: FORMAT=3 CHECKED=0
// variant gguf_embedding_q8_0: FORMAT=8 CHECKED=1
// variant gguf_embedding_q8_0_nocheck: FORMAT=8 CHECKED=0
// variant gguf_embedding_q4_k: FORMAT=12 CHECKED=1
// variant gguf_embedding_q4_k_nocheck: FORMAT=12 CHECKED=0
// variant gguf_embedding_q6_k: FORMAT=14 CHECKED=1
// variant gguf_embedding_q6_k_nocheck: FORMAT=14 CHECKED=0
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
layout(set = 0, binding = 1) readonly buffer W { uint w_data[]; };
layout(set = 0, binding = 2) readonly buffer Idx { int idx_data[]; };
#if CHECKED
#define FAULT_BINDING 3
#include "fault.glslh"
#endif
// params-struct: GGUFEmbeddingParams
layout(set = 0, binding = 3 + CHECKED) uniform Params {
  int count, rows, chunks, blocks_per_row;  // count: indices; chunks = dim / 32
  int index_words, pad0, pad1, pad2;        // per index (2: int64 storage)
} p;

#include "gguf_blocks.glslh"

void main() {
  const uint e = flat_index();
  const uint chunks = uint(p.chunks);
  if (e >= uint(p.count) * chunks) return;
  const uint i = e / chunks, c = e % chunks;
  int row, hi;
  READ_INDEX(idx_data, i, p.index_words, row, hi);
  float w[32];
  if (!index_fits(row, hi) || row < 0 || row >= p.rows) {
#if CHECKED
    report_fault_words(FAULT_INDEX, 0u, uint(row), uint(hi), uint(p.rows), 0u);
#endif
    for (uint l = 0u; l < 32u; ++l) w[l] = 0.0;
  } else {
    decode(uint(row), c, uint(p.blocks_per_row), w);
  }
  const uint o = e * 32u;  // (i * chunks + c) * 32
  for (uint l = 0u; l < 32u; ++l) out_data[o + l] = w[l];
}
