"""Static int8 ops that preprocess fuses PT2E's dequantize -> op -> quantize patterns into.

q8ta: int8 tensors in and out, quantized per tensor (scale, zero point);
conv2d and linear weights int8 per output channel (scales and zero points of
length out_channels, float bias). Accumulation is exact in int32; the result is
requantized as `clamp(round(y / out_scale) + out_zero_point, out_min, out_max)`
with round half to even, like quantized_decomposed.quantize_per_tensor. A relu
before the quantize is folded into out_min (max(quant_min, out_zero_point)).

The references below are plain torch: dequantize, float op, quantize.
"""
import torch
import torch.nn.functional as F

from .library import define


def _dequantize(x: torch.Tensor, scale: float, zero_point: int) -> torch.Tensor:
    return (x.to(torch.float32) - zero_point) * scale


def _dequantize_weight(weight: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor) -> torch.Tensor:
    shape = (-1,) + (1,) * (weight.dim() - 1)
    return (weight.to(torch.float32) - zero_points.reshape(shape)) * scales.to(torch.float32).reshape(shape)


def _quantize(y: torch.Tensor, scale: float, zero_point: int, out_min: int, out_max: int) -> torch.Tensor:
    return torch.clamp(torch.round(y * (1.0 / scale)) + zero_point, out_min, out_max).to(torch.int8)


def _conv2d(x, x_scale, x_zero_point, weight, weight_scales, weight_zero_points, bias, stride, padding, dilation,
            groups, out_scale, out_zero_point, out_min, out_max):
    y = F.conv2d(_dequantize(x, x_scale, x_zero_point), _dequantize_weight(weight, weight_scales, weight_zero_points),
                 bias, stride, padding, dilation, groups)
    return _quantize(y, out_scale, out_zero_point, out_min, out_max)


def _linear(x, x_scale, x_zero_point, weight, weight_scales, weight_zero_points, bias, out_scale, out_zero_point,
            out_min, out_max):
    y = F.linear(_dequantize(x, x_scale, x_zero_point), _dequantize_weight(weight, weight_scales, weight_zero_points),
                 bias)
    return _quantize(y, out_scale, out_zero_point, out_min, out_max)


def _add(a, a_scale, a_zero_point, b, b_scale, b_zero_point, out_scale, out_zero_point, out_min, out_max):
    y = _dequantize(a, a_scale, a_zero_point) + _dequantize(b, b_scale, b_zero_point)
    return _quantize(y, out_scale, out_zero_point, out_min, out_max)


q8ta_conv2d = define(
    "vkd_q8ta_conv2d(Tensor x, float x_scale, int x_zero_point, Tensor weight, Tensor weight_scales, "
    "Tensor weight_zero_points, Tensor? bias, int[2] stride, int[2] padding, int[2] dilation, int groups, "
    "float out_scale, int out_zero_point, int out_min, int out_max) -> Tensor",
    _conv2d,
)
q8ta_linear = define(
    "vkd_q8ta_linear(Tensor x, float x_scale, int x_zero_point, Tensor weight, Tensor weight_scales, "
    "Tensor weight_zero_points, Tensor? bias, float out_scale, int out_zero_point, int out_min, int out_max) -> Tensor",
    _linear,
)
q8ta_add = define(
    "vkd_q8ta_add(Tensor a, float a_scale, int a_zero_point, Tensor b, float b_scale, int b_zero_point, "
    "float out_scale, int out_zero_point, int out_min, int out_max) -> Tensor",
    _add,
)
