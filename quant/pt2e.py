"""VulkanQuantizer: static int8 quantization with PT2E for vkdelegate.

    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e, convert_pt2e
    model = torch.export.export(model, example_inputs).module()
    prepared = prepare_pt2e(model, VulkanQuantizer())
    prepared(*calibration_inputs)
    quantized = convert_pt2e(prepared)

The scheme is the one the fused kernels run (backends/q8ta_fusion.py):
activations int8 per tensor (affine, [-128, 127]); conv2d and linear weights
int8 per output channel, symmetric ([-127, 127], zero point 0); biases stay
float. Annotated patterns: conv2d (any groups, so depthwise too; a following
batch norm is folded into it by prepare_pt2e), linear, add, each optionally
followed by relu or hardtanh (ReLU6), whose output is then the quantized one. Other ops stay float
between a dequantize and a quantize, which the delegate runs as they are.
"""
from typing import Optional

import torch
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e import MinMaxObserver, PerChannelMinMaxObserver
from torchao.quantization.pt2e.quantizer import QuantizationAnnotation, QuantizationSpec, Quantizer

_ANNOTATION = "quantization_annotation"

_CONV = (torch.ops.aten.conv2d.default,)
_LINEAR = (torch.ops.aten.linear.default,)
_ADD = (torch.ops.aten.add.Tensor, torch.ops.aten.add_.Tensor)
# Activations fused into the op before it (the output range of the fused op).
_ACTIVATIONS = (
    torch.ops.aten.relu.default,
    torch.ops.aten.relu_.default,
    torch.ops.aten.hardtanh.default,
    torch.ops.aten.hardtanh_.default,
    torch.ops.aten.relu6.default,  # F.relu6; edge programs have it as hardtanh
)

ACTIVATION = QuantizationSpec(
    dtype=torch.int8,
    quant_min=-128,
    quant_max=127,
    qscheme=torch.per_tensor_affine,
    observer_or_fake_quant_ctr=MinMaxObserver.with_args(eps=2**-12),
)
WEIGHT = QuantizationSpec(
    dtype=torch.int8,
    quant_min=-127,
    quant_max=127,
    qscheme=torch.per_channel_symmetric,
    ch_axis=0,
    observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(eps=2**-12),
)


def _is_float_tensor(item) -> bool:
    val = item.meta.get("val") if isinstance(item, Node) else None
    return isinstance(val, torch.Tensor) and val.dtype == torch.float32


def _annotated(node: Node) -> bool:
    annotation = node.meta.get(_ANNOTATION)
    return annotation is not None and annotation._annotated


def _relu_after(node: Node) -> Optional[Node]:
    """The relu or hardtanh (ReLU6) that is node's only user, or None."""
    if len(node.users) == 1:
        user = next(iter(node.users))
        if user.op == "call_function" and user.target in _ACTIVATIONS:
            return user
    return None


class VulkanQuantizer(Quantizer):
    """Annotates conv2d, linear and add (each with an optional relu or hardtanh) for vkdelegate's int8 kernels."""

    def annotate(self, model: GraphModule) -> GraphModule:
        for node in list(model.graph.nodes):
            if node.op != "call_function" or _annotated(node):
                continue
            if node.target in _CONV + _LINEAR:
                self._annotate_weighted(node)
            elif node.target in _ADD:
                self._annotate_add(node)
        return model

    def validate(self, model: GraphModule) -> None:
        pass

    def _annotate_weighted(self, node: Node) -> None:
        activation, weight = node.args[0], node.args[1]
        if not (_is_float_tensor(activation) and _is_float_tensor(weight)):
            return
        if node.target in _CONV and weight.meta["val"].dim() != 4:
            return
        inputs = {activation: ACTIVATION, weight: WEIGHT}
        self._annotate_with_output(node, inputs)

    def _annotate_add(self, node: Node) -> None:
        operands = [item for item in node.args[:2] if isinstance(item, Node)]
        if len(operands) != 2 or not all(_is_float_tensor(item) for item in operands):
            return
        if node.kwargs.get("alpha", 1) != 1:
            return
        self._annotate_with_output(node, {item: ACTIVATION for item in operands})

    @staticmethod
    def _annotate_with_output(node: Node, inputs) -> None:
        relu = _relu_after(node)
        node.meta[_ANNOTATION] = QuantizationAnnotation(
            input_qspec_map=inputs, output_qspec=ACTIVATION if relu is None else None, _annotated=True
        )
        if relu is not None:
            relu.meta[_ANNOTATION] = QuantizationAnnotation(output_qspec=ACTIVATION, _annotated=True)
