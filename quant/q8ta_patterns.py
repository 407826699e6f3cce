"""Which PT2E quantize/dequantize patterns vkdelegate runs, and why not the others.

After convert_pt2e and export, a quantized op is float math between
dequantize and quantize nodes (quantized_decomposed ops):

    dq(x, per tensor) ─┐
    dq(w, per channel) ─┴─ convolution / linear ─ [relu | hardtanh] ─ q(per tensor)
    dq(a), dq(b) ─ add ─ [relu | hardtanh] ─ q

The partitioner (through `pattern_reason`, which the op registry asks for every
node) and the preprocess pass (backends/q8ta_fusion.py) share `match`, so the
partitioner accepts a quantized conv, linear or add exactly when the pass fuses
it into an et_vk.vkd_q8ta_* op. A conv or linear with dequantized weights that
does not match stays on CPU with the reason, and so do the dequantize,
activation and quantize nodes around it. Quantize and dequantize nodes elsewhere
(the model's input and output, around float ops such as pooling) run on the
GPU as they are.

Works on ATen and edge graphs alike (ops compared by name).
"""
import math
from dataclasses import dataclass
from typing import List, Optional, Tuple

import torch
from torch.fx import Node

from ..fx_nodes import arg, fake_tensor, op_name

QUANTIZE = "quantized_decomposed.quantize_per_tensor.default"
DEQUANTIZE = "quantized_decomposed.dequantize_per_tensor.default"
DEQUANTIZE_CHANNEL = "quantized_decomposed.dequantize_per_channel.default"
CONVOLUTION = "aten.convolution.default"
LINEAR = "aten.linear.default"
ADD = "aten.add.Tensor"
RELU = "aten.relu.default"
HARDTANH = "aten.hardtanh.default"  # ReLU6 and other clamps

INT8_MIN, INT8_MAX = -128, 127
# int32 accumulation of (x - x_zero_point) * (w - w_zero_point), each factor at
# most 255 in magnitude, cannot overflow for up to this many products.
MAX_REDUCTION = (2**31 - 1) // (255 * 255)


@dataclass(frozen=True)
class QParams:
    scale: float
    zero_point: int
    quant_min: int
    quant_max: int


@dataclass
class Match:
    """A quantized conv2d, linear or add that fuses into one et_vk op."""

    kind: str  # "conv2d", "linear" or "add"
    anchor: Node
    inputs: List[Node]  # the per-tensor dequantize node of each activation input
    weight: Optional[Node]  # the per-channel dequantize node of the weight (conv2d, linear)
    activation: Optional[Node]  # a relu or hardtanh between the op and the quantize
    output: Node  # the quantize node whose output the fused op produces

    def out_range(self) -> Tuple[int, int]:
        """(out_min, out_max) of the fused op. Quantizing is monotonic, so quantizing a clamped value
        equals clamping the quantized value to the quantized bounds (computed as the quantize node would)."""
        q = per_tensor_qparams(self.output)[0]
        low, high = q.quant_min, q.quant_max
        if self.activation is not None:
            if _is(self.activation, RELU):
                bounds = (0.0, None)
            else:
                bounds = (float(arg(self.activation, "min_val")), float(arg(self.activation, "max_val")))
            inverse = torch.tensor(1.0 / q.scale, dtype=torch.float32)
            quantized = [None if v is None else int(torch.round(torch.tensor(v, dtype=torch.float32) * inverse).item())
                         + q.zero_point for v in bounds]
            low = low if quantized[0] is None else min(max(low, quantized[0]), q.quant_max)
            high = high if quantized[1] is None else max(min(high, quantized[1]), q.quant_min)
        return low, high


def _is(node, name: str) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and op_name(node.target) == name


def _is_activation(node) -> bool:
    return _is(node, RELU) or _is(node, HARDTANH)


def is_quantize_op(node) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and op_name(node.target).startswith(
        "quantized_decomposed."
    )


def _dtype_reason(value: torch.dtype) -> Optional[str]:
    return None if value == torch.int8 else f"quantized dtype {value} (only int8 is supported)"


