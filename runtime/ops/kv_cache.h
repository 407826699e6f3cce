// What runtime/ops/kv_cache.cpp lends the attention ops (attention.cpp's et_vk.vkd_sdpa_rope_kv).
#pragma once

#include <functional>

#include "op_registry.h"

namespace vkd {

// The tensors of a rope + cache-write dispatch (glsl/rope_kv_update.glsl): q [B, T, H, D], k and v
// [B, T, KVH, D], cos and sin [T, 1, D], caches [B, S, KVH, D] (state), input_pos [T]; q_out gets
// rope(q), k_out and v_out alias the caches (written in place at rows input_pos[t]).
struct RopeKvTensors {
  int q, k, v, cos, sin, k_cache, v_cache, pos, q_out, k_out, v_out;
};

// Fails unless tensor `pos` (an op's input_pos) is int32 or int64.
void require_positions(ComputeGraph& g, int pos);

// Checks the tensors' dtypes, aliases the outputs to the caches (where the caller has not) and adds the dispatch; it runs for
// the query counts T that `active` accepts (zero workgroups otherwise; all when empty).
void add_rope_kv_node(ComputeGraph& g, const RopeKvTensors& x, std::function<bool(int64_t)> active = {});

}  // namespace vkd
