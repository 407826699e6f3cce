// State updated in place: index_put into a state tensor (a KV cache that the
// delegate owns, schema.fbs Tensor.state). The positions are data (an index
// tensor), never a size, so a decode step changes no size and replays.
#include "kv_cache.h"
#include "op_utils.h"
#include "shader_params.h"  // IndexPutParams, RopeKvUpdateParams: glsl/index_put.glsl, glsl/rope_kv_update.glsl

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

// et_vk.vkd_rope_kv_update(q, k, v, cos, sin, k_cache, v_cache, input_pos) -> (rope(q), k_cache, v_cache):
// one dispatch of add_rope_kv_node. Programs export it no longer (backends/rope_fusion.py makes
// et_vk.vkd_sdpa_rope_kv, which takes the attention too); those exported before still load.
void add_rope_kv_update(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 11) g.fail("expected 8 arguments and 3 outputs");
  add_rope_kv_node(g, {a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]});
}

}  // namespace

void require_positions(ComputeGraph& g, int pos) {
  const DType type = g.tensor(pos).dtype;
  if (type != DType::Int32 && type != DType::Int64) {
    g.fail(std::string("input_pos must be int32 or int64, not ") + dtype_name(type));
  }
}

// Binding the outputs that alias the caches declares the caches written, so the attention that
// reads them next waits for this dispatch.
void add_rope_kv_node(ComputeGraph& g, const RopeKvTensors& x, std::function<bool(int64_t)> active) {
  const int q = x.q, k = x.k, v = x.v, cos = x.cos, sin = x.sin, k_cache = x.k_cache, v_cache = x.v_cache;
  const int pos = x.pos, q_out = x.q_out, k_out = x.k_out, v_out = x.v_out;
  require_float_same(g, {q, k, v, cos, sin, k_cache, v_cache, q_out, k_out, v_out});
  require_positions(g, pos);
  for (const auto& [out, cache] : {std::pair{k_out, k_cache}, std::pair{v_out, v_cache}}) {
    const Tensor& t = g.tensor(out);
    if (!(t.is_view && t.view_of == cache)) g.alias_state(out, cache);  // (an attention op's may be already)
  }
  std::vector<int> tensors{q_out, k_out, v_out, q, k, v, cos, sin, pos};
  const std::string shader = with_fault_slot(g, tensors, "rope_kv_update", "rope_kv_update_nocheck");
  g.add_node(g.current_op(), variant(g, shader, q), kLocal1D, tensors, [=](ComputeGraph& g, Node& node) {
    const Sizes& qs = g.tensor(q).sizes;
    const Sizes& ks = g.tensor(k).sizes;
    const Sizes& cs = g.tensor(k_cache).sizes;
    const Sizes& ts = g.tensor(cos).sizes;
    const Sizes& ps = g.tensor(pos).sizes;
    const bool fits = qs.size() == 4 && ks.size() == 4 && cs.size() == 4 && ts.size() == 3 && ps.size() == 1 &&
                      g.tensor(v).sizes == ks && g.tensor(v_cache).sizes == cs && g.tensor(sin).sizes == ts &&
                      ks[0] == qs[0] && ks[1] == qs[1] && ks[3] == qs[3] && cs[0] == qs[0] && cs[2] == ks[2] &&
                      cs[3] == qs[3] && ts[0] == qs[1] && ts[1] == 1 && ts[2] == qs[3] && ps[0] == qs[1] &&
                      qs[3] % 2 == 0;
    if (!fits) {
      g.fail("q " + sizes_str(qs) + " [B, T, H, D], k and v " + sizes_str(ks) + " [B, T, KVH, D], cos and sin " +
             sizes_str(ts) + " [T, 1, D], caches " + sizes_str(cs) + " [B, S, KVH, D] and input_pos " +
             sizes_str(ps) + " [T] do not fit (D even)");
    }
    g.tensor(q_out).sizes = qs;
    g.tensor(k_out).sizes = cs;
    g.tensor(v_out).sizes = cs;
    RopeKvUpdateParams p{};
    const int64_t pairs = qs[0] * qs[1] * (qs[2] + 2 * ks[2]) * (qs[3] / 2);
    p.pairs = static_cast<int32_t>(pairs);
    p.half_dim = static_cast<int32_t>(qs[3] / 2);
    p.heads = static_cast<int32_t>(qs[2]);
    p.kv_heads = static_cast<int32_t>(ks[2]);
    p.queries = static_cast<int32_t>(qs[1]);
    p.cache_len = static_cast<int32_t>(cs[1]);
    p.index_words = index_words(g.tensor(pos));
    node.set_params(p);
    if (active && !active(qs[1])) {
      node.groups = {0, 0, 0};
    } else {
      node.set_groups_1d(pairs, kLocal1D[0]);
    }
  });
}

VKD_REGISTER_OPS(register_kv_cache_ops) {
  register_op("aten.index_put.default", add_index_put);
  register_op("et_vk.vkd_rope_kv_update.default", add_rope_kv_update);
}

}  // namespace vkd