def per_tensor_qparams(node: Node) -> Tuple[Optional[QParams], Optional[str]]:
    """The literal qparams of a per-tensor quantize or dequantize to int8, or why it has none."""
    scale, zero_point = arg(node, "scale"), arg(node, "zero_point")
    quant_min, quant_max = arg(node, "quant_min"), arg(node, "quant_max")
    reason = _dtype_reason(arg(node, "dtype"))
    if reason:
        return None, reason
    if not isinstance(scale, float) or not math.isfinite(scale) or scale <= 0:
        return None, f"scale {scale!r} is not a positive float"
    if not isinstance(zero_point, int) or not INT8_MIN <= zero_point <= INT8_MAX:
        return None, f"zero point {zero_point!r} is not an int8 value"
    integers = isinstance(quant_min, int) and isinstance(quant_max, int)
    if not (integers and INT8_MIN <= quant_min <= quant_max <= INT8_MAX):
        return None, f"quant range [{quant_min}, {quant_max}] is not within int8"
    if "out_dtype" in node.kwargs and node.kwargs["out_dtype"] not in (None, torch.float32):
        return None, f"out_dtype {node.kwargs['out_dtype']} (float32 only)"
    return QParams(float(scale), zero_point, quant_min, quant_max), None


def _activation_reason(item) -> Optional[str]:
    if not _is(item, DEQUANTIZE):
        return "an activation input is not dequantized per tensor"
    reason = per_tensor_qparams(item)[1]
    if reason is None and len(item.users) != 1:
        reason = "an activation dequantize has several users"
    return reason and f"activation: {reason}"


def _weight_reason(item, rank: int) -> Optional[str]:
    if _is(item, DEQUANTIZE):
        return "weights quantized per tensor (only per-channel int8 weights, VulkanQuantizer's scheme, are fused)"
    if not _is(item, DEQUANTIZE_CHANNEL):
        return "the weight is not dequantized per channel"
    reason = _dtype_reason(arg(item, "dtype"))
    if reason:
        return f"weight: {reason}"
    if arg(item, "axis") != 0:
        return f"weight quantized along axis {arg(item, 'axis')} (only the output channel axis 0)"
    weight, scales, zero_points = item.args[0], arg(item, "scales"), arg(item, "zero_points")
    val = fake_tensor(weight)
    if val is None or val.dtype != torch.int8 or val.dim() != rank:
        return f"weight is not an int8 tensor of rank {rank}"
    channels = val.shape[0]
    scales_val = fake_tensor(scales)
    if scales_val is None or scales_val.dtype != torch.float32 or tuple(scales_val.shape) != (channels,):
        return "weight scales are not float32 with one per output channel"
    zeros_val = fake_tensor(zero_points)
    if zero_points is not None and (zeros_val is None or zeros_val.dtype not in (torch.int32, torch.int64)
                                    or tuple(zeros_val.shape) != (channels,)):
        return "weight zero points are not integers with one per output channel"
    if item.kwargs.get("out_dtype") not in (None, torch.float32):
        return "weight dequantized to a dtype other than float32"
    if len(item.users) != 1:
        return "the weight dequantize has several users"
    return None


def _output(anchor: Node) -> Tuple[Optional[Node], Optional[Node], Optional[str]]:
    """(activation or None, quantize node) after anchor, or the reason there is no such chain."""
    if len(anchor.users) != 1:
        return None, None, "the output has several users instead of one quantize"
    activation, node = None, next(iter(anchor.users))
    if _is_activation(node):
        if len(node.users) != 1:
            return None, None, f"the {node.name} has several users instead of one quantize"
        activation, node = node, next(iter(node.users))
    if not _is(node, QUANTIZE):
        return None, None, f"the output goes to {node.name}, not to a per-tensor quantize"
    reason = per_tensor_qparams(node)[1]
    return activation, node, reason and f"output: {reason}"


def is_quantized(anchor: Node) -> bool:
    """Whether anchor is static int8 math: a conv or linear of a dequantized activation and dequantized
    weights, or an add of two dequantized operands that goes into a quantize."""
    name = op_name(anchor.target) if anchor.op == "call_function" else ""
    if name in (CONVOLUTION, LINEAR):
        weight = anchor.args[1]
        return _is(anchor.args[0], DEQUANTIZE) and (_is(weight, DEQUANTIZE) or _is(weight, DEQUANTIZE_CHANNEL))
    if name == ADD:
        return all(_is(item, DEQUANTIZE) for item in anchor.args[:2]) and _output(anchor)[1] is not None
    return False


