"""Fuses the weight-only quantized linears of a decoder layer into et_vk.vkd_linear_qw_fused.

At decode each linear is a GEMV that is too small to fill the GPU, and the norm and the
elementwise ops around them are dispatches of their own. Per input x (after
backends/torchao_fusion.py made the et_vk.vkd_linear_qw nodes):
  linears of x with one K, bits, group size, zero points or none:
    silu(lin_a(x)) * lin_b(x)                 => one fused op, silu_mul (w1/w3)
    the others, up to three per op            => one fused op, an output each (q/k/v)
  a fused op of one output whose output only feeds r + out (or out + r), same sizes
                                              => its residual (wo, w2)
  x = rms_norm(h, [K], weight, eps) read by nothing but one fused op's linears
                                              => the op's norm, of h
A Llama decode layer: [norm + q/k/v] [wo + residual] [norm + w1/w3 + silu * mul]
[w2 + residual]; the final norm and the output linear: one op. Intermediates fuse only
where they have no other user. dq8a linears (vkd_linear_dq8a_qw) are left alone.
"""
import operator
from collections import defaultdict
from typing import Dict, List, Optional

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import arg_at, fake_tensor
from ..quant import torchao_ops  # noqa: F401  (defines et_vk.vkd_linear_qw_fused)

_LINEAR = exir_ops.edge.et_vk.vkd_linear_qw.default
_FUSED = exir_ops.edge.et_vk.vkd_linear_qw_fused.default
_RMS_NORM = exir_ops.edge.aten.rms_norm.default
_SILU = exir_ops.edge.aten.silu.default
_MUL = exir_ops.edge.aten.mul.Tensor
_ADD = exir_ops.edge.aten.add.Tensor
_MAX_WEIGHTS = 3


def _sizes(node: Node) -> Optional[List[str]]:
    value = fake_tensor(node)
    return None if value is None else [str(size) for size in value.shape]


def _only_user(node: Node) -> Optional[Node]:
    return next(iter(node.users)) if len(node.users) == 1 else None


def _linears_of(x: Node) -> Dict[tuple, List[Node]]:
    """x's weight-only quantized linears (x as their input), by what one fused op must share."""
    groups = defaultdict(list)
    for user in x.users:
        if user.op == "call_function" and user.target is _LINEAR and user.args[0] is x:
            bits, group_size = user.args[5], user.args[6]
            groups[(bits, group_size, user.args[3] is None)].append(user)
    return groups


def _silu_mul(a: Node, linears: List[Node]) -> Optional[tuple]:
    """(b, mul) if silu(a) * b (or b * silu(a)) with b among linears (a, b, silu used only there)."""
    silu = _only_user(a)
    if silu is None or silu.target is not _SILU:
        return None
    mul = _only_user(silu)
    if mul is None or mul.target is not _MUL or len(mul.args) != 2 or silu not in mul.args:
        return None
    b = mul.args[1] if mul.args[0] is silu else mul.args[0]
    if b is a or b not in linears or _only_user(b) is not mul or _sizes(a) != _sizes(b):
        return None
    return b, mul


def _residual_add(out: Node) -> Optional[tuple]:
    """(add, residual) where out's one user is out + residual or residual + out, of out's sizes."""
    add = _only_user(out)
    if add is None or add.target is not _ADD or len(add.args) != 2 or add.kwargs.get("alpha", 1) != 1:
        return None
    residual = add.args[1] if add.args[0] is out else add.args[0]
    if not isinstance(residual, Node) or residual is out:
        return None
    rv, ov = fake_tensor(residual), fake_tensor(out)
    if rv is None or rv.dtype != torch.float32 or _sizes(residual) != _sizes(out) or _sizes(add) != _sizes(out):
        return None
    return add, residual


def _norm_parts(x: Node) -> Optional[tuple]:
    """(input, normalized_shape, weight, eps) of x = rms_norm over the last dimension, else None."""
    if x.op != "call_function" or x.target is not _RMS_NORM:
        return None
    h, shape, weight = arg_at(x, 0, "input"), arg_at(x, 1, "normalized_shape"), arg_at(x, 2, "weight")
    eps = arg_at(x, 3, "eps")
    hv = fake_tensor(h)
    if hv is None or hv.dtype != torch.float32 or list(shape) != [hv.shape[-1]]:
        return None
    return h, list(shape), weight, float(eps) if eps is not None else torch.finfo(torch.float32).eps


