"""torchao's quantized linear and embedding as fused `et_vk` ops.

torchao (`quantize_` + `unwrap_tensor_subclass`) exports a quantized weight as
`torchao.dequantize_affine(int8 weight, block_size, scales, zero_points, ...)`
feeding `aten.linear` or `aten.embedding`; with `Int8DynamicActivationIntxWeightConfig`
the linear's input is also `dequantize_affine(quantize_affine(x, choose_qparams_affine(x)))`
(int8, asymmetric, one scale per token). The fusion pass (backends/torchao_fusion.py)
replaces each such pattern with one op below; the registry accepts the pattern's nodes
only where `match_*` here says the pass will fuse them, so the two never disagree.

Weights are packed along K into int32 words, `32 // bits` values per word (two's
complement, lowest bits first; each row padded to whole words), and stay packed
on the GPU; dequantization, `(q - zero) * scale`, happens in the shader.
"""
import operator
from dataclasses import dataclass
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch.fx import Node

from ..fx_nodes import arg_at, fake_tensor, op_name
from .library import define

# ----------------------------------------------------------------------------
# Packing


def values_per_word(bits: int) -> int:
    return 32 // bits


def pack_weight(weight: torch.Tensor, bits: int) -> torch.Tensor:
    """int8 [N, K] with values in bits' signed range -> int32 [N, ceil(K / (32 / bits))]."""
    per = values_per_word(bits)
    rows, cols = weight.shape
    padded = torch.zeros(rows, -(-cols // per) * per, dtype=torch.int64, device=weight.device)
    padded[:, :cols] = weight.to(torch.int64) & ((1 << bits) - 1)
    shifts = torch.arange(per, dtype=torch.int64, device=weight.device) * bits
    words = (padded.view(rows, -1, per) << shifts).sum(-1)
    words = torch.where(words >= 2**31, words - 2**32, words)
    return words.to(torch.int32)


def unpack_weight(packed: torch.Tensor, bits: int, cols: int) -> torch.Tensor:
    """The inverse of pack_weight: int32 [N, cols]."""
    per = values_per_word(bits)
    shifts = torch.arange(per, dtype=torch.int64, device=packed.device) * bits
    values = (packed.to(torch.int64).unsqueeze(-1) >> shifts) & ((1 << bits) - 1)
    values = values - (values >= (1 << (bits - 1))).to(torch.int64) * (1 << bits)
    return values.reshape(packed.shape[0], -1)[:, :cols].to(torch.int32)


def dequantize_weight(packed, scales, zeros, bits: int, group_size: int, cols: int) -> torch.Tensor:
    """float32 [N, cols]: (q - zero) * scale, one scale and zero per group of group_size along K."""
    q = unpack_weight(packed, bits, cols)
    if zeros is not None:
        q = q - zeros.to(torch.int32).repeat_interleave(group_size, dim=1)[:, :cols]
    return q.to(torch.float32) * scales.repeat_interleave(group_size, dim=1)[:, :cols]


# ----------------------------------------------------------------------------
# Per-token int8 activation quantization, as torchao's choose_qparams_affine
# (ASYMMETRIC, int8, eps = float32's smallest normal) and quantize_affine compute it.

ACT_QMIN, ACT_QMAX = -128, 127


def quantize_activation_per_token(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(q int32 [..., K], scale [..., 1], zero int32 [..., 1])."""
    min_neg = torch.clamp(x.amin(-1, keepdim=True), max=0.0)
    max_pos = torch.clamp(x.amax(-1, keepdim=True), min=0.0)
    scale = torch.clamp((max_pos - min_neg) / float(ACT_QMAX - ACT_QMIN), min=torch.finfo(torch.float32).smallest_normal)
    zero = torch.clamp(ACT_QMIN - torch.round(min_neg / scale), ACT_QMIN, ACT_QMAX)
    q = torch.clamp(torch.round(x * (1.0 / scale)) + zero, ACT_QMIN, ACT_QMAX)
    return q.to(torch.int32), scale, zero.to(torch.int32)


# ----------------------------------------------------------------------------
# The ops


def _pack_reference(weight, bits):
    return pack_weight(weight, bits)


def _pack_fake(weight, bits):
    per = values_per_word(bits)
    return weight.new_empty((weight.shape[0], -(-weight.shape[1] // per)), dtype=torch.int32)


def _linear_qw(x, packed, scales, zeros, bias, bits, group_size):
    weight = dequantize_weight(packed, scales, zeros, bits, group_size, x.shape[-1])
    return F.linear(x, weight, bias)


def _linear_qw_fake(x, packed, scales, zeros, bias, bits, group_size):
    return x.new_empty(tuple(x.shape[:-1]) + (packed.shape[0],))


def _linear_dq8a_qw(x, packed, scales, zeros, bias, bits, group_size):
    q, scale, zero = quantize_activation_per_token(x)
    x_dq = (q - zero).to(torch.float32) * scale
    return _linear_qw(x_dq, packed, scales, zeros, bias, bits, group_size)


def _embedding_qw(packed, scales, zeros, indices, bits, group_size, embedding_dim):
    return F.embedding(indices, dequantize_weight(packed, scales, zeros, bits, group_size, embedding_dim))


def _embedding_qw_fake(packed, scales, zeros, indices, bits, group_size, embedding_dim):
    return scales.new_empty(tuple(indices.shape) + (embedding_dim,))


pack_qweight = define("vkd_pack_qweight(Tensor weight, int bits) -> Tensor", _pack_reference, _pack_fake)
linear_qw = define(
    "vkd_linear_qw(Tensor x, Tensor packed_weight, Tensor scales, Tensor? zeros, Tensor? bias, int bits, "
    "int group_size) -> Tensor",
    _linear_qw,
    _linear_qw_fake,
)
linear_dq8a_qw = define(
    "vkd_linear_dq8a_qw(Tensor x, Tensor packed_weight, Tensor scales, Tensor? zeros, Tensor? bias, int bits, "
    "int group_size) -> Tensor",
    _linear_dq8a_qw,
    _linear_qw_fake,
)
embedding_qw = define(
    "vkd_embedding_qw(Tensor packed_weight, Tensor scales, Tensor? zeros, Tensor indices, int bits, "
    "int group_size, int embedding_dim) -> Tensor",
    _embedding_qw,
    _embedding_qw_fake,
)


def _check_linear_qw_fused(packed_weights, scales, zeros, biases, silu_mul, residual):
    count = len(packed_weights)
    if not 1 <= count <= 3 or not count == len(scales) == len(zeros) == len(biases):
        raise ValueError("vkd_linear_qw_fused: 1 to 3 weights, each with its scales, zero points and bias")
    if silu_mul and (count != 2 or packed_weights[0].shape[0] != packed_weights[1].shape[0]):
        raise ValueError("vkd_linear_qw_fused: silu_mul takes two weights of one N")
    if residual is not None and not silu_mul and count != 1:
        raise ValueError("vkd_linear_qw_fused: a residual needs one output (one weight, or silu_mul)")


def _linear_qw_fused(x, packed_weights, scales, zeros, biases, bits, group_size, norm_shape, norm_weight, norm_eps,
                     silu_mul, residual):
    _check_linear_qw_fused(packed_weights, scales, zeros, biases, silu_mul, residual)
    if norm_shape:
        x = F.rms_norm(x, list(norm_shape), norm_weight, norm_eps)
    outs = [_linear_qw(x, *parts, bits, group_size) for parts in zip(packed_weights, scales, zeros, biases)]
    if silu_mul:
        outs = [F.silu(outs[0]) * outs[1]]
    if residual is not None:
        outs = [residual + outs[0]]
    return outs


def _linear_qw_fused_fake(x, packed_weights, scales, zeros, biases, bits, group_size, norm_shape, norm_weight,
                          norm_eps, silu_mul, residual):
    _check_linear_qw_fused(packed_weights, scales, zeros, biases, silu_mul, residual)
    count = 1 if silu_mul else len(packed_weights)
    return [x.new_empty(tuple(x.shape[:-1]) + (packed.shape[0],)) for packed in packed_weights[:count]]


# Weight-only linears of one input, fused (backends/linear_fusion.py makes it; op_registry.py's
# vkd_linear_qw_fused entry says what it computes): optionally x = rms_norm(x, norm_shape, norm_weight,
# norm_eps) first (norm_shape empty: none), then x @ W_j^T + bias_j for each weight, then silu(out_0) *
# out_1 (silu_mul: one output), then + residual (one output).
linear_qw_fused = define(
    "vkd_linear_qw_fused(Tensor x, Tensor[] packed_weights, Tensor[] scales, Tensor?[] zeros, Tensor?[] biases, "
    "int bits, int group_size, int[] norm_shape, Tensor? norm_weight, float norm_eps, bool silu_mul, "
    "Tensor? residual) -> Tensor[]",
    _linear_qw_fused,
    _linear_qw_fused_fake,
)


# ----------------------------------------------------------------------------
# Patterns (shared by the registry checks and the fusion pass)

_CONSTANT_DESCS = ("ParamAOTInput", "BufferAOTInput", "ConstantAOTInput")


def is_constant_placeholder(node: Node) -> bool:
    """A parameter, buffer or lifted constant of the exported program (export's placeholder desc says so)."""
    return node.op == "placeholder" and type(node.meta.get("desc")).__name__ in _CONSTANT_DESCS


def is_op(node, name: str) -> bool:
    if not isinstance(node, Node) or node.op != "call_function":
        return False
    op = node.target if isinstance(node.target, torch._ops.OpOverload) else getattr(node.target, "_op", None)
    return isinstance(op, torch._ops.OpOverload) and f"{op.namespace}.{op._opname}" == name




@dataclass(frozen=True)
class WeightPattern:
    dequant: Node
    weight: Node
    scales: Node
    zeros: Optional[Node]
    bits: int
    group_size: int


def match_weight(dequant: Node) -> Tuple[Optional[WeightPattern], Optional[str]]:
    """A dequantize_affine of a constant int8 [N, K] weight with per-row groups along K."""
    if not is_op(dequant, "torchao.dequantize_affine"):
        return None, "not a torchao.dequantize_affine"
    weight, block_size, scales, zeros = (arg_at(dequant, i, n) for i, n in enumerate(
        ("input", "block_size", "scale", "zero_point")))
    input_dtype = arg_at(dequant, 4, "input_dtype")
    qmin, qmax = arg_at(dequant, 5, "quant_min"), arg_at(dequant, 6, "quant_max")
    output_dtype = arg_at(dequant, 7, "output_dtype", torch.float32)
    for what, item in (("weight", weight), ("scales", scales), ("zero points", zeros)):
        if item is not None and not is_constant_placeholder(item):
            return None, f"the {what} is not a constant of the model"
    w, s, z = fake_tensor(weight), fake_tensor(scales), fake_tensor(zeros)
    if w is None or w.dim() != 2 or w.dtype != torch.int8 or input_dtype != torch.int8:
        return None, "the quantized weight must be a 2-D int8 tensor"
    if output_dtype != torch.float32 or s is None or s.dtype != torch.float32:
        return None, "scales and output must be float32"
    rows, cols = w.shape
    if list(block_size) != [1, block_size[1]] or block_size[1] <= 0 or cols % block_size[1]:
        return None, f"block_size {list(block_size)} is not per-row groups along K dividing {cols}"
    group_size = int(block_size[1])
    groups = cols // group_size
    if tuple(s.shape) not in ((rows, groups), (rows * groups,)):
        return None, f"scales of sizes {list(s.shape)} do not match {groups} groups of {rows} rows"
    if z is not None and (z.dtype not in (torch.int8, torch.int32) or z.numel() != rows * groups):
        return None, "zero points must be int8/int32, one per group"
    if not isinstance(qmin, int) or not isinstance(qmax, int):
        return None, "quant_min and quant_max must be given"
    bits = 4 if qmin >= -8 and qmax <= 7 else 8
    if qmin < -128 or qmax > 127:
        return None, f"quant range [{qmin}, {qmax}] is not 4- or 8-bit signed"
    per = values_per_word(bits)
    if group_size != cols and group_size % per:
        return None, f"group size {group_size} is not a multiple of {per}"
    return WeightPattern(dequant, weight, scales, zeros, bits, group_size), None


@dataclass(frozen=True)
class ActivationPattern:
    """x -> choose_qparams_affine -> quantize_affine -> dequantize_affine (int8 per token)."""
    x: Node
    choose: Node
    quantize: Node
    dequant: Node


def match_activation(dequant: Node) -> Tuple[Optional[ActivationPattern], Optional[str]]:
    if not is_op(dequant, "torchao.dequantize_affine"):
        return None, "not a torchao.dequantize_affine"
    quantize = arg_at(dequant, 0, "input")
    if not is_op(quantize, "torchao.quantize_affine"):
        return None, "the dequantized input is not a torchao.quantize_affine"
    x = arg_at(quantize, 0, "input")
    xv = fake_tensor(x)
    if xv is None or xv.dtype != torch.float32 or xv.dim() < 1:
        return None, "the activation must be float32"
    per_token = [1] * (xv.dim() - 1) + [xv.shape[-1]]
    qs, qz = arg_at(quantize, 2, "scale"), arg_at(quantize, 3, "zero_point")
    if qs is not arg_at(dequant, 2, "scale") or qz is not arg_at(dequant, 3, "zero_point"):
        return None, "quantize and dequantize use different scales or zero points"
    if not all(isinstance(item, Node) and item.target is operator.getitem for item in (qs, qz)):
        return None, "scale and zero point are not outputs of choose_qparams_affine"
    choose = qs.args[0]
    if (not is_op(choose, "torchao.choose_qparams_affine") or qz.args[0] is not choose
            or (qs.args[1], qz.args[1]) != (0, 1) or arg_at(choose, 0, "input") is not x):
        return None, "scale and zero point are not choose_qparams_affine(x)"
    expected = dict(mapping_type="ASYMMETRIC", target_dtype=torch.int8, quant_min=ACT_QMIN, quant_max=ACT_QMAX)
    got = dict(mapping_type=arg_at(choose, 1, "mapping_type"), target_dtype=arg_at(choose, 3, "target_dtype"),
               quant_min=arg_at(choose, 4, "quant_min"), quant_max=arg_at(choose, 5, "quant_max"))
    if got != expected:
        return None, f"activation quantization {got} is not int8 asymmetric [-128, 127]"
    if arg_at(choose, 6, "eps") is not None or arg_at(choose, 7, "scale_dtype") not in (None, torch.float32):
        return None, "only the default eps and float32 scales are supported"
    for node, base in ((choose, 2), (quantize, 1), (dequant, 1)):
        if list(arg_at(node, base, "block_size")) != per_token:
            return None, "activation quantization is not per token"
    if (arg_at(quantize, 4, "output_dtype") != torch.int8 or arg_at(dequant, 4, "input_dtype") != torch.int8
            or (arg_at(quantize, 5, "quant_min"), arg_at(quantize, 6, "quant_max")) != (ACT_QMIN, ACT_QMAX)
            or (arg_at(dequant, 5, "quant_min"), arg_at(dequant, 6, "quant_max")) != (ACT_QMIN, ACT_QMAX)
            or arg_at(dequant, 7, "output_dtype", torch.float32) != torch.float32):
        return None, "quantize/dequantize are not int8 [-128, 127] to float32"
    if list(quantize.users) != [dequant] or set(choose.users) != {qs, qz}:
        return None, "the quantized activation or its parameters have other users"
    if any(set(item.users) - {quantize, dequant} for item in (qs, qz)):
        return None, "the activation's scale or zero point has other users"
    return ActivationPattern(x, choose, quantize, dequant), None


def linear_parts(linear: Node):
    """(input, weight, bias) of an aten.linear node."""
    return arg_at(linear, 0, "input"), arg_at(linear, 1, "weight"), arg_at(linear, 2, "bias")


def match_linear(linear: Node):
    """(WeightPattern, ActivationPattern or None) if linear is fusable, else (None, None, reason)."""
    if not is_op(linear, "aten.linear"):
        return None, None, "not an aten.linear"
    x, weight, bias = linear_parts(linear)
    pattern, reason = match_weight(weight)
    if pattern is None:
        return None, None, reason
    if bias is not None and (fake_tensor(bias) is None or fake_tensor(bias).dtype != torch.float32 or fake_tensor(bias).dim() != 1):
        return None, None, "the bias must be a 1-D float32 tensor"
    xv = fake_tensor(x)
    if xv is None or xv.dtype != torch.float32 or xv.dim() < 1 or xv.shape[-1] != fake_tensor(pattern.weight).shape[1]:
        return None, None, "the input must be float32 with K features"
    activation = None
    if is_op(x, "torchao.dequantize_affine"):
        activation, reason = match_activation(x)
        if activation is None:
            return None, None, f"quantized activation: {reason}"
    return pattern, activation, None


def match_embedding(embedding: Node) -> Tuple[Optional[WeightPattern], Optional[str]]:
    if not is_op(embedding, "aten.embedding"):
        return None, "not an aten.embedding"
    pattern, reason = match_weight(arg_at(embedding, 0, "weight"))
    if pattern is None:
        return None, reason
    indices = fake_tensor(arg_at(embedding, 1, "indices"))
    if indices is None or indices.dtype not in (torch.int32, torch.int64) or indices.dim() > 7:
        return None, "indices must be int32/int64 of rank up to 7"
    return pattern, None


def fusion_reason(dequant: Node) -> Optional[str]:
    """None if every user of this dequantize_affine is a linear/embedding the fusion pass rewrites
    (so the node disappears into fused ops), else why not."""
    if not dequant.users:
        return "the dequantized tensor is unused"
    for user in dequant.users:
        if is_op(user, "aten.linear"):
            x, weight, _ = linear_parts(user)
            if weight is dequant:
                _, _, reason = match_linear(user)
            elif x is dequant:
                reason = _activation_reason(user)
            else:
                reason = "used as a linear bias"
        elif is_op(user, "aten.embedding") and arg_at(user, 0, "weight") is dequant:
            _, reason = match_embedding(user)
        else:
            reason = f"used by {op_name(user.target)}, not as a linear or embedding weight"
        if reason is not None:
            return reason
    return None


def _activation_reason(linear: Node) -> Optional[str]:
    weight_pattern, activation, reason = match_linear(linear)
    if reason is not None:
        return reason
    return None if activation is not None else "not a quantized activation pattern"


def activation_fusion_reason(node: Node) -> Optional[str]:
    """None if node (choose_qparams_affine, its getitems or quantize_affine of a per-token int8
    activation) belongs to a pattern whose dequantize feeds only fusable linears."""
    dequant = node
    for _ in range(3):
        if is_op(dequant, "torchao.dequantize_affine"):
            break
        users = list(dequant.users)
        if not users:
            return "its result is unused"
        # choose -> getitem -> quantize -> dequantize: follow the first user chain.
        dequant = next((u for u in users if is_op(u, "torchao.quantize_affine")
                        or is_op(u, "torchao.dequantize_affine") or u.target is operator.getitem), users[0])
    if not is_op(dequant, "torchao.dequantize_affine"):
        return "it does not lead to a torchao.dequantize_affine"
    activation, reason = match_activation(dequant)
    if activation is None:
        return reason
    if node not in (activation.choose, activation.quantize) and node.target is not operator.getitem:
        return "not part of the activation quantization"
    return fusion_reason(dequant)
