"""A float linear, then a relu, a gelu or a silu (its only user), then a residual add (`x + act(linear(...))`, the
activation's or else the linear's only user) becomes one et_vk.vkd_linear_act node: the matrix-product
kernels apply the activation and add the residual as they store (glsl/matmul_params.glslh), which saves
a dispatch per fused op, its barrier and a round trip of the output through memory (an MLP's layers, a
transformer's FFN and the adds after its output projection and second FFN linear). The add fuses only
with alpha 1 (alpha != 1 stays an add of its own) and an other operand of the output's sizes and dtype
(no broadcast, no type promotion). Quantized linears have their own fusions (linear_fusion.py)."""
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
    if name == "aten.silu.default":
        return "silu"
    if name == "aten.gelu.default":
        approximate = arg_at(node, 1, "approximate", "none")
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(approximate)
    return None


def _only_user(node: Node) -> Optional[Node]:
    return next(iter(node.users)) if len(node.users) == 1 else None


def _residual_of(add: Optional[Node], out: Node) -> Optional[Node]:
    """The other operand of `add` = out + other or other + out (alpha 1, out's sizes and dtype), or None."""
    if add is None or add.op != "call_function" or op_name(add.target) != "aten.add.Tensor" or len(add.args) != 2:
        return None
    if arg_at(add, 2, "alpha", 1) != 1:
        return None
    a, b = add.args
    other = b if a is out else a if b is out else None
    if not isinstance(other, Node) or other is out:
        return None
    x, y, z = fake_tensor(other), fake_tensor(out), fake_tensor(add)
    if x is None or y is None or z is None or x.shape != y.shape or z.shape != y.shape or not (
            x.dtype == y.dtype == z.dtype):
        return None
    return other


def fuse_linear_activation(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or op_name(node.target) != "aten.linear.default":
            continue
        out = fake_tensor(node)
        user = _only_user(node)
        if out is None or not out.is_floating_point() or user is None:
            continue
        name = _activation(user)
        act = user if name is not None else None
        last = act or node
        residual = _residual_of(_only_user(last), last)
        add = _only_user(last) if residual is not None else None
        if act is None and add is None:
            continue
        x, weight = node.args[0], node.args[1]
        bias = arg_at(node, 2, "bias")
        end = add or act
        with graph.inserting_before(end):
            fused = graph.call_function(linear_act.default, (x, weight, bias, name or "none", residual))
        fused.meta = dict(end.meta)
        end.replace_all_uses_with(fused)
        for done in (add, act, node):
            if done is not None:
                graph.erase_node(done)
