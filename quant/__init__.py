"""Quantized inference: our fused `et_vk` ops and the flows that produce them.

`library.py` owns the op namespace (and defines its one op outside quantization,
the convolution with a fused clamp). Each flow (torchao weight-only and
dynamic-activation linear, PT2E with VulkanQuantizer, quantized embedding,
GGUF weights) defines its ops there, with a reference implementation in
plain torch (dequantize, then float math) that eager runs and tests compare
against.
"""