def match(anchor: Node) -> Tuple[Optional[Match], Optional[str]]:
    """(Match, None) if anchor fuses; (None, reason) if it is quantized but does not fuse;
    (None, None) if it is float math."""
    if not is_quantized(anchor):
        return None, None
    name = op_name(anchor.target)
    kind = {CONVOLUTION: "conv2d", LINEAR: "linear", ADD: "add"}[name]
    found, reason = _match(anchor, kind)
    if reason:
        return None, f"quantized {kind} is not fused: {reason}"
    return found, None


def _match(anchor: Node, kind: str) -> Tuple[Optional[Match], Optional[str]]:
    activation, output, reason = _output(anchor)
    if reason:
        return None, reason
    if kind == "add":
        operands = list(anchor.args[:2])
        if arg(anchor, "alpha") != 1:
            return None, f"alpha {arg(anchor, 'alpha')} (only 1)"
        for item in operands:
            reason = _activation_reason(item)
            if reason:
                return None, reason
        if any(fake_tensor(item) is None or fake_tensor(item).dim() > 8 for item in operands):
            return None, "operands of rank above 8"
        return Match(kind, anchor, operands, None, activation, output), None

    x, weight_dq = anchor.args[0], anchor.args[1]
    if kind == "conv2d":
        if arg(anchor, "transposed"):
            return None, "transposed convolution"
        if fake_tensor(x) is None or fake_tensor(x).dim() != 4:
            return None, "not a 2-D convolution"
        if any(size for size in arg(anchor, "output_padding")):
            return None, "output padding"
    elif fake_tensor(x) is None or not 1 <= fake_tensor(x).dim() <= 8:
        return None, "input rank outside 1..8"
    reason = _activation_reason(x) or _weight_reason(weight_dq, 4 if kind == "conv2d" else 2)
    if reason:
        return None, reason
    bias = arg(anchor, "bias")
    if bias is not None:
        if is_quantize_op(bias):
            return None, "the bias is quantized (only a float bias)"
        val = fake_tensor(bias)
        if val is None or val.dtype != torch.float32 or val.dim() != 1:
            return None, "the bias is not a 1-D float32 tensor"
    weight = fake_tensor(weight_dq.args[0])
    reduction = weight.shape[1] * weight.shape[2] * weight.shape[3] if kind == "conv2d" else weight.shape[1]
    if reduction > MAX_REDUCTION:
        return None, f"{reduction} products per output could overflow the int32 accumulator (at most {MAX_REDUCTION})"
    return Match(kind, anchor, [x], weight_dq, activation, output), None


def pattern_reason(node: Node) -> Optional[str]:
    """Why node must stay on CPU because of the quantized pattern it belongs to, or None.

    A quantized anchor that does not match stays on CPU, and with it the
    dequantize nodes feeding it, its activation and its quantize. Standalone
    quantize and dequantize nodes must be per tensor to int8 with literal qparams.
    """
    if node.op != "call_function":
        return None
    name = op_name(node.target)
    if name in (QUANTIZE, DEQUANTIZE):
        reason = per_tensor_qparams(node)[1]
        if reason:
            return reason
    if name == DEQUANTIZE_CHANNEL:
        # Only as a fused conv or linear weight (a constant weight's is folded before this is asked).
        for user in node.users:
            found, reason = match(user)
            if found is None or found.weight is not node:
                return reason or "a per-channel dequantize runs only as the weight of a fused conv2d or linear"
        return None
    neighbours = {
        QUANTIZE: lambda: [item.args[0] if _is_activation(item) else item for item in node.args[:1]],
        DEQUANTIZE: lambda: list(node.users),
        RELU: lambda: node.args[:1],
        HARDTANH: lambda: node.args[:1],
    }.get(name, lambda: [node])()
    for anchor in neighbours:
        if isinstance(anchor, Node) and anchor.op == "call_function":
            reason = match(anchor)[1]
            if reason:
                return reason if anchor is node else f"belongs to {anchor.name}: {reason}"
    return None
