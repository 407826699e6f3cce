"""The `et_vk` op namespace as vkdelegate defines it.

ExecuTorch's own Vulkan backend owns `et_vk` with a DEF library
(`executorch.backends.vulkan.custom_ops_lib`). Ours is a FRAGMENT of the same
namespace, and every op we define starts with `vkd_`, so both import in one
process, in either order, without a name clash.
"""
from typing import Callable

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


def _rope_reference(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


# Rotary position embedding, rotate-half layout: x [..., T, D] with cos and sin [T, D]
# (one row per position); backends/rope_fusion.py makes it from the mul/split/neg/cat/mul/add
# that `x * cos + rotate_half(x) * sin` exports to.
rope = define("vkd_rope(Tensor x, Tensor cos, Tensor sin) -> Tensor", _rope_reference)
