"""The `et_vk` op namespace as vkdelegate defines it.

ExecuTorch's own Vulkan backend owns `et_vk` with a DEF library
(`executorch.backends.vulkan.custom_ops_lib`). Ours is a FRAGMENT of the same
namespace, and every op we define starts with `vkd_`, so both import in one
process, in either order, without a name clash.
"""
from typing import Callable, Tuple

import torch

NAMESPACE = "et_vk"
PREFIX = "vkd_"

_LIB = torch.library.Library(NAMESPACE, "FRAGMENT")
_DEFINED = {}


def define(schema: str, reference: Callable, fake: Callable = None):
    """Defines `et_vk::<name>(...)` from `schema` (name first, starting with `vkd_`).

    `reference` is the eager implementation in plain torch; `fake` computes
    output metadata for export (defaults to running `reference`, which works when it only
    uses shape-polymorphic torch ops). Returns the op overload packet,
    `torch.ops.et_vk.<name>`. Defining the same name twice returns the first.
    """
    name = schema.split("(", 1)[0].strip()
    if not name.startswith(PREFIX):
        raise ValueError(f"vkdelegate's et_vk ops start with {PREFIX!r}, got {name!r}")
    if name in _DEFINED:
        return _DEFINED[name]
    _LIB.define(schema)
    _LIB.impl(name, reference, "CompositeExplicitAutograd")
    torch.library.register_fake(f"{NAMESPACE}::{name}", fake or reference, lib=_LIB)
    op = getattr(getattr(torch.ops, NAMESPACE), name)
    _DEFINED[name] = op
    return op


def defined_ops():
    """Names (`et_vk.vkd_...`) of the ops defined so far."""
    return sorted(f"{NAMESPACE}.{name}" for name in _DEFINED)


# ----------------------------------------------------------------------------
# Ops outside the quantized flows


def _conv2d_clamp_reference(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
                            min, max, residual=None):
    out = torch.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    if residual is not None:
        out = out + residual
    return torch.clamp(out, min, max)


# A convolution, plus an optional residual of the output's sizes, then clamp to [min, max]
# (inf for no bound); backends/fuse_conv.py makes it from conv [+ add] + relu / hardtanh / clamp.
conv2d_clamp = define(
    "vkd_conv2d_clamp(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
    "int[] dilation, bool transposed, int[] output_padding, int groups, float min, float max, "
    "Tensor? residual=None) -> Tensor",
    _conv2d_clamp_reference)


_ACTIVATIONS = {
    "none": lambda x: x,
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu,
}
LINEAR_ACTIVATIONS = tuple(_ACTIVATIONS)


def _linear_act_reference(input, weight, bias, activation, residual=None):
    if activation not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}: one of {LINEAR_ACTIVATIONS}")
    out = _ACTIVATIONS[activation](torch.nn.functional.linear(input, weight, bias))
    if residual is None:
        return out
    if residual.shape != out.shape or residual.dtype != out.dtype:
        raise ValueError(f"residual of {tuple(residual.shape)} {residual.dtype} does not match the output's "
                         f"{tuple(out.shape)} {out.dtype}")
    return residual + out


# A float linear with an activation after it (none, relu, gelu, gelu_tanh), then an optional residual
# of the output's sizes and dtype added (residual + act(linear)), all in the matrix product's epilogue;
# backends/linear_act_fusion.py makes it from linear [-> relu / gelu] [-> + residual].
linear_act = define("vkd_linear_act(Tensor input, Tensor weight, Tensor? bias, str activation, "
                    "Tensor? residual=None) -> Tensor",
                    _linear_act_reference)


def _ln_linear_reference(input, ln_weight, ln_bias, eps, weight, bias, activation):
    normed = torch.nn.functional.layer_norm(input, (input.shape[-1],), ln_weight, ln_bias, eps)
    return _linear_act_reference(normed, weight, bias, activation)


# A layer norm over the input's last dim, then a linear with an activation (none, relu, gelu,
# gelu_tanh) after it; the cooperative-matrix kernels normalize the input's rows as they fetch them.
# backends/ln_linear_fusion.py makes it from native_layer_norm -> linear | vkd_linear_act (no residual).
ln_linear = define("vkd_ln_linear(Tensor input, Tensor? ln_weight, Tensor? ln_bias, float eps, Tensor weight, "
                   "Tensor? bias, str activation) -> Tensor",
                   _ln_linear_reference)


