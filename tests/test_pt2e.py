"""PT2E static int8 with VulkanQuantizer: prepare_pt2e, calibrate, convert_pt2e,
export, lower, run; compared with the converted model run eagerly on the CPU
(tight, in quantization steps) and with the float model (loose)."""
import logging

import pytest
import torch
import torch.nn as nn
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from helpers import cpu_ops, delegate_blob, lower, relative_error, run_pte
from vkdelegate.fx_nodes import op_name
from vkdelegate.quant.pt2e import VulkanQuantizer
from vkdelegate.serialization import deserialize_blob

# The GPU accumulates int32 exactly and requantizes in float32, while the
# reference sums dequantized floats: where the float result lands within
# rounding error of a half step, the two round to neighbouring int8 values. So
# one op may differ by one step of its output scale, and rarely does; through a
# network such a step moves the next layer's result by a fraction of a step, so
# a few layers stay within a few steps.
STEPS_PER_OP = 1
STEPS_PER_NETWORK = 3
# Share of outputs that must match the reference exactly.
EXACT_SHARE = 0.97
# int8 against float: the quantization error of a few layers.
FLOAT_RELATIVE_ERROR = 0.08


def quantize(model: nn.Module, inputs, quantizer=None):
    """The converted PT2E model, calibrated on inputs and a few random batches like them."""
    model = model.eval()
    exported = torch.export.export(model, tuple(inputs)).module()
    prepared = prepare_pt2e(exported, quantizer or VulkanQuantizer())
    torch.manual_seed(3)
    for batch in [inputs] + [tuple(torch.randn_like(x) for x in inputs) for _ in range(3)]:
        prepared(*batch)
    return convert_pt2e(prepared)


def output_scale(converted) -> float:
    """Scale of the dequantize that produces the model output."""
    (output,) = [node for node in converted.graph.nodes if node.op == "output"]
    dequantize = output.args[0][0]
    assert "dequantize_per_tensor" in str(dequantize.target)
    return dequantize.args[1]


def chain(edge) -> list:
    return [call.name for call in deserialize_blob(delegate_blob(edge)).chain]


def check(model: nn.Module, inputs, steps=STEPS_PER_OP):
    """Lowers the quantized model whole into one delegate, compares, returns the blob's op chain."""
    converted = quantize(model, inputs)
    edge = lower(converted, inputs)
    assert cpu_ops(edge) == []
    ops = chain(edge)
    (out,) = run_pte(edge.to_executorch().buffer, inputs)
    with torch.no_grad():
        ref = converted(*inputs)
        expected = model(*inputs)
    step = output_scale(converted)
    difference = (out - ref).abs()
    assert difference.max().item() <= steps * step * (1 + 1e-5), f"off by {difference.max().item() / step} steps"
    exact = (difference <= step * 1e-3).float().mean().item()
    assert exact >= EXACT_SHARE, f"only {exact:.3f} of the outputs match exactly"
    assert relative_error(out, expected) < FLOAT_RELATIVE_ERROR
    return ops


