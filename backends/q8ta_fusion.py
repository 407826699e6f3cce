"""Fuses PT2E static int8 patterns into et_vk.vkd_q8ta_conv2d / vkd_q8ta_linear / vkd_q8ta_add.

quant/q8ta_patterns.match finds dq -> conv2d | linear | add -> [relu | hardtanh] -> q; the
fused op takes the int8 tensors that the dequantize nodes read and produces
the int8 output of the quantize node, so consecutive fused ops pass int8 tensors
to each other and the dequantize/quantize pairs between them disappear. A relu or
hardtanh (ReLU6) becomes the output range. Unmatched quantize and dequantize nodes stay and run
as their own kernels (the partitioner already kept unmatched quantized convs
and linears on CPU).
"""
from typing import Dict

import torch
from torch.export import ExportedProgram
from torch.fx import Graph, Node

from ..fx_nodes import arg
from ..quant import q8ta_ops
from ..quant.q8ta_patterns import Match, match, per_tensor_qparams


def fuse_q8ta(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    for node in list(graph.nodes):
        if node.op == "call_function":
            found, _ = match(node)
            if found is not None:
                _fuse(graph, found)


def _fuse(graph: Graph, found: Match) -> None:
    out = per_tensor_qparams(found.output)[0]
    out_min, out_max = found.out_range()
    requantize = (out.scale, out.zero_point, out_min, out_max)
    with graph.inserting_before(found.output):
        activations = []
        for dq in found.inputs:
            q = per_tensor_qparams(dq)[0]
            activations += [dq.args[0], q.scale, q.zero_point]
        if found.kind == "add":
            fused = graph.call_function(q8ta_ops.q8ta_add.default, tuple(activations) + requantize)
        else:
            weight = _weight_args(graph, found.weight)
            bias = arg(found.anchor, "bias")
            if found.kind == "conv2d":
                conv = tuple(arg(found.anchor, name) for name in ("stride", "padding", "dilation", "groups"))
                fused = graph.call_function(
                    q8ta_ops.q8ta_conv2d.default, tuple(activations) + weight + (bias,) + conv + requantize
                )
            else:
                fused = graph.call_function(
                    q8ta_ops.q8ta_linear.default, tuple(activations) + weight + (bias,) + requantize
                )
    fused.meta["val"] = found.output.meta["val"]
    found.output.replace_all_uses_with(fused)


def _weight_args(graph: Graph, dq: Node):
    """(int8 weight, float scales, integer zero points) of a per-channel dequantize."""
    scales, zero_points = arg(dq, "scales"), arg(dq, "zero_points")
    if zero_points is None:
        # A constant, folded by the graph builder.
        zero_points = graph.call_function(torch.ops.aten.zeros_like.default, (scales,), {"dtype": torch.int32})
    return dq.args[0], scales, zero_points
