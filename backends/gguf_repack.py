"""Q4_0 and Q8_0 GGUF linears and embeddings onto the weight-only int4 / int8 ops.

et_vk.vkd_linear_gguf(x, words, Q4_0 | Q8_0, n, k, bias)  => et_vk.vkd_linear_qw(x, packed, scales, None, bias, 4 | 8, 32)
et_vk.vkd_embedding_gguf(words, indices, Q4_0 | Q8_0, ...) => et_vk.vkd_embedding_qw(packed, scales, None, indices, ...)
The two layouts hold the same numbers (quant/gguf_linear.py: REPACKED_BITS), so the output is
unchanged, and the weight-only path brings what the block kernels lack: the decode fusions of
backends/linear_fusion.py (rms_norm / q,k,v / silu*mul / residual in one GEMV) and the
tensor-core prefill. The bytes grow from 18 to 20 per 32 values (Q4_0: an fp32 scale where the
block has an fp16 one). et_vk.vkd_gguf_to_qw runs once per weight (tied weights share it) and
the graph builder folds it: the blob holds the repacked weight, not the blocks.
The compile option gguf_repack=False keeps the GGUF block kernels.
"""
import operator
from typing import Dict, Tuple

from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import constant_inputs, insert_call
from ..quant.gguf_linear import REPACKED_BITS, REPACKED_GROUP


def repack_gguf(program: ExportedProgram, options: Dict) -> None:
    if not options.get("gguf_repack", True):
        return
    graph = program.graph_module.graph
    constants = constant_inputs(program)
    et_vk = exir_ops.edge.et_vk
    linear, embedding = et_vk.vkd_linear_gguf.default, et_vk.vkd_embedding_gguf.default
    repacked: Dict[Tuple[Node, int], Tuple[Node, Node]] = {}

    def is_constant(node) -> bool:
        # A placeholder of the program's constants, or what the other passes made of them (vkd_pack_gguf_words).
        if not isinstance(node, Node):
            return False
        if node.op == "placeholder":
            return node.name in constants
        return node.op == "call_function" and all(is_constant(arg) for arg in node.all_input_nodes)

    def parts(words: Node, ggml_type: int, n: int, k: int) -> Tuple[Node, Node]:
        key = (words, ggml_type)
        if key not in repacked:
            before = first_call
            if words.op == "call_function":  # the wheel route's vkd_pack_gguf_words(raw): up to the top too
                if words is not first_call and all(arg.op == "placeholder" for arg in words.all_input_nodes):
                    first_call.prepend(words)
                before = words.next
            both = insert_call(graph, et_vk.vkd_gguf_to_qw.default, (words, ggml_type, n, k), before)
            repacked[key] = (insert_call(graph, operator.getitem, (both, 0), before),
                             insert_call(graph, operator.getitem, (both, 1), before))
        return repacked[key]

    # The repacks go before the first call: defined before every use (a tied weight's too, and
    # the fused linears of backends/linear_fusion.py, which may move a use up to its first sibling).
    first_call = next((node for node in graph.nodes if node.op != "placeholder"), None)
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in (linear, embedding):
            continue
        if node.target is linear:
            x, words, ggml_type, n, k = node.args[:5]
            bias = node.args[5] if len(node.args) > 5 else node.kwargs.get("bias")
        else:
            words, indices, ggml_type, n, k = node.args[:5]
        if ggml_type not in REPACKED_BITS or not is_constant(words):
            continue
        packed, scales = parts(words, ggml_type, n, k)
        bits = REPACKED_BITS[ggml_type]
        if node.target is linear:
            fused = insert_call(graph, et_vk.vkd_linear_qw.default,
                                (x, packed, scales, None, bias, bits, REPACKED_GROUP), node)
        else:
            fused = insert_call(graph, et_vk.vkd_embedding_qw.default,
                                (packed, scales, None, indices, bits, REPACKED_GROUP, k), node)
        node.replace_all_uses_with(fused)
        graph.erase_node(node)