def _nodes_in(args) -> List[Node]:
    nodes = []
    torch.fx.node.map_arg(args, nodes.append)
    return nodes


def _insert(graph, args: tuple, before: Node) -> Node:
    with graph.inserting_before(before):
        node = graph.call_function(_FUSED, args)
    fakes = torch.fx.node.map_arg(args, lambda item: item.meta["val"])
    from torch._guards import detect_fake_mode

    tensors = [item for item in torch.utils._pytree.tree_leaves(fakes) if isinstance(item, torch.Tensor)]
    with detect_fake_mode(tensors):
        node.meta["val"] = _FUSED(*fakes)
    return node


def _fuse(graph, order: Dict[Node, int], x: Node, linears: List[Node], silu_mul: Optional[Node],
          take_norm: bool) -> List[Node]:
    """One fused op of linears (all reading x); silu_mul: the mul node the pair replaces.
    Returns the nodes it erased."""
    replaced = silu_mul if silu_mul is not None else linears[0] if len(linears) == 1 else None
    residual = _residual_add(replaced) if replaced is not None else None
    norm = _norm_parts(x) if take_norm else None
    h, shape, weight, eps = norm if norm is not None else (x, [], None, 0.0)
    # Where every input is defined and before every user: at the residual's add, else the first linear.
    before = residual[0] if residual is not None else min(linears, key=order.__getitem__)
    bits, group_size = linears[0].args[5], linears[0].args[6]
    args = (h, [n.args[1] for n in linears], [n.args[2] for n in linears], [n.args[3] for n in linears],
            [n.args[4] for n in linears], bits, group_size, shape, weight, eps, silu_mul is not None,
            residual[1] if residual is not None else None)
    # Inputs defined after that place (the later linears' weight packing, which reads only
    # constants) move before it.
    late = [node for node in _nodes_in(args) if order.get(node, -1) > order[before]]
    for node in sorted(late, key=order.__getitem__):
        if any(order.get(source, len(order)) > order[before] for source in node.all_input_nodes):
            return []  # not movable: leave these linears unfused
    for node in sorted(late, key=order.__getitem__):
        before.prepend(node)
    fused = _insert(graph, args, before)
    results = [replaced] if replaced is not None else linears
    if residual is not None:
        results = [residual[0]]
    for index, old in enumerate(results):
        with graph.inserting_before(before):
            item = graph.call_function(operator.getitem, (fused, index))
        item.meta["val"] = fused.meta["val"][index]
        old.replace_all_uses_with(item)
    # The replaced nodes, users first.
    dead = results + ([silu_mul, silu_mul.args[0]] if silu_mul is not None else []) + linears
    if residual is not None:
        dead += [replaced]
    if norm is not None:
        dead.append(x)
    dead = list(dict.fromkeys(dead))
    for node in dead:
        graph.erase_node(node)
    return dead


def fuse_linears(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    while True:
        fused_any = False
        order = {node: index for index, node in enumerate(graph.nodes)}
        erased = set()
        for x in list(graph.nodes):
            if x in erased:
                continue
            groups = _linears_of(x)
            if not groups:
                continue
            # Units: pairs (silu(a) * b), then the rest up to three per op, in graph order.
            units = []
            for linears in groups.values():
                rest = sorted(linears, key=order.__getitem__)
                for a in list(rest):
                    found = _silu_mul(a, rest) if a in rest else None
                    if found is not None:
                        b, mul = found
                        units.append(([a, b], mul))
                        rest.remove(a)
                        rest.remove(b)
                for start in range(0, len(rest), _MAX_WEIGHTS):
                    units.append((rest[start:start + _MAX_WEIGHTS], None))
            # A norm feeding nothing but one op's linears goes into that op.
            norm_unit = None
            if len(units) == 1 and _norm_parts(x) is not None and set(x.users) == set(units[0][0]):
                norm_unit = 0
            for index, (linears, mul) in enumerate(units):
                # A lone linear with nothing to fuse stays as it is.
                if len(linears) == 1 and norm_unit != index and _residual_add(linears[0]) is None:
                    continue
                dead = _fuse(graph, order, x, linears, mul, norm_unit == index)
                erased.update(dead)
                fused_any = fused_any or bool(dead)  # an unmovable unit stays (and must not loop)
        if not fused_any:
            break
