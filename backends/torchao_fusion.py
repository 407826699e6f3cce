"""Fuses torchao's quantized linear and embedding patterns into vkdelegate's et_vk ops.

dequantize_affine(weight) -> linear           => et_vk.vkd_linear_qw
dequantize_affine(quantize_affine(x)) -> linear (int8 per-token activations)
                                              => et_vk.vkd_linear_dq8a_qw
dequantize_affine(weight) -> embedding        => et_vk.vkd_embedding_qw
The weight goes through et_vk.vkd_pack_qweight, which the graph builder folds, so
the blob holds only packed words. Patterns are those of quant/torchao_ops.py, the
same the registry accepted; the dequantize nodes then die.
"""
from typing import Dict

from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import constant_inputs, insert_call
from ..quant import torchao_ops
from ..quant.torchao_ops import match_embedding, match_linear


def fuse_torchao_quantized(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    signature = program.graph_signature
    constants = constant_inputs(program)
    et_vk = exir_ops.edge.et_vk
    packed_of: Dict[tuple, Node] = {}

    targets = {**signature.inputs_to_parameters, **signature.inputs_to_buffers,
               **signature.inputs_to_lifted_tensor_constants}

    def zeros_needed(node):
        """Symmetric quantization still exports zero points, all zero: leave them out."""
        if node is None:
            return None
        target = targets[node.name]
        value = program.state_dict.get(target, program.constants.get(target))
        return node if value is None or bool(value.ne(0).any()) else None

    def is_constant(node):
        return node is None or (node.op == "placeholder" and node.name in constants)

    def packed(pattern, before):
        key = (pattern.weight, pattern.bits)
        if key not in packed_of:
            first = next(iter(pattern.weight.users))
            packed_of[key] = insert_call(graph, et_vk.vkd_pack_qweight.default, (pattern.weight, pattern.bits), first)
        return packed_of[key]

    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        fused = None
        if torchao_ops.is_op(node, "aten.linear"):
            pattern, activation, reason = match_linear(node)
            if pattern is None or not all(map(is_constant, (pattern.weight, pattern.scales, pattern.zeros))):
                continue
            x, _, bias = torchao_ops.linear_parts(node)
            op = et_vk.vkd_linear_qw.default
            if activation is not None:
                x, op = activation.x, et_vk.vkd_linear_dq8a_qw.default
            fused = insert_call(graph, op, (x, packed(pattern, node), pattern.scales, zeros_needed(pattern.zeros), bias,
                             pattern.bits, pattern.group_size), node)
        elif torchao_ops.is_op(node, "aten.embedding"):
            pattern, reason = match_embedding(node)
            if pattern is None or not all(map(is_constant, (pattern.weight, pattern.scales, pattern.zeros))):
                continue
            indices = node.args[1]
            dim = pattern.weight.meta["val"].shape[1]
            fused = insert_call(graph, et_vk.vkd_embedding_qw.default, (packed(pattern, node), pattern.scales,
                                                          zeros_needed(pattern.zeros),
                                                          indices, pattern.bits, pattern.group_size, dim), node)
        if fused is not None:
            node.replace_all_uses_with(fused)
            graph.erase_node(node)
