// Helpers shared by the op build functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "op_registry.h"

namespace vkd {

constexpr LocalSize kLocal1D{64, 1, 1};

// A 1-D local size of `want` (a power of two), halved until it is within the device's
// workgroup limits: VKDELEGATE_DEVICE_PROFILE may lower them below a kernel's default
// (Vulkan's minimum is 128 invocations). The kernels taking it read gl_WorkGroupSize.
inline LocalSize local_1d_within(const DeviceInfo& device, uint32_t want) {
  while (want > 1 && !device.workgroup_fits(want, 1, 1)) want /= 2;
  return {want, 1, 1};
}

constexpr bool same_name(const char* a, const char* b) { return *a == *b && (*a == 0 || same_name(a + 1, b + 1)); }
// The row of a variant table (glsl/*_variants.py, through its generated header) named `name`.
// Past the end does not compile in a constant expression: a name the table lacks is a build error.
template <typename Variant, size_t N>
constexpr const Variant& variant_named(const Variant (&table)[N], const char* name, size_t i = 0) {
  return same_name(table[i].name, name) ? table[i] : variant_named(table, name, i + 1);
}

inline void require_float(ComputeGraph& g, int id) {
  const Tensor& t = g.tensor(id);
  if (t.dtype != DType::Float32) {
    g.fail(std::string("tensors of dtype ") + dtype_name(t.dtype) +
           " are not supported here (float32 only)");
  }
}

// The shader variant of `base` for the storage type of tensor `id`. A shader
// with `// subgroup-variants` (glsl/workgroup_reduce.glslh) gives NAME_sg_T, with
// subgroup reductions, where the device has subgroup arithmetic in compute
// shaders, unless the graph's settings say NO_SUBGROUP_OPS (to compare, or to test the
// shared-memory reductions on such a device). op_utils.cpp.
std::string variant(ComputeGraph& g, const std::string& base, int id);
// The same choice for a shader without dtype variants: NAME_sg or NAME.
std::string subgroup_variant(ComputeGraph& g, const std::string& name);

// Cooperative-matrix kernels: `base`, `base`_emu or "" for this graph's device and
// settings (matmul_choice.h: coopmat_f16_base).
std::string coopmat_f16_base(ComputeGraph& g, const std::string& base);

// GPU-side checks: appends the node's fault slot (ComputeGraph::add_fault_slot)
// to `tensors` and returns `checked`, the shader that binds it; where the
// graph's checks are off, appends nothing and returns `unchecked`.
inline std::string with_fault_slot(ComputeGraph& g, std::vector<int>& tensors, const std::string& checked,
                                   const std::string& unchecked) {
  const int slot = g.add_fault_slot();
  if (slot < 0) return unchecked;
  tensors.push_back(slot);
  return checked;
}

inline void require_same_dtype(ComputeGraph& g, std::initializer_list<int> ids) {
  const DType first = g.tensor(*ids.begin()).dtype;
  for (int id : ids) {
    if (g.tensor(id).dtype != first) {
      g.fail(std::string("mixed dtypes ") + dtype_name(first) + " and " +
             dtype_name(g.tensor(id).dtype) + " are not supported");
    }
  }
}

// Float tensors of one dtype, float32 or float16 (for kernels with f16 variants, picked
// with variant()); ids < 0 (absent) are skipped.
inline void require_float_same(ComputeGraph& g, std::initializer_list<int> ids) {
  int first = -1;
  for (int id : ids) {
    if (id < 0) continue;
    if (!is_float_dtype(g.tensor(id).dtype)) {
      g.fail(std::string("tensors of dtype ") + dtype_name(g.tensor(id).dtype) +
             " are not supported here (float32 and float16 only)");
    }
    if (first < 0) first = id;
    if (g.tensor(id).dtype != g.tensor(first).dtype) {
      g.fail(std::string("mixed dtypes ") + dtype_name(g.tensor(first).dtype) + " and " +
             dtype_name(g.tensor(id).dtype) + " are not supported");
    }
  }
}

inline int64_t normalize_dim(ComputeGraph& g, int64_t dim, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r) {
    g.fail("dim " + std::to_string(dim) + " is out of range for rank " + std::to_string(rank));
  }
  return dim < 0 ? dim + r : dim;
}

// An int argument that sizes arithmetic multiplies or adds (kernel, stride, padding,
// dilation, pad widths): the shaders take it as int32, and a corrupted blob's int64
// would overflow that arithmetic. Fails outside int32.
inline int64_t int32_arg(ComputeGraph& g, int64_t v, const char* what) {
  if (v < INT32_MIN || v > INT32_MAX) g.fail(std::string(what) + " " + std::to_string(v) + " is outside int32");
  return v;
}

// An int list argument for (h, w) of int32 values (kernel, stride, padding, dilation,
// output size): one value serves both dims, two are (h, w); an empty list gives
// `empty_as` where the op allows it, else fails like any other length.
using IntPair = std::pair<int64_t, int64_t>;
inline IntPair pair_arg(ComputeGraph& g, int id, const char* what, std::optional<IntPair> empty_as = std::nullopt) {
  const IntList& v = g.get_int_list(id);
  for (int64_t x : v) int32_arg(g, x, what);
  if (v.empty() && empty_as) return *empty_as;
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) g.fail(std::string(what) + " " + sizes_str(v) + " must have 1 or 2 values");
  return {v[0], v[1]};
}

// An integer parameter as two int32 words, low and high (glsl/common.glslh's INT_PARAM).
inline void split_int(int64_t v, int32_t& lo, int32_t& hi) {
  lo = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
  hi = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v) >> 32));
}

// Fails where tensor `id`'s integer storage cannot hold `x` (int32 storage: outside int32);
// `what` names x.
inline void check_int_storage(ComputeGraph& g, int id, int64_t x, const std::string& what) {
  const Tensor& t = g.tensor(id);
  if (t.storage_type == StorageType::I64 || (x >= INT32_MIN && x <= INT32_MAX)) return;
  g.fail(what + " " + std::to_string(x) +
         (t.dtype == DType::Int64 ? " does not fit the int32 the GPU stores int64 tensors as (this device has no "
                                    "shaderInt64, or VKDELEGATE_INT64_STORAGE=32)"
                                  : " does not fit in int32"));
}

// Words per element of an index tensor as the shaders read it (glsl/common.glslh's
// READ_INDEX): 2 for int64 storage, else 1.
inline int32_t index_words(const Tensor& t) { return t.storage_type == StorageType::I64 ? 2 : 1; }

// Writes up to 8 sizes/strides into an int32[8] parameter field.
inline void pack8(int32_t dst[8], const Sizes& v) {
  for (int i = 0; i < 8; ++i) dst[i] = i < static_cast<int>(v.size()) ? static_cast<int32_t>(v[i]) : 1;
}

// Strides of `t` viewed with `rank` dims aligned to the right of the output,
// zero where `t` is broadcast (its size is 1 or the dim is missing).
inline Sizes broadcast_strides(const Tensor& t, const Sizes& out_sizes) {
  const size_t rank = out_sizes.size();
  const Sizes st = t.strides();
  Sizes r(rank, 0);
  const size_t off = rank - t.sizes.size();
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    r[off + d] = t.sizes[d] == 1 ? 0 : st[d];
  }
  return r;
}

inline Sizes broadcast_sizes(ComputeGraph& g, const Sizes& a, const Sizes& b) {
  const size_t rank = std::max(a.size(), b.size());
  Sizes out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      g.fail("sizes " + sizes_str(a) + " and " + sizes_str(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace vkd