def _rope_reference(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def rope_table_fits(x_shape: Tuple[int, ...], table_shape: Tuple[int, ...]) -> bool:
    """cos/sin of shape table_shape serve x: [T, D] for x [..., T, D], or [T, 1, D] for x [..., T, H, D]."""
    if len(table_shape) == 2:
        return len(x_shape) >= 2 and table_shape == x_shape[-2:]
    if len(table_shape) == 3:
        return len(x_shape) >= 3 and table_shape == (x_shape[-3], 1, x_shape[-1])
    return False


# Rotary position embedding, rotate-half layout: x [..., T, D] with cos and sin [T, D], or
# x [..., T, H, D] with cos and sin [T, 1, D] (one row per position, shared by the heads);
# backends/rope_fusion.py makes it from the mul/split/neg/cat/mul/add that
# `x * cos + rotate_half(x) * sin` exports to.
rope = define("vkd_rope(Tensor x, Tensor cos, Tensor sin) -> Tensor", _rope_reference)


def _sdpa_kv_cache_reference(q, k_cache, v_cache, input_pos, scale=None):
    cache_len = k_cache.shape[1]
    if bool(((input_pos < 0) | (input_pos >= cache_len)).any()):
        raise IndexError(f"input_pos {input_pos.tolist()} out of range for a cache of {cache_len} positions")
    mask = torch.arange(cache_len, device=q.device)[None, :] <= input_pos[:, None]
    out = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2), k_cache.transpose(1, 2), v_cache.transpose(1, 2), attn_mask=mask, scale=scale,
        enable_gqa=True)
    return out.transpose(1, 2).contiguous()


def _sdpa_kv_cache_fake(q, k_cache, v_cache, input_pos, scale=None):
    return q.new_empty(q.shape[:-1] + v_cache.shape[-1:])


# Attention over a KV cache at positions: q [B, T, H, D], k_cache [B, S, KVH, D], v_cache
# [B, S, KVH, Dv], input_pos [T] (int, data); query t sees the cache entries 0..input_pos[t]
# (H a multiple of KVH: grouped-query). Out [B, T, H, Dv]. The layouts are the ones a Llama
# has before and after its head transposes, so none is needed. backends/attention_fusion.py
# makes it from sdpa over transposed caches with the mask `arange(S) <= input_pos[:, None]`.
sdpa_kv_cache = define(
    "vkd_sdpa_kv_cache(Tensor q, Tensor k_cache, Tensor v_cache, Tensor input_pos, float? scale=None) -> Tensor",
    _sdpa_kv_cache_reference, _sdpa_kv_cache_fake)


