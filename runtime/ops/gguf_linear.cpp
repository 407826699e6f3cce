// et_vk.vkd_linear_gguf and et_vk.vkd_embedding_gguf: linear and embedding on raw
// GGUF blocks (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K), one shader variant per block layout
// (glsl/gguf_linear.glsl, glsl/gguf_embedding.glsl, both decoding with gguf_blocks.glslh).
#include "op_utils.h"
#include "shader_params.h"  // GGUFLinearParams, GGUFEmbeddingParams: glsl/gguf_*.glsl

namespace vkd {

namespace {

struct BlockFormat {
  int64_t ggml_type;
  const char* name;
  const char* linear_shader;
  const char* embedding_shader;  // + "_nocheck" without a fault slot
  int64_t block_size;
  int64_t block_bytes;
};

// Values of ggml's type enum (gguf.GGMLQuantizationType).
constexpr BlockFormat kFormats[] = {
    {2, "Q4_0", "gguf_linear_q4_0", "gguf_embedding_q4_0", 32, 18},
    {3, "Q4_1", "gguf_linear_q4_1", "gguf_embedding_q4_1", 32, 20},
    {8, "Q8_0", "gguf_linear_q8_0", "gguf_embedding_q8_0", 32, 34},
    {12, "Q4_K", "gguf_linear_q4_k", "gguf_embedding_q4_k", 256, 144},
    {14, "Q6_K", "gguf_linear_q6_k", "gguf_embedding_q6_k", 256, 210},
};

constexpr LocalSize kLocal{64, 1, 1};
constexpr int64_t kGemvRows = 4;  // the shader's GEMV_ROWS
constexpr int64_t kGemvCols = 4;  // the shader's GEMV_COLS
constexpr int64_t kTile = 32;     // the shader's TILE

const BlockFormat& format_of(ComputeGraph& g, int64_t ggml_type) {
  for (const BlockFormat& f : kFormats) {
    if (f.ggml_type == ggml_type) return f;
  }
  g.fail("ggml type " + std::to_string(ggml_type) + " is not supported (Q4_0=2, Q4_1=3, Q8_0=8, Q4_K=12, Q6_K=14)");
}

// Checks that `weight` holds the blocks of a [n, k] weight of format f; returns blocks per row.
int64_t check_blocks(ComputeGraph& g, int weight, const BlockFormat& f, int64_t N, int64_t K) {
  const Tensor& w = g.tensor(weight);
  if (w.dtype != DType::Int32) g.fail("weight must be int32 words of GGUF blocks, got " + std::string(dtype_name(w.dtype)));
  if (N < 1 || K < 1 || K % f.block_size != 0) {
    g.fail(std::string(f.name) + " weights need K a positive multiple of " + std::to_string(f.block_size) +
           ", got [N=" + std::to_string(N) + ", K=" + std::to_string(K) + "]");
  }
  const int64_t blocks_per_row = K / f.block_size;
  const int64_t nbytes = checked_mul(checked_mul(N, blocks_per_row), f.block_bytes);
  if (w.numel() * 4 < nbytes) {
    g.fail(std::to_string(w.numel()) + " weight words are too few for a " + f.name + " weight [" +
           std::to_string(N) + ", " + std::to_string(K) + "] (" + std::to_string(nbytes) + " bytes)");
  }
  if (nbytes > int64_t(UINT32_MAX)) g.fail("weights of more than 4 GiB are not supported");
  return blocks_per_row;
}

// vkd_linear_gguf(x, weight, ggml_type, n, k, bias=None) -> out
void add_linear_gguf(ComputeGraph& g, const OpArgs& a) {
  const int x = a.at(0), weight = a.at(1), bias = g.is_null(a.at(5)) ? -1 : a.at(5), out = a.back();
  require_float(g, x);
  require_float(g, out);
  if (bias >= 0) require_float(g, bias);
  const BlockFormat& f = format_of(g, g.get_int(a.at(2)));
  const int64_t N = g.get_int(a.at(3)), K = g.get_int(a.at(4));
  const int64_t blocks_per_row = check_blocks(g, weight, f, N, K);
  if (bias >= 0) {
    const Tensor& b = g.tensor(bias);
    if (b.dim() != 1 || b.sizes[0] != N) g.fail("bias must have sizes [" + std::to_string(N) + "]");
  }
  // A missing bias still needs a buffer at binding 3; bind x, never read.
  g.add_node(g.current_op(), variant(g, f.linear_shader, x), kLocal, {out, x, weight, bias >= 0 ? bias : x},
             [x, out, bias, N, K, blocks_per_row](ComputeGraph& g, Node& node) {
               const Tensor& in = g.tensor(x);
               if (in.dim() < 1 || in.sizes.back() != K) {
                 g.fail("input of sizes " + sizes_str(in.sizes) + " does not end in K=" + std::to_string(K));
               }
               const int64_t M = in.numel() / K;
               Sizes out_sizes = in.sizes;
               out_sizes.back() = N;
               g.tensor(out).sizes = out_sizes;
               GGUFLinearParams p{};
               p.M = static_cast<int32_t>(M);
               p.N = static_cast<int32_t>(N);
               p.K = static_cast<int32_t>(K);
               p.chunks = static_cast<int32_t>(K / 32);
               p.blocks_per_row = static_cast<int32_t>(blocks_per_row);
               p.has_bias = bias >= 0 ? 1 : 0;
               p.gemv = M <= kGemvRows ? 1 : 0;
               node.set_params(p);
               if (M == 0) {
                 node.groups = {0, 0, 0};
               } else if (p.gemv) {
                 // One workgroup per kGemvCols output features, spilling from x into y.
                 node.set_groups_1d((N + kGemvCols - 1) / kGemvCols * kLocal[0], kLocal[0]);
               } else {
                 if ((M + kTile - 1) / kTile > 65535) g.fail("more than 65535 * 32 input rows");
                 node.groups = {static_cast<uint32_t>((N + kTile - 1) / kTile),
                                static_cast<uint32_t>((M + kTile - 1) / kTile), 1};
               }
             });
}

// vkd_embedding_gguf(weight, indices, ggml_type, rows, dim) -> out [*indices.sizes, dim]
void add_embedding_gguf(ComputeGraph& g, const OpArgs& a) {
  const int weight = a.at(0), indices = a.at(1), out = a.back();
  require_float(g, out);
  const BlockFormat& f = format_of(g, g.get_int(a.at(2)));
  const int64_t rows = g.get_int(a.at(3)), dim = g.get_int(a.at(4));
  const int64_t blocks_per_row = check_blocks(g, weight, f, rows, dim);
  if (rows > INT32_MAX) g.fail("more than 2^31 rows are not supported");
  const DType idx = g.tensor(indices).dtype;
  if (idx != DType::Int32 && idx != DType::Int64) g.fail("indices must be int32 or int64");
  if (g.tensor(indices).dim() > 7) g.fail("indices of rank above 7 are not supported");
  std::vector<int> tensors{out, weight, indices};
  const std::string checked = f.embedding_shader;
  const std::string shader = with_fault_slot(g, tensors, checked, checked + "_nocheck");
  g.add_node(g.current_op(), shader, kLocal, tensors, [=](ComputeGraph& g, Node& node) {
    Sizes out_sizes = g.tensor(indices).sizes;
    out_sizes.push_back(dim);
    g.tensor(out).sizes = out_sizes;
    const int64_t count = g.tensor(indices).numel();
    const int64_t work = checked_mul(count, dim / 32);
    if (checked_mul(count, dim) > int64_t(INT32_MAX)) g.fail("an output of more than 2^31 elements is not supported");
    GGUFEmbeddingParams p{};
    p.count = static_cast<int32_t>(count);
    p.rows = static_cast<int32_t>(rows);
    p.chunks = static_cast<int32_t>(dim / 32);
    p.blocks_per_row = static_cast<int32_t>(blocks_per_row);
    p.index_words = index_words(g.tensor(indices));
    node.set_params(p);
    node.set_groups_1d(work, kLocal[0]);
  });
}

}  // namespace

VKD_REGISTER_OPS(register_gguf_linear_ops) {
  register_op("et_vk.vkd_linear_gguf.default", add_linear_gguf);
  register_op("et_vk.vkd_embedding_gguf.default", add_embedding_gguf);
}

}  // namespace vkd
