// Quantized linear and embedding (et_vk.vkd_linear_qw,
// vkd_linear_dq8a_qw, vkd_embedding_qw): weights stay packed on the GPU,
// 32 / bits signed values per int32 word along K, and are dequantized in the
// shaders (qlinear_gemv.glsl, qlinear_rows.glsl, qlinear_dq8a_dot.glsl,
// qlinear_dq8a_quant.glsl, qlinear_tiled.glsl, qlinear_coop.glsl, qembedding.glsl).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "../vk/pipeline.h"
#include "matmul_choice.h"  // kCoopMmVariants, coopmat_f16_base
#include "op_utils.h"
#include "shader_params.h"  // QLinearParams, QuantizeRowsParams, QEmbeddingParams, QLinearFusedParams,
                            // QLinearEpilogueParams: glsl/qlinear_params.glslh, qlinear_dq8a_quant.glsl,
                            // qembedding.glsl, qlinear_gemv_fused.glsl, qlinear_epilogue.glsl

namespace vkd {

namespace {

// Weight-only: one row takes qlinear_gemv.glsl (kGemvCols columns per workgroup unless the
// setting QLINEAR_GEMV_SHAPE picks another of its shapes, its
// invocations splitting K); up to kRows rows the rows kernel (qlinear_rows.glsl: kRows x
// kCols outputs per workgroup, likewise), more the tiled one (32 x 32 per (8, 8)
// workgroup), or from the setting QLINEAR_COOP_MIN_ROWS rows the cooperative-matrix
// one (coop_variant). dq8a: the rows kernels at every row count.
constexpr int64_t kGemvCols = 4;
constexpr int64_t kRows = 4;
constexpr int64_t kCols = 4;
constexpr LocalSize kTiledLocal{8, 8, 1};
constexpr int64_t kTile = 32;

// qlinear_coop.glsl's tile (coopmm_variants.py's QLINEAR_TILES) for a product of up to
// `rows` rows (the planned size), or null for qlinear_tiled.glsl: a device with
// 16x16x16 f16 matrices (or COOPMAT_EMULATE), not QLINEAR_NO_COOPMAT, the tile's
// shared memory within the device's. The fp16 matmul's kernels on the H100
// (benchmarks/results/coopmm_ceiling_h100.md, 4096^3: l64 155 TF/s at one workgroup an
// SM, h 138 at three, m 79 at four; staging-bound, as this kernel is) favour the large
// tiles on large products, but a 512-token TinyLlama prefill (2048- to 5632-column
// linears) measured whole on the H100 took 32.0 ms with m everywhere, 36.4 with h and
// 73.4 with l64 (benchmarks/results/llm_decode_h100_2026-11-25.md): a few hundred
// workgroups want the small tile. So l64 (l1 where its shared memory does not fit) only
// from kCoopL64FromGroups tiles, h from kCoopHFromGroups (many waves either way), else m.
// QLINEAR_COOP_TILE forces one.
constexpr int64_t kCoopL64FromGroups = 2048;
constexpr int64_t kCoopHFromGroups = 1024;
constexpr const CoopMmVariant& kCoopL64 = variant_named(kCoopMmVariants, "l64");
constexpr const CoopMmVariant& kCoopL1 = variant_named(kCoopMmVariants, "l1");
constexpr const CoopMmVariant& kCoopH = variant_named(kCoopMmVariants, "h");
constexpr const CoopMmVariant& kCoopM = variant_named(kCoopMmVariants, "m");

const CoopMmVariant* coop_variant(ComputeGraph& g, int64_t rows, int64_t N, int64_t bits, std::string& shader) {
  const Settings& s = g.settings();
  const DeviceInfo& device = g.context().info();
  const std::string base = coopmat_f16_base(device, s, "qlinear_coop");
  if (s.qlinear_no_coopmat || base.empty() || rows < s.qlinear_coop_min_rows) return nullptr;
  const auto shader_of = [&](const CoopMmVariant& v) {
    return base + "_" + v.name + (bits == 4 ? "_b4" : "_b8");
  };
  const auto fits = [&](const CoopMmVariant& v) {
    return v.shared_bytes(true) <= device.max_shared_memory && device.workgroup_fits(v.invocations(), 1, 1) &&
           find_shader(shader_of(v)) != nullptr;
  };
  const CoopMmVariant* chosen = nullptr;
  if (!s.qlinear_coop_tile.empty()) {
    for (const CoopMmVariant& v : kCoopMmVariants) {
      if (s.qlinear_coop_tile == v.name) chosen = &v;
    }
    if (chosen == nullptr || !fits(*chosen)) return nullptr;
  } else {
    const auto groups = [&](const CoopMmVariant& v) {
      return ((N + v.tile_n() - 1) / v.tile_n()) * ((rows + v.tile_m() - 1) / v.tile_m());
    };
    const bool large = groups(kCoopL64) >= kCoopL64FromGroups, medium = groups(kCoopH) >= kCoopHFromGroups;
    for (const CoopMmVariant* v : {&kCoopL64, &kCoopL1, &kCoopH, &kCoopM}) {
      const bool wanted = v == &kCoopM || (v == &kCoopH ? medium : large);
      if (wanted && fits(*v)) {
        chosen = v;
        break;
      }
    }
    if (chosen == nullptr) return nullptr;
  }
  shader = shader_of(*chosen);
  return chosen;
}

// The rows kernels' local size: 64, at least one subgroup. H100, 2026-11-23, int4
// 4096x4096 M=1, GPU us (shared-memory reduction / subgroupAdd): 32: 16.7 / 20.4,
// 64: 15.0 / 18.4, 128: 15.6 / 21.8, 256: - / 29.9 (PyTorch's fp16 linear: 41.5;
// the kernel before: 62). So the shared-memory reduction too (rows_shader below).
// The setting QLINEAR_WG (a power of two, 16..the device's limit) sets it, to compare.
// A power of two for the shared-memory reduction.
LocalSize rows_local(ComputeGraph& g) {
  const DeviceInfo& info = g.context().info();
  uint32_t size = 64;
  while (size < info.subgroup_size && size < info.max_workgroup_invocations) size *= 2;
  if (const std::optional<int64_t> v = g.settings().qlinear_wg) {
    if (*v > static_cast<int64_t>(info.max_workgroup_invocations) || (*v & (*v - 1)) != 0) {
      g.fail("VKDELEGATE_QLINEAR_WG=" + std::to_string(*v) + " is not a power of two in 16.." +
             std::to_string(info.max_workgroup_invocations));
    }
    size = static_cast<uint32_t>(*v);
  }
  return {size, 1, 1};
}
// A GEMV shape ending in "s" reduces with subgroupAdd: only where the device has subgroup arithmetic.
void require_subgroup_shape(ComputeGraph& g, const std::string& shape) {
  if (!shape.empty() && shape.back() == 's' && !g.context().info().subgroup_arithmetic) {
    g.fail("the GEMV shape " + shape + " needs subgroup arithmetic, which this device lacks");
  }
}
// qlinear_gemv.glsl's local size: 128 (within the device's limit); the setting QLINEAR_WG
// sets it as it sets the rows kernels'.
LocalSize gemv_local(ComputeGraph& g) {
  constexpr uint32_t kDefault = 128;
  const DeviceInfo& info = g.context().info();
  uint32_t size = kDefault;
  while (size > info.max_workgroup_invocations) size /= 2;
  if (g.settings().qlinear_wg) size = rows_local(g)[0];
  return {size, 1, 1};
}

// qlinear_dq8a_quant.glsl: a workgroup a row, of about K / 4 invocations (64 to
// 1024 and the device's limit, a power of two): at decode the whole node is one
// workgroup, whose serial loads the linear kernel waits for.
LocalSize quantize_local(ComputeGraph& g, int64_t K) {
  const uint32_t limit = std::min<uint32_t>(1024, g.context().info().max_workgroup_invocations);
  uint32_t size = 64;
  while (size * 2 <= limit && size * 4 < K) size *= 2;
  return {size, 1, 1};
}

// The dq8a kernel: the packed integer dot product variant where the device has
// shaderIntegerDotProduct and the build compiled it, unless the setting NO_INTEGER_DOT
// is on (to compare, or to test the plain integer kernel on such a device).
std::string dq8a_base(ComputeGraph& g) {
  if (!g.settings().no_integer_dot && g.context().info().integer_dot_product && find_shader("qlinear_dq8a_dot_b4") != nullptr) {
    return "qlinear_dq8a_dot";
  }
  return "qlinear_dq8a_rows";
}

int64_t words_for(int64_t values, int64_t bits) {
  const int64_t per = 32 / bits;
  return (values + per - 1) / per;
}

// Checks the packed weight [rows, words], scales and zeros against `cols`
// values per row in groups of group_size; returns the number of groups per row.
int64_t check_quantized_weight(ComputeGraph& g, int packed, int scales, int zeros, int64_t cols,
                               int64_t bits, int64_t group_size) {
  if (bits != 4 && bits != 8) g.fail("bits must be 4 or 8, not " + std::to_string(bits));
  const Tensor& w = g.tensor(packed);
  if (w.dtype != DType::Int32 || w.dim() != 2) g.fail("the packed weight must be a 2-D int32 tensor");
  if (group_size <= 0 || cols % group_size != 0 || (group_size != cols && group_size % (32 / bits) != 0)) {
    g.fail("group size " + std::to_string(group_size) + " must divide " + std::to_string(cols) +
           " and be a multiple of " + std::to_string(32 / bits) + " (or equal it)");
  }
  if (w.sizes[1] != words_for(cols, bits)) {
    g.fail("the packed weight " + sizes_str(w.sizes) + " does not hold " + std::to_string(cols) + " " +
           std::to_string(bits) + "-bit values per row");
  }
  const int64_t groups = cols / group_size;
  require_float(g, scales);
  if (g.tensor(scales).numel() != w.sizes[0] * groups) g.fail("scales must hold one value per group");
  if (zeros >= 0) {
    const Tensor& z = g.tensor(zeros);
    if (z.dtype != DType::Int8 && z.dtype != DType::Int32) g.fail("zero points must be int8 or int32");
    if (z.numel() != w.sizes[0] * groups) g.fail("zero points must hold one value per group");
  }
  return groups;
}

// args: x, packed, scales, zeros?, bias?, bits, group_size, out
void add_quantized_linear(ComputeGraph& g, const OpArgs& a, bool dq8a) {
  const int x = a.at(0), packed = a.at(1), scales = a.at(2), out = a.back();
  const int zeros = g.is_null(a.at(3)) ? -1 : a.at(3);
  const int bias = g.is_null(a.at(4)) ? -1 : a.at(4);
  const int64_t bits = g.get_int(a.at(5)), group_size = g.get_int(a.at(6));
  require_float(g, x);
  if (g.tensor(x).dim() < 1) g.fail("the input must have rank >= 1");
  const int64_t K = g.tensor(x).sizes.back();
  const int64_t N = g.tensor(packed).dim() == 2 ? g.tensor(packed).sizes[0] : 0;
  const int64_t groups = check_quantized_weight(g, packed, scales, zeros, K, bits, group_size);
  if (bias >= 0) {
    require_float(g, bias);
    if (g.tensor(bias).dim() != 1 || g.tensor(bias).sizes[0] != N) {
      g.fail("bias must have sizes [" + std::to_string(N) + "]");
    }
  }
  // The rows kernel's variant: 16-byte chunks where every row is whole chunks of values.
  const int64_t per = 32 / bits;
  const bool vec4 = K % (4 * per) == 0;
  const int64_t chunk_values = (vec4 ? 4 : 1) * per;
  const int32_t chunk_in_one_group = group_size % chunk_values == 0 || group_size == K;
  // The subgroupAdd reduction (_sg) measured slower on the H100 (rows_local): only with
  // the setting QLINEAR_SUBGROUP, to compare.
  const std::string rows_base =
      (dq8a ? dq8a_base(g) : std::string("qlinear_rows")) + (bits == 4 ? "_b4" : "_b8") + (vec4 ? "_vec4" : "");
  const std::string rows_shader = g.settings().qlinear_subgroup ? subgroup_variant(g, rows_base) : rows_base;
  // dq8a: x quantized once per row into a scratch tensor (qlinear_dq8a_quant.glsl's layout).
  const int64_t row_ints = (words_for(K, bits) * (bits == 4 ? 2 : 1) + 3) / 4 * 4;
  const int64_t xq_stride = 4 + row_ints;
  const int64_t max_rows = K == 0 ? 0 : g.tensor(x).numel() / K;
  const int xq = dq8a ? g.add_scratch_tensor(DType::Int32, {std::max<int64_t>(1, max_rows * xq_stride)}) : -1;
  const std::vector<int> tensors = {out, dq8a ? xq : x, packed, scales, zeros >= 0 ? zeros : scales,
                                    bias >= 0 ? bias : scales};
  const int64_t words_per_row = words_for(K, bits);
  // qlinear_gemv.glsl: x as vec4 where each word's values are whole vec4s; the group of a
  // word by a shift where the words per group are a power of two (one group: 31).
  const bool gemv = !dq8a && !g.settings().qlinear_no_gemv;
  const bool gemv_x4 = K % 4 == 0 && K % per == 0;
  std::string gemv_shader = std::string("qlinear_gemv") + (bits == 4 ? "_b4" : "_b8") + (gemv_x4 ? "_x4" : "");
  int64_t gemv_cols = kGemvCols;
  if (const std::string& shape = g.settings().qlinear_gemv_shape; !shape.empty() && bits == 4 && gemv_x4) {
    // "cNuM": N columns per workgroup; "s": the subgroup reduction.
    require_subgroup_shape(g, shape);
    if (shape != "c4u1") gemv_shader += "_" + shape;
    gemv_cols = std::stoi(shape.substr(1, shape.find('u') - 1));
  }
  int32_t group_words_log2 = groups == 1 ? 31 : -1;
  if (groups > 1) {
    const int64_t group_words = group_size / per;
    for (int32_t b = 0; b < 31; ++b) {
      if (group_words == (int64_t{1} << b)) group_words_log2 = b;
    }
  }
  auto rows_of = [=](ComputeGraph& g) {
    const Tensor& in = g.tensor(x);
    if (in.sizes.back() != K) g.fail("the input's last dim changed from " + std::to_string(K));
    const int64_t M = K == 0 ? 0 : in.numel() / K;
    // The shaders index with int32.
    if (M * std::max(K, xq_stride) > INT32_MAX || M * N > INT32_MAX || N * words_per_row > INT32_MAX) {
      g.fail("too large for 32-bit indexing: " + std::to_string(M) + " x " + std::to_string(K) + " by " +
             std::to_string(N) + " columns");
    }
    return M;
  };
  // Weight-only records every kernel; each update dispatches the one for the current rows.
  std::string coop_shader;
  const CoopMmVariant* coop = dq8a ? nullptr : coop_variant(g, max_rows, N, bits, coop_shader);
  const int64_t coop_min_rows = g.settings().qlinear_coop_min_rows;
  enum class Kernel { Gemv, Rows, Tiled, Coop };
  auto update = [=](ComputeGraph& g, Node& node, Kernel kernel) {
    const int64_t M = rows_of(g);
    Sizes out_sizes = g.tensor(x).sizes;
    out_sizes.back() = N;
    g.tensor(out).sizes = out_sizes;
    if (dq8a) g.tensor(xq).sizes = {std::max<int64_t>(1, M * xq_stride)};
    QLinearParams p{};
    p.M = static_cast<int32_t>(M), p.N = static_cast<int32_t>(N), p.K = static_cast<int32_t>(K);
    p.words_per_row = static_cast<int32_t>(words_per_row);
    p.group_size = static_cast<int32_t>(group_size), p.groups = static_cast<int32_t>(groups);
    p.bits = static_cast<int32_t>(bits), p.has_zeros = zeros >= 0, p.has_bias = bias >= 0;
    p.chunk_in_one_group = chunk_in_one_group, p.xq_stride = static_cast<int32_t>(xq_stride);
    p.group_words_log2 = group_words_log2;
    node.set_params(p);
    const Kernel use = gemv && M == 1          ? Kernel::Gemv
                       : dq8a || M <= kRows     ? Kernel::Rows
                       : coop && M >= coop_min_rows ? Kernel::Coop
                                                : Kernel::Tiled;
    if (kernel != use || M == 0 || N == 0) {
      node.groups = {0, 0, 0};
    } else if (kernel == Kernel::Gemv) {
      node.groups = {static_cast<uint32_t>((N + gemv_cols - 1) / gemv_cols), 1, 1};
    } else if (kernel == Kernel::Rows) {
      const int64_t row_groups = (M + kRows - 1) / kRows;
      if (row_groups > 65535) g.fail("more than " + std::to_string(65535 * kRows) + " rows");
      node.groups = {static_cast<uint32_t>((N + kCols - 1) / kCols), static_cast<uint32_t>(row_groups), 1};
    } else if (kernel == Kernel::Coop) {
      const int64_t row_groups = (M + coop->tile_m() - 1) / coop->tile_m();
      if (row_groups > 65535) g.fail("more than " + std::to_string(65535 * coop->tile_m()) + " rows");
      node.groups = {static_cast<uint32_t>((N + coop->tile_n() - 1) / coop->tile_n()), static_cast<uint32_t>(row_groups), 1};
    } else {
      if ((M + kTile - 1) / kTile > 65535) g.fail("more than " + std::to_string(65535 * kTile) + " rows");
      node.groups = {static_cast<uint32_t>((N + kTile - 1) / kTile), static_cast<uint32_t>((M + kTile - 1) / kTile), 1};
    }
  };
  const LocalSize local = rows_local(g);
  if (dq8a) {
    g.add_node(g.current_op(), subgroup_variant(g, "qlinear_dq8a_quant"), quantize_local(g, K), {xq, x},
               [=](ComputeGraph& g, Node& node) {
                 const int64_t M = rows_of(g);
                 QuantizeRowsParams p{};
                 p.M = static_cast<int32_t>(M), p.K = static_cast<int32_t>(K), p.bits = static_cast<int32_t>(bits);
                 p.row_ints = static_cast<int32_t>(row_ints);
                 node.set_params(p);
                 // A workgroup a row (each loops over rows past 65535).
                 node.groups = {static_cast<uint32_t>(N == 0 ? 0 : std::min<int64_t>(M, 65535)), 1, 1};
               });
  }
  if (gemv) {
    g.add_node(g.current_op(), gemv_shader, gemv_local(g), tensors,
               [update](ComputeGraph& g, Node& node) { update(g, node, Kernel::Gemv); });
  }
  g.add_node(g.current_op(), rows_shader, local, tensors,
             [update](ComputeGraph& g, Node& node) { update(g, node, Kernel::Rows); });
  if (!dq8a) {
    g.add_node(g.current_op(), "qlinear_tiled", kTiledLocal, tensors,
               [update](ComputeGraph& g, Node& node) { update(g, node, Kernel::Tiled); });
  }
  if (coop != nullptr) {
    g.add_node(g.current_op(), coop_shader, {coop->invocations(), 1, 1}, tensors,
               [update](ComputeGraph& g, Node& node) { update(g, node, Kernel::Coop); });
  }
}

// args: packed, scales, zeros?, indices, bits, group_size, embedding_dim, out
void add_quantized_embedding(ComputeGraph& g, const OpArgs& a) {
  const int packed = a.at(0), scales = a.at(1), indices = a.at(3), out = a.back();
  const int zeros = g.is_null(a.at(2)) ? -1 : a.at(2);
  const int64_t bits = g.get_int(a.at(4)), group_size = g.get_int(a.at(5)), dim = g.get_int(a.at(6));
  const int64_t groups = check_quantized_weight(g, packed, scales, zeros, dim, bits, group_size);
  const DType idx = g.tensor(indices).dtype;
  if (idx != DType::Int32 && idx != DType::Int64) g.fail("indices must be int32 or int64");
  if (g.tensor(indices).dim() > 7) g.fail("indices of rank above 7 are not supported");
  const int64_t rows = g.tensor(packed).sizes[0];
  std::vector<int> tensors{out, packed, scales, zeros >= 0 ? zeros : scales, indices};
  const std::string shader = with_fault_slot(g, tensors, "qembedding", "qembedding_nocheck");
  g.add_node(g.current_op(), shader, kLocal1D, tensors, [=](ComputeGraph& g, Node& node) {
    Sizes out_sizes = g.tensor(indices).sizes;
    out_sizes.push_back(dim);
    g.tensor(out).sizes = out_sizes;
    QEmbeddingParams p{};
    const int64_t numel = g.tensor(out).numel();
    p.numel = static_cast<int32_t>(numel), p.dim = static_cast<int32_t>(dim);
    p.rows = static_cast<int32_t>(rows), p.words_per_row = static_cast<int32_t>(words_for(dim, bits));
    p.group_size = static_cast<int32_t>(group_size), p.groups = static_cast<int32_t>(groups);
    p.bits = static_cast<int32_t>(bits), p.has_zeros = zeros >= 0;
    p.index_words = index_words(g.tensor(indices));
    node.set_params(p);
    node.set_groups_1d(numel, kLocal1D[0]);
  });
}


// et_vk.vkd_linear_qw_fused (op_registry.py's entry says what it computes).
// args: x, packed[], scales[], zeros[], biases[], bits, group_size, norm_shape, norm_weight?,
// norm_eps, silu_mul, residual?, outputs (one per weight; one with silu_mul).
// One row: qlinear_gemv_fused.glsl, one dispatch. Else the op's parts as their own ops
// record them (aten.rms_norm into a temporary, et_vk.vkd_linear_qw per weight, then
// qlinear_epilogue.glsl in place), all recorded, each dispatching only where the other does not.
void add_quantized_linear_fused(ComputeGraph& g, const OpArgs& a) {
  constexpr size_t kArgs = 12;
  const int x = a.at(0), bits_id = a.at(5), group_id = a.at(6), norm_shape_id = a.at(7);
  const int norm_weight = g.is_null(a.at(8)) ? -1 : a.at(8);
  const int residual = g.is_null(a.at(11)) ? -1 : a.at(11);
  const std::vector<int> packed = g.get_value_list(a.at(1)).ids, scales = g.get_value_list(a.at(2)).ids;
  const std::vector<int> zeros_ids = g.get_value_list(a.at(3)).ids, bias_ids = g.get_value_list(a.at(4)).ids;
  const int64_t bits = g.get_int(bits_id), group_size = g.get_int(group_id);
  const bool silu_mul = g.get_bool(a.at(10));
  const float eps = static_cast<float>(g.get_double(a.at(9)));
  const size_t count = packed.size();
  if (count < 1 || count > 3) g.fail("1 to 3 weights, not " + std::to_string(count));
  if (scales.size() != count || zeros_ids.size() != count || bias_ids.size() != count) {
    g.fail("one scales, zero points and bias entry per weight");
  }
  if (silu_mul && count != 2) g.fail("silu_mul takes two weights");
  const size_t outputs = silu_mul ? 1 : count;
  if (a.size() != kArgs + outputs) g.fail("expected " + std::to_string(outputs) + " outputs");
  std::vector<int> outs(a.begin() + kArgs, a.end());
  if (residual >= 0 && outputs != 1) g.fail("a residual needs one output");
  require_float(g, x);
  if (g.tensor(x).dim() < 1) g.fail("the input must have rank >= 1");
  const int64_t K = g.tensor(x).sizes.back();
  std::vector<int64_t> N(count);
  int64_t groups = 0;
  for (size_t j = 0; j < count; ++j) {
    const bool has_zeros = !g.is_null(zeros_ids[j]);
    if (has_zeros != !g.is_null(zeros_ids[0])) g.fail("zero points for every weight or none");
    groups = check_quantized_weight(g, packed[j], scales[j], has_zeros ? zeros_ids[j] : -1, K, bits, group_size);
    N[j] = g.tensor(packed[j]).sizes[0];
    if (!g.is_null(bias_ids[j])) {
      require_float(g, bias_ids[j]);
      if (g.tensor(bias_ids[j]).numel() != N[j]) g.fail("bias " + std::to_string(j) + " must have " + std::to_string(N[j]) + " values");
    }
  }
  if (silu_mul && N[0] != N[1]) g.fail("silu_mul needs two weights of one N");
  const bool has_zeros = !g.is_null(zeros_ids[0]);
  const IntList norm_shape = g.get_int_list(norm_shape_id);
  const bool has_norm = !norm_shape.empty();
  if (has_norm && (norm_shape.size() != 1 || norm_shape[0] != K)) {
    g.fail("the norm must be over the last dimension, " + std::to_string(K));
  }
  if (norm_weight >= 0) {
    require_float(g, norm_weight);
    if (!has_norm || g.tensor(norm_weight).numel() != K) g.fail("the norm weight must have " + std::to_string(K) + " values");
  }
  if (residual >= 0) require_float(g, residual);
  for (int out : outs) require_float(g, out);

  const int64_t per = 32 / bits;
  const int64_t words_per_row = words_for(K, bits);
  int32_t group_words_log2 = groups == 1 ? 31 : -1;
  for (int32_t b = 0; groups > 1 && b < 31; ++b) {
    if (group_size / per == (int64_t{1} << b)) group_words_log2 = b;
  }
  // The fused kernel takes the one-row case, as vkd_linear_qw's GEMV does (not with QLINEAR_NO_GEMV).
  const bool gemv = !g.settings().qlinear_no_gemv;
  auto rows_of = [=](ComputeGraph& g) {
    const Tensor& in = g.tensor(x);
    if (in.sizes.back() != K) g.fail("the input's last dim changed from " + std::to_string(K));
    return K == 0 ? int64_t{0} : in.numel() / K;
  };
  auto fused_runs = [=](ComputeGraph& g) { return gemv && rows_of(g) == 1; };

  // One row.
  const bool x4 = K % 4 == 0 && K % per == 0;
  std::string shader = std::string("qlinear_gemv_fused") + (silu_mul ? "_pair" : "") +
                       (bits == 4 ? "_b4" : "_b8") + (x4 ? "_x4" : "");
  int64_t fused_cols = 4;  // NC in qlinear_gemv_fused.glsl
  // Unset: int4 takes c4u2s where the device has subgroup arithmetic, else c4u1; a silu_mul pair
  // at 64 invocations (c4u2s), the others at gemv_local's 128. H100, TinyLlama-shape decode, the
  // 88 fused GEMVs of a profiled step: c4u1 ~945 us, c4u2s 866, c4u2s with the pair at 64 ~840
  // (w1/w3 14.1 us against 15.1 at 128; q/k/v, wo and w2 were slower at 64): the decode step
  // 1.627 -> 1.511 ms (benchmarks/results/decode_gemv_h100_2026-11-25.md).
  std::string shape = g.settings().qlinear_gemv_fused_shape;
  const bool subgroup_default = shape.empty() && bits == 4 && !g.settings().no_subgroup_ops &&
                                g.context().info().subgroup_arithmetic;
  if (subgroup_default) shape = "c4u2s";
  if (!shape.empty() && bits == 4) {
    // "cNuM": N columns per workgroup; "s": the subgroup reduction.
    require_subgroup_shape(g, shape);
    if (shape != "c4u1") shader += "_" + shape;
    fused_cols = std::stoi(shape.substr(1, shape.find('u') - 1));
  }
  LocalSize local = gemv_local(g);
  if (subgroup_default && silu_mul && !g.settings().qlinear_wg) {
    // The pair's 8 sums per invocation took 77 registers on the H100 (c4u2s): at 128 invocations a
    // TinyLlama w1/w3 (1408 workgroups) does not fit the GPU at once; at 64 it does.
    local[0] = std::max<uint32_t>(std::min<uint32_t>(64, local[0]), g.context().info().subgroup_size);
    local[0] = std::min(local[0], g.context().info().max_workgroup_invocations);
  }
  auto at = [&](const std::vector<int>& ids, size_t j, int absent) {
    return j < ids.size() && !g.is_null(ids[j]) ? ids[j] : absent;
  };
  std::vector<int> tensors = {at(outs, 0, outs[0]), at(outs, 1, outs[0]), at(outs, 2, outs[0]), x,
                              norm_weight >= 0 ? norm_weight : x, residual >= 0 ? residual : x};
  for (const std::vector<int>* list : {&packed, &scales, &zeros_ids, &bias_ids}) {
    const int absent = list == &zeros_ids || list == &bias_ids ? scales[0] : (*list)[0];
    for (size_t j = 0; j < 3; ++j) tensors.push_back(at(*list, j, list == &zeros_ids && !has_zeros ? scales[0] : absent));
  }
  auto set_out_sizes = [=](ComputeGraph& g) {
    for (size_t j = 0; j < outs.size(); ++j) {
      Sizes sizes = g.tensor(x).sizes;
      sizes.back() = N[j];
      g.tensor(outs[j]).sizes = sizes;
    }
    if (residual >= 0 && g.tensor(residual).sizes != g.tensor(outs[0]).sizes) {
      g.fail("the residual " + sizes_str(g.tensor(residual).sizes) + " must have the output's sizes " +
             sizes_str(g.tensor(outs[0]).sizes));
    }
  };
  std::vector<int64_t> wg_counts(3, 0);
  for (size_t j = 0; j < (silu_mul ? 1 : count); ++j) wg_counts[j] = (N[j] + fused_cols - 1) / fused_cols;
  const int64_t total_groups = wg_counts[0] + wg_counts[1] + wg_counts[2];
  for (size_t j = 0; j < count; ++j) {
    // The shader indexes with int32.
    if (N[j] * std::max<int64_t>(words_per_row, groups) > INT32_MAX) {
      g.fail("too large for 32-bit indexing: " + std::to_string(N[j]) + " columns of " + std::to_string(K));
    }
  }
  g.add_node(g.current_op(), shader, local, tensors, [=](ComputeGraph& g, Node& node) {
    set_out_sizes(g);
    QLinearFusedParams p{};
    p.K = static_cast<int32_t>(K), p.words_per_row = static_cast<int32_t>(words_per_row);
    p.group_size = static_cast<int32_t>(group_size), p.groups = static_cast<int32_t>(groups);
    p.group_words_log2 = group_words_log2, p.has_zeros = has_zeros;
    p.has_norm = has_norm, p.has_gamma = norm_weight >= 0, p.has_residual = residual >= 0;
    p.has_bias0 = !g.is_null(bias_ids[0]), p.has_bias1 = count > 1 && !g.is_null(bias_ids[1]);
    p.has_bias2 = count > 2 && !g.is_null(bias_ids[2]);
    p.N0 = static_cast<int32_t>(N[0]), p.N1 = count > 1 ? static_cast<int32_t>(N[1]) : 0;
    p.N2 = count > 2 ? static_cast<int32_t>(N[2]) : 0;
    p.wg_start1 = static_cast<int32_t>(wg_counts[0]), p.wg_start2 = static_cast<int32_t>(wg_counts[0] + wg_counts[1]);
    p.eps = eps;
    p.total_groups = static_cast<int32_t>(total_groups);
    node.set_params(p);
    if (fused_runs(g) && K > 0) {
      node.set_groups_1d(total_groups, 1);  // past 65535 workgroups in y too
    } else {
      node.groups = {0, 0, 0};
    }
  });

  // Temporaries in the graph's scratch storage: the normalized input at its start, the second
  // linear's output of a pair at an aligned offset after it (bound as a window).
  const Sizes x_max = g.tensor(x).max_sizes;
  Sizes b_max = x_max;
  b_max.back() = N[0];
  const VkDeviceSize align = std::max<VkDeviceSize>(g.context().info().min_storage_offset_alignment, 16);
  const VkDeviceSize b_offset = has_norm ? (numel_of(x_max) * 4 + align - 1) / align * align : 0;
  const VkDeviceSize b_bytes = static_cast<VkDeviceSize>(numel_of(b_max)) * 4;
  const bool b_window = has_norm && silu_mul && b_bytes > 0;
  int xn = -1, b = -1;
  // The scratch storage is as large as its largest tensor: one that spans both.
  if (b_window) g.add_scratch_tensor(DType::Float32, {static_cast<int64_t>((b_offset + b_bytes) / 4)});
  if (has_norm) xn = g.add_scratch_tensor(DType::Float32, x_max);
  if (silu_mul) b = g.add_scratch_tensor(DType::Float32, b_max);
  const int input = has_norm ? xn : x;
  const int scratch = xn >= 0 ? g.tensor(xn).storage : b >= 0 ? g.tensor(b).storage : -1;
  // More rows: the parts as their ops record them, quiet while the fused kernel runs.
  auto record = [&](const std::string& op, std::vector<int> args, int window_binding, VkDeviceSize offset,
                    VkDeviceSize range) {
    const OpBuildFn* build = find_op(op);
    if (build == nullptr) g.fail("internal error: no op " + op);
    const size_t first = g.nodes().size();
    (*build)(g, OpArgs(std::move(args)));
    for (size_t i = first; i < g.nodes().size(); ++i) {
      Node& node = g.node(i);
      if (window_binding >= 0) node.set_window(window_binding, offset, range);
      // The temporaries live in the graph's one scratch storage: a part with scratch of its
      // own would overwrite them.
      for (int id : node.tensors) {
        if (scratch >= 0 && g.tensor(id).storage == scratch && id != xn && id != b) {
          g.fail("internal error: " + op + " takes scratch storage, which holds this op's temporaries");
        }
      }
      UpdateFn inner = std::move(node.update);
      node.update = [inner, fused_runs](ComputeGraph& g, Node& node) {
        inner(g, node);
        if (fused_runs(g)) node.groups = {0, 0, 0};
      };
      node.update(g, node);
    }
  };
  if (has_norm) record("aten.rms_norm.default", {x, norm_shape_id, a.at(8), a.at(9), xn}, -1, 0, 0);
  for (size_t j = 0; j < count; ++j) {
    const bool to_b = silu_mul && j == 1;
    record("et_vk.vkd_linear_qw.default",
           {input, packed[j], scales[j], zeros_ids[j], bias_ids[j], bits_id, group_id, to_b ? b : outs[j]},
           to_b && b_window ? 0 : -1, b_offset, b_bytes);
  }
  if (silu_mul || residual >= 0) {
    const int out = outs[0];
    Node& node = g.add_node(g.current_op(), "qlinear_epilogue", kLocal1D,
                            {out, silu_mul ? b : out, residual >= 0 ? residual : out},
                            [=](ComputeGraph& g, Node& node) {
                              set_out_sizes(g);
                              const int64_t numel = g.tensor(out).numel();
                              node.set_params(QLinearEpilogueParams{static_cast<int32_t>(numel), silu_mul, residual >= 0});
                              if (fused_runs(g)) {
                                node.groups = {0, 0, 0};
                              } else {
                                node.set_groups_1d(numel, kLocal1D[0]);
                              }
                            });
    if (b_window) node.set_window(1, b_offset, b_bytes);
  }
}
}  // namespace

VKD_REGISTER_OPS(register_quantized_linear_ops) {
  register_op("et_vk.vkd_linear_qw.default", [](ComputeGraph& g, const OpArgs& a) {
    add_quantized_linear(g, a, false);
  });
  register_op("et_vk.vkd_linear_dq8a_qw.default", [](ComputeGraph& g, const OpArgs& a) {
    add_quantized_linear(g, a, true);
  });
  register_op("et_vk.vkd_embedding_qw.default", [](ComputeGraph& g, const OpArgs& a) {
    add_quantized_embedding(g, a);
  });
  register_op("et_vk.vkd_linear_qw_fused.default", add_quantized_linear_fused);
}

}  // namespace vkd