def _sdpa_qkv_reference(qkv, heads, is_causal=False, scale=None):
    batch, length, width = qkv.shape
    q, k, v = qkv.reshape(batch, length, 3, heads, width // (3 * heads)).permute(2, 0, 3, 1, 4)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=scale)
    return out.transpose(1, 2).contiguous()


def _sdpa_qkv_fake(qkv, heads, is_causal=False, scale=None):
    batch, length, width = qkv.shape
    return qkv.new_empty(batch, length, heads, width // (3 * heads))


# Attention of one packed q|k|v projection: qkv [B, T, 3 * H * D] (q, k and v side by side, each
# [H, D] per token, as a ViT's qkv linear makes them) -> out [B, T, H, D], the layout the heads are
# merged from. The kernel reads q, k and v in place and writes out through strides: no head
# transposes. backends/packed_attention.py makes it from reshape -> permute -> select x3 -> sdpa ->
# transpose.
sdpa_qkv = define("vkd_sdpa_qkv(Tensor qkv, int heads, bool is_causal=False, float? scale=None) -> Tensor",
                  _sdpa_qkv_reference, _sdpa_qkv_fake)


def _sdpa_bthd_reference(q, k, v, is_causal=False, scale=None):
    out = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=is_causal, scale=scale,
        enable_gqa=q.shape[2] != k.shape[2])
    return out.transpose(1, 2).contiguous()


def _sdpa_bthd_fake(q, k, v, is_causal=False, scale=None):
    return q.new_empty(q.shape[0], q.shape[1], q.shape[2], v.shape[3])


# Attention over heads in the layout the projections make them: q [B, T, H, E], k [B, S, KVH, E], v [B, S,
# KVH, Ev] (H a multiple of KVH) -> out [B, T, H, Ev], the layout the heads are merged from. The kernel
# reads and writes through strides: no head transposes. backends/packed_attention.py makes it from
# transpose x3 -> sdpa -> transpose (a Llama block's attention after its rope).
sdpa_bthd = define("vkd_sdpa_bthd(Tensor q, Tensor k, Tensor v, bool is_causal=False, float? scale=None) -> Tensor",
                   _sdpa_bthd_reference, _sdpa_bthd_fake)


def _check_positions(input_pos, cache_len):
    if bool(((input_pos < 0) | (input_pos >= cache_len)).any()):
        raise IndexError(f"input_pos {input_pos.tolist()} out of range for a cache of {cache_len} positions")


def _rope_kv_update_reference(q, k, v, cos, sin, k_cache, v_cache, input_pos):
    _check_positions(input_pos, k_cache.shape[1])
    rows = input_pos.long()  # index_copy_ takes int64 only
    k_new = k_cache.clone().index_copy_(1, rows, _rope_reference(k, cos, sin))
    v_new = v_cache.clone().index_copy_(1, rows, v)
    return _rope_reference(q, cos, sin), k_new, v_new


def _rope_kv_update_fake(q, k, v, cos, sin, k_cache, v_cache, input_pos):
    return torch.empty_like(q), torch.empty_like(k_cache), torch.empty_like(v_cache)


# Rotary embedding of q and k and the KV-cache writes of one attention layer: q [B, T, H, D],
# k and v [B, T, KVH, D], cos and sin [T, 1, D], caches [B, S, KVH, D], input_pos [T] (int,
# data; each in [0, S)). Returns (rope(q), k_cache with rope(k) written at the positions along
# dim 1, v_cache with v written there). The runtime writes the caches in place (they are delegate
# state); backends/rope_fusion.py makes it from two vkd_rope and two index_put feeding
# vkd_sdpa_kv_cache.
rope_kv_update = define(
    "vkd_rope_kv_update(Tensor q, Tensor k, Tensor v, Tensor cos, Tensor sin, Tensor k_cache, Tensor v_cache, "
    "Tensor input_pos) -> (Tensor, Tensor, Tensor)",
    _rope_kv_update_reference, _rope_kv_update_fake)


def _sdpa_rope_kv_reference(q, k, v, cos, sin, k_cache, v_cache, input_pos, scale=None):
    q_rot, k_new, v_new = _rope_kv_update_reference(q, k, v, cos, sin, k_cache, v_cache, input_pos)
    return _sdpa_kv_cache_reference(q_rot, k_new, v_new, input_pos, scale), k_new, v_new


def _sdpa_rope_kv_fake(q, k, v, cos, sin, k_cache, v_cache, input_pos, scale=None):
    return _sdpa_kv_cache_fake(q, k_cache, v_cache, input_pos), torch.empty_like(k_cache), torch.empty_like(v_cache)


# One attention layer's step over its KV cache: vkd_rope_kv_update, then vkd_sdpa_kv_cache over the
# updated caches (same shapes and positions). Returns (attention out [B, T, H, D], k_cache with
# rope(k) written at the positions, v_cache with v written there); the caches are written in place.
# At decode the runtime ropes and writes the cache rows inside the attention's own kernel (no
# dispatch of their own). backends/rope_fusion.py makes it from the two vkd_rope and two index_put
# feeding vkd_sdpa_kv_cache.
sdpa_rope_kv = define(
    "vkd_sdpa_rope_kv(Tensor q, Tensor k, Tensor v, Tensor cos, Tensor sin, Tensor k_cache, Tensor v_cache, "
    "Tensor input_pos, float? scale=None) -> (Tensor, Tensor, Tensor)",
    _sdpa_rope_kv_reference, _sdpa_rope_kv_fake)
