"""Fuses the executorch wheel's GGUF weights into vkdelegate's GGUF kernels.

dequantize_gguf(raw) -> linear                    => et_vk.vkd_linear_gguf
dequantize_gguf(raw) -> t | permute -> mm | addmm => et_vk.vkd_linear_gguf
dequantize_gguf(raw) -> embedding                 => et_vk.vkd_embedding_gguf
The raw blocks go through et_vk.vkd_pack_gguf_words, which the graph builder folds,
so the blob holds the blocks' words once (shared by every use, tied weights too), never a float copy.
Patterns are those of quant/gguf_dequant.py, the same the registry accepted; the
dequantize nodes then die.
"""
from typing import Dict

from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import constant_inputs, insert_call
from ..quant import gguf_dequant


def fuse_gguf_dequantize(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    constants = constant_inputs(program)
    et_vk = exir_ops.edge.et_vk
    words_of: Dict[Node, Node] = {}  # raw blocks -> their words: a tied weight is dequantized once per use

    for node in list(graph.nodes):
        if not gguf_dequant.is_op(node, gguf_dequant.DEQUANTIZE):
            continue
        dequant, reason = gguf_dequant.match_dequantize(node)
        found, reason = (None, reason) if dequant is None else gguf_dequant.uses(dequant)
        if found is None:
            continue  # the partitioner took it only if it fuses, so it is not in this partition's graph
        if dequant.raw.name not in constants:
            raise ValueError(f"{node.name}: the GGUF blocks {dequant.raw.name} are not a constant of the program")
        if dequant.raw not in words_of:
            words_of[dequant.raw] = insert_call(graph, et_vk.vkd_pack_gguf_words.default, (dequant.raw,), node)
        words = words_of[dequant.raw]
        fmt = dequant.format.ggml_type
        for kind, use, through in found:
            if kind == "embedding":
                fused = insert_call(graph, et_vk.vkd_embedding_gguf.default,
                            (words, use.args[1], fmt, dequant.n, dequant.k), use)
                target = use
            else:
                fused = insert_call(graph, et_vk.vkd_linear_gguf.default,
                            (use.x, words, fmt, dequant.n, dequant.k, use.bias), use.node)
                target = use.node
            target.replace_all_uses_with(fused)
            graph.erase_node(target)
        for user in list(node.users):  # the transposes, now unused
            graph.erase_node(user)
        graph.erase_node(node)
