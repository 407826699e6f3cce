"""A float linear whose only user is a relu or a gelu becomes one et_vk.vkd_linear_act node: the
matrix-product kernels apply the activation as they store (glsl/activation.glslh), which saves a
dispatch, its barrier and a round trip of the output through memory (an MLP's layers, a
transformer's FFN). Quantized linears have their own fusions (linear_fusion.py)."""
from typing import Dict, Optional

from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import arg_at, fake_tensor, op_name
from ..quant.library import linear_act


def _activation(node: Node) -> Optional[str]:
    """linear_act's name for the activation node is, or None."""
    name = op_name(node.target) if node.op == "call_function" else ""
    if name == "aten.relu.default":
        return "relu"
    if name == "aten.gelu.default":
        approximate = arg_at(node, 1, "approximate", "none")
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(approximate)
    return None


def fuse_linear_activation(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or op_name(node.target) != "aten.linear.default" or len(node.users) != 1:
            continue
        act = next(iter(node.users))
        name = _activation(act)
        out = fake_tensor(node)
        if name is None or out is None or not out.is_floating_point():
            continue
        x, weight = node.args[0], node.args[1]
        bias = arg_at(node, 2, "bias")
        with graph.inserting_before(act):
            fused = graph.call_function(linear_act.default, (x, weight, bias, name))
        fused.meta = dict(act.meta)
        act.replace_all_uses_with(fused)
        graph.erase_node(act)
        graph.erase_node(node)
