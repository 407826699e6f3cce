// State updated in place: index_put into a state tensor (a KV cache that the
// delegate owns, schema.fbs Tensor.state). The positions are data (an index
// tensor), never a size, so a decode step changes no size and replays.
#include "op_utils.h"
#include "shader_params.h"  // IndexPutParams: glsl/index_put.glsl

namespace vkd {

namespace {

// index_put(self, indices, values, accumulate=False): indices holds one 1-D
// int32/int64 tensor, at dim d, and None for the dims before it; values has
// self's sizes with dim d as long as the index. Writes into self's storage.
void add_index_put(ComputeGraph& g, const OpArgs& a) {
  const int self = a.at(0), values = a.at(2), out = a.back();
  if (g.get_bool(a.at(3))) g.fail("accumulate=True is not supported");
  const ValueList& indices = g.get_value_list(a.at(1));
  int index = -1;
  int64_t dim = -1;
  for (size_t k = 0; k < indices.ids.size(); ++k) {
    if (g.is_null(indices.ids[k])) continue;
    if (index >= 0) g.fail("one index tensor is supported (the others None)");
    index = indices.ids[k];
    dim = static_cast<int64_t>(k);
  }
  if (index < 0) g.fail("an index tensor is needed");
  const DType index_type = g.tensor(index).dtype;
  if (index_type != DType::Int32 && index_type != DType::Int64) {
    g.fail(std::string("the index must be int32 or int64, not ") + dtype_name(index_type));
  }
  if (g.tensor(index).dim() != 1) g.fail("the index must be 1-D");
  require_same_dtype(g, {self, values, out});
  const int64_t rank = g.tensor(self).dim();
  if (dim >= rank) g.fail("more indices than dims");
  if (g.tensor(values).dim() != rank) g.fail("values must have the rank of self (no broadcasting)");
  g.alias_state(out, self);
  std::vector<int> tensors{out, values, index};
  const std::string shader =
      with_fault_slot(g, tensors, "index_put", "index_put_nocheck") + "_" + storage_suffix(g.tensor(out).storage_type);
  g.add_node(g.current_op(), shader, kLocal1D, tensors, [=](ComputeGraph& g, Node& node) {
    const Tensor& s = g.tensor(self);
    const Tensor& v = g.tensor(values);
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t want = d == dim ? g.tensor(index).numel() : s.sizes[d];
      if (v.sizes[d] != want) {
        g.fail("values " + sizes_str(v.sizes) + " do not fit self " + sizes_str(s.sizes) + " with " +
               std::to_string(g.tensor(index).numel()) + " indices along dim " + std::to_string(dim));
      }
    }
    g.tensor(out).sizes = s.sizes;
    IndexPutParams p{};
    pack8(p.values_sizes, v.sizes);
    pack8(p.out_strides, s.strides());
    p.numel = static_cast<int32_t>(v.numel());
    p.rank = static_cast<int32_t>(rank);
    p.dim = static_cast<int32_t>(dim);
    p.dim_size = static_cast<int32_t>(s.sizes[dim]);
    p.index_words = index_words(g.tensor(index));
    node.set_params(p);
    node.set_groups_1d(v.numel(), kLocal1D[0]);
  });
}

}  // namespace

VKD_REGISTER_OPS(register_kv_cache_ops) {
  register_op("aten.index_put.default", add_index_put);
}

}  // namespace vkd
