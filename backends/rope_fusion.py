"""Fuses the rotary position embedding into one op.

x * cos + rotate_half(x) * sin, with rotate_half(x) = cat([-x2, x1], -1) for the two
halves x1, x2 of the last dim, exports to seven nodes (mul, split_with_sizes_copy and its
two getitems, neg, cat, mul, add): seven dispatches and three intermediates per q and k of
each attention layer. With cos and sin of x's last two sizes [T, D] (x [..., T, D]), or [T, 1, D]
with x [..., T, H, D] (one row per position, shared by the heads), it becomes
et_vk.vkd_rope(x, cos, sin), one dispatch. Other broadcasts are left alone.
"""
import operator
from typing import Dict, Optional, Tuple

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import fake_tensor, insert_call
from ..quant.library import rope_table_fits  # (and defines et_vk.vkd_rope)

aten = exir_ops.edge.aten


def _operands(node: Node, target) -> Optional[Tuple[Node, Node]]:
    if node.op == "call_function" and node.target == target and len(node.args) == 2 and not node.kwargs:
        a, b = node.args
        if isinstance(a, Node) and isinstance(b, Node):
            return a, b
    return None



def _rotated_half(node: Node) -> Optional[Node]:
    """x where node is cat([neg(x[..., h:]), x[..., :h]], -1) through split_with_sizes_copy(x, [h, h], -1)."""
    if node.op != "call_function" or node.target != aten.cat.default:
        return None
    parts = node.args[0]
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    if len(parts) != 2 or fake_tensor(node) is None or dim not in (-1, fake_tensor(node).dim() - 1):
        return None
    negated, first = parts
    if negated.op != "call_function" or negated.target != aten.neg.default:
        return None
    second = negated.args[0]
    if not all(isinstance(p, Node) and p.target is operator.getitem for p in (first, second)):
        return None
    split = first.args[0]
    if second.args[0] is not split or (first.args[1], second.args[1]) != (0, 1):
        return None
    if split.target != aten.split_with_sizes_copy.default:
        return None
    x, sizes = split.args[0], list(split.args[1])
    split_dim = split.args[2] if len(split.args) > 2 else split.kwargs.get("dim", 0)
    val = fake_tensor(x)
    if val is None or split_dim not in (-1, val.dim() - 1) or len(sizes) != 2 or sizes[0] != sizes[1]:
        return None
    return x


def _match(node: Node) -> Optional[Tuple[Node, Node, Node]]:
    """(x, cos, sin) if node is x * cos + rotate_half(x) * sin with cos, sin [T, D] or [T, 1, D]."""
    terms = _operands(node, aten.add.Tensor)
    if terms is None:
        return None
    for direct, rotated in (terms, terms[::-1]):
        direct_ops, rotated_ops = _operands(direct, aten.mul.Tensor), _operands(rotated, aten.mul.Tensor)
        if direct_ops is None or rotated_ops is None:
            continue
        for cat, sin in (rotated_ops, rotated_ops[::-1]):
            x = _rotated_half(cat)
            if x is None or x not in direct_ops:
                continue
            cos = direct_ops[1] if direct_ops[0] is x else direct_ops[0]
            vals = [fake_tensor(item) for item in (x, cos, sin, node)]
            if any(val is None for val in vals):
                continue
            x_val, cos_val, sin_val, out_val = vals
            if (not rope_table_fits(tuple(x_val.shape), tuple(cos_val.shape))
                    or tuple(cos_val.shape) != tuple(sin_val.shape) or tuple(out_val.shape) != tuple(x_val.shape)
                    or len({x_val.dtype, cos_val.dtype, sin_val.dtype, out_val.dtype}) != 1
                    or x_val.dtype not in (torch.float32, torch.float16)):
                continue
            return x, cos, sin
    return None


def fuse_rope(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    target = exir_ops.edge.et_vk.vkd_rope.default
    for node in list(graph.nodes):
        match = _match(node)
        if match is None:
            continue
        fused = insert_call(graph, target, match, node)
        node.replace_all_uses_with(fused)
        graph.erase_node(node)