class Conv(nn.Module):
    def __init__(self, *args, bn=False, relu=False, relu6=False, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(*args, **kwargs)
        self.bn = nn.BatchNorm2d(self.conv.out_channels) if bn else nn.Identity()
        self.relu, self.relu6 = relu, relu6
        if bn:
            self.bn.running_mean.uniform_(-0.2, 0.2)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        y = self.bn(self.conv(x))
        if self.relu6:
            return nn.functional.relu6(y)
        return torch.relu(y) if self.relu else y


CONV_CASES = {
    "3x3_odd_channels": (Conv(3, 5, 3), (2, 3, 9, 7)),
    "stride2_pad1_relu": (Conv(7, 13, 3, stride=2, padding=1, relu=True), (1, 7, 13, 11)),
    "dilation2_no_bias": (Conv(4, 6, 3, dilation=2, bias=False), (1, 4, 9, 9)),
    "depthwise_s2_bn_relu": (Conv(8, 8, 3, stride=2, padding=1, groups=8, bn=True, relu=True), (2, 8, 9, 9)),
    "pointwise_33": (Conv(16, 33, 1), (1, 16, 5, 7)),
    "depthwise_multiplier2_relu6": (Conv(4, 8, 3, groups=4, bn=True, relu6=True), (1, 4, 7, 5)),
}


@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv2d(case):
    torch.manual_seed(0)
    model, shape = CONV_CASES[case]
    ops = check(model, (torch.randn(shape),))
    assert ops == ["quantized_decomposed.quantize_per_tensor.default", "et_vk.vkd_q8ta_conv2d.default",
                   "quantized_decomposed.dequantize_per_tensor.default"]


class Linear(nn.Module):
    def __init__(self, cin, cout, relu=False):
        super().__init__()
        self.linear, self.relu = nn.Linear(cin, cout), relu

    def forward(self, x):
        y = self.linear(x)
        return torch.relu(y) if self.relu else y


@pytest.mark.parametrize("shape, relu", [((3, 33), False), ((2, 5, 16), True), ((2, 1, 3, 9), False)],
                         ids=["rank2", "rank3_relu", "rank4"])
def test_linear(shape, relu):
    torch.manual_seed(0)
    ops = check(Linear(shape[-1], 7, relu), (torch.randn(shape),))
    assert "et_vk.vkd_q8ta_linear.default" in ops and "aten.linear.default" not in ops


class Add(nn.Module):
    def __init__(self, relu):
        super().__init__()
        self.relu = relu

    def forward(self, a, b):
        y = a + b
        return torch.relu(y) if self.relu else y


@pytest.mark.parametrize("relu", [False, True], ids=["add", "add_relu"])
def test_add(relu):
    torch.manual_seed(0)
    ops = check(Add(relu), (torch.randn(2, 3, 7, 5), torch.randn(2, 3, 7, 5) * 3))
    assert ops.count("et_vk.vkd_q8ta_add.default") == 1 and "aten.add.Tensor" not in ops


class SmallCNN(nn.Module):
    """conv-bn-relu, depthwise, a residual add + relu, global pool, linear."""

    def __init__(self):
        super().__init__()
        self.stem = Conv(3, 8, 3, stride=2, padding=1, bn=True, relu=True)
        self.depthwise = Conv(8, 8, 3, padding=1, groups=8, bn=True, relu=True)
        self.pointwise = Conv(8, 8, 1, bn=True)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = self.stem(x)
        y = torch.relu(self.pointwise(self.depthwise(y)) + y)
        return self.fc(y.mean((2, 3)))


def test_small_cnn_stays_int8_in_one_partition():
    torch.manual_seed(0)
    ops = check(SmallCNN(), (torch.randn(2, 3, 17, 15),), steps=STEPS_PER_NETWORK)
    q, dq = "quantized_decomposed.quantize_per_tensor.default", "quantized_decomposed.dequantize_per_tensor.default"
    conv, add = "et_vk.vkd_q8ta_conv2d.default", "et_vk.vkd_q8ta_add.default"
    # int8 from the input's quantize to the pooling, which runs in float between a dequantize and a quantize.
    assert ops == [q, conv, conv, conv, add, dq, "aten.mean.dim", q, "et_vk.vkd_q8ta_linear.default", dq]


def test_mobilenet_v2_stays_int8_in_one_partition():
    from vkdelegate.examples.models.cnn import MobileNetV2

    torch.manual_seed(0)
    ops = check(MobileNetV2(), (torch.randn(1, 3, 64, 64),), steps=STEPS_PER_NETWORK)
    # ReLU6 is fused; only the pooling and classifier's reshapes run in float.
    assert ops.count("et_vk.vkd_q8ta_conv2d.default") == 52 and ops.count("et_vk.vkd_q8ta_add.default") == 10
    assert "aten.hardtanh.default" not in ops and ops.count("quantized_decomposed.dequantize_per_tensor.default") == 2


def test_resnet18_stays_int8_in_one_partition():
    from vkdelegate.examples.models.cnn import resnet18

    torch.manual_seed(0)
    ops = check(resnet18(), (torch.randn(1, 3, 32, 32),), steps=STEPS_PER_NETWORK)
    assert ops.count("et_vk.vkd_q8ta_conv2d.default") == 20
    assert ops.count("et_vk.vkd_q8ta_add.default") == 8
    assert not any(name.startswith("aten.convolution") or name == "aten.add.Tensor" for name in ops)


def _xnnpack_quantizer(per_channel: bool):
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )

    return XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=per_channel))


@pytest.mark.parametrize(
    "model, shape, per_channel, reason",
    [
        (Conv(3, 5, 3), (1, 3, 9, 7), False, "weights quantized per tensor"),
        (nn.Conv1d(3, 5, 3), (1, 3, 9), True, "not a 2-D convolution"),
    ],
    ids=["per_tensor_weights", "conv1d"],
)
def test_unsupported_pattern_stays_on_cpu_with_reason(model, shape, per_channel, reason, caplog):
    import executorch.kernels.quantized  # noqa: F401  (the CPU's quantize/dequantize out variants)

    torch.manual_seed(0)
    inputs = (torch.randn(shape),)
    converted = quantize(model, inputs, _xnnpack_quantizer(per_channel))
    with caplog.at_level(logging.INFO, logger="vkdelegate"):
        edge = lower(converted, inputs)
    on_cpu = cpu_ops(edge)
    # The whole pattern stays on CPU: the dequantize feeding the conv and the quantize after it too.
    assert {"aten.convolution.default", "quantized_decomposed.dequantize_per_tensor.default",
            "quantized_decomposed.quantize_per_tensor.default"} <= set(on_cpu)
    assert f"quantized conv2d is not fused: {reason}" in caplog.text
    (out,) = run_pte(edge.to_executorch().buffer, inputs)
    with torch.no_grad():
        torch.testing.assert_close(out, converted(*inputs), rtol=0, atol=output_scale(converted) * 1.001)


def test_quantizer_annotates_patterns():
    """conv + bn + relu, linear, add + relu: quantized inputs, weights per channel, relu outputs quantized."""
    torch.manual_seed(0)
    converted = quantize(SmallCNN(), (torch.randn(1, 3, 9, 9),))
    names = [op_name(node.target) for node in converted.graph.nodes if node.op == "call_function"]
    assert names.count("quantized_decomposed.dequantize_per_channel.default") == 4
    for node in converted.graph.nodes:
        if op_name(getattr(node, "target", None)) == "quantized_decomposed.dequantize_per_channel.default":
            assert node.args[3:7] == (0, -127, 127, torch.int8)
        if op_name(getattr(node, "target", None)) == "quantized_decomposed.quantize_per_tensor.default":
            assert node.args[3:] == (-128, 127, torch.int8)
    assert "aten.batch_norm.default" not in names and "aten._native_batch_norm_legit_no_training.default" not in names
