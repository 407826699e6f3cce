"""Folds inference batch norm into the convolution before it, and a following
relu / hardtanh / clamp into the convolution (`et_vk.vkd_conv2d_clamp`).

Batch norm after a convolution with constant weights is an affine map per
output channel: with s = gamma / sqrt(var + eps),
    w' = w * s[oc],   b' = (b - mean) * s + beta.
The new weight and bias are ops on the constants, which the graph builder
folds ahead of time. A convolution whose only user is a clamping activation
becomes one `vkd_conv2d_clamp` node: the conv kernels clamp in their epilogue,
which saves a dispatch and a round trip through memory per layer.
"""
import math
from typing import Dict, Optional

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx import Graph, Node

from ..fx_nodes import arg, fake_tensor, op_name
from ..quant.library import conv2d_clamp

_CONV = "aten.convolution.default"
_BATCH_NORM = "aten._native_batch_norm_legit_no_training.default"
_CONSTANT_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
aten = torch.ops.aten


def fuse_conv(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    constants = {spec.arg.name for spec in program.graph_signature.input_specs if spec.kind in _CONSTANT_KINDS}
    for node in list(graph.nodes):
        if node.op == "call_function" and op_name(node.target) == _BATCH_NORM:
            _fold_batch_norm(graph, node, constants)
    for node in list(graph.nodes):
        if node.op == "call_function" and op_name(node.target) == _CONV:
            _fuse_activation(graph, node)


def _is_constant(item, constants) -> bool:
    return item is None or (isinstance(item, Node) and item.op == "placeholder" and item.name in constants)


def _fold_batch_norm(graph: Graph, bn: Node, constants) -> None:
    conv = bn.args[0]
    if not (isinstance(conv, Node) and conv.op == "call_function" and op_name(conv.target) == _CONV):
        return
    if len(conv.users) != 1 or arg(conv, "transposed"):
        return
    gamma, beta, mean, var = (arg(bn, name) for name in ("weight", "bias", "running_mean", "running_var"))
    weight, bias = arg(conv, "weight"), arg(conv, "bias")
    if not all(_is_constant(item, constants) for item in (gamma, beta, mean, var, weight, bias)):
        return
    if weight is None or mean is None or var is None:
        return
    # Only the normalized output may be used (the saved statistics are empty in inference).
    if any(user.target.__name__ != "getitem" or user.args[1] != 0 for user in bn.users):
        return
    eps = float(arg(bn, "eps"))
    w_val = fake_tensor(weight)
    channels = w_val.shape[0]
    with graph.inserting_before(conv):
        scale = graph.call_function(aten.rsqrt.default, (graph.call_function(aten.add.Scalar, (var, eps)),))
        if gamma is not None:
            scale = graph.call_function(aten.mul.Tensor, (scale, gamma))
        shaped = graph.call_function(aten.view.default, (scale, [channels] + [1] * (w_val.dim() - 1)))
        new_weight = graph.call_function(aten.mul.Tensor, (weight, shaped))
        centered = graph.call_function(aten.neg.default, (mean,))
        if bias is not None:
            centered = graph.call_function(aten.sub.Tensor, (bias, mean))
        new_bias = graph.call_function(aten.mul.Tensor, (centered, scale))
        if beta is not None:
            new_bias = graph.call_function(aten.add.Tensor, (new_bias, beta))
    args = list(conv.args)
    args[1] = new_weight
    if len(args) > 2:
        args[2] = new_bias
    else:
        args.append(new_bias)
    conv.args = tuple(args)
    for user in list(bn.users):
        user.replace_all_uses_with(conv)
        graph.erase_node(user)
    graph.erase_node(bn)


def _bounds(act: Node) -> Optional[tuple]:
    """(min, max) of a clamping activation node, or None if it is not one we fuse."""
    name = op_name(act.target)
    if name == "aten.relu.default":
        return 0.0, math.inf
    if name == "aten.hardtanh.default":
        return float(arg(act, "min_val")), float(arg(act, "max_val"))
    if name == "aten.clamp.default":
        low, high = arg(act, "min"), arg(act, "max")
        if isinstance(low, Node) or isinstance(high, Node):
            return None
        return (-math.inf if low is None else float(low)), (math.inf if high is None else float(high))
    return None


def _only_user(node: Node) -> Optional[Node]:
    return next(iter(node.users)) if len(node.users) == 1 else None


def _residual_of(add: Node, conv: Node) -> Optional[Node]:
    """The other operand of `add` = conv + other (alpha 1, same sizes and dtype), or None."""
    if add.op != "call_function" or op_name(add.target) != "aten.add.Tensor" or arg(add, "alpha") != 1:
        return None
    a, b = add.args[0], add.args[1]
    other = b if a is conv else a if b is conv else None
    if not isinstance(other, Node) or other is conv:
        return None
    x, y = fake_tensor(other), fake_tensor(conv)
    if x is None or x.shape != y.shape or x.dtype != y.dtype:
        return None
    return other


def _fuse_activation(graph: Graph, conv: Node) -> None:
    """conv [+ residual] [-> relu / hardtanh / clamp] into one vkd_conv2d_clamp node."""
    user = _only_user(conv)
    if user is None or arg(conv, "transposed") or fake_tensor(conv).dtype != torch.float32:
        return
    residual = _residual_of(user, conv)
    add = user if residual is not None else None
    act = _only_user(add) if add is not None else user
    bounds = _bounds(act) if act is not None and act.op == "call_function" and act.args[0] is (add or conv) \
        else None
    if bounds is None:
        if add is None:
            return
        bounds, act = (-math.inf, math.inf), None
    last = act or add
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "transposed", "output_padding", "groups")
    with graph.inserting_before(last):
        fused = graph.call_function(conv2d_clamp.default,
                                    tuple(arg(conv, name) for name in names) + bounds + (residual,))
    fused.meta = dict(last.meta)
    last.replace_all_uses_with(fused)
    for node in (act, add, conv):
        if node is not None:
            graph.erase_node(node)
