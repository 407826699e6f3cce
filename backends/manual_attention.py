"""Attention written out by hand, softmax(q @ k^T * scale) @ v, becomes one
aten.scaled_dot_product_attention node: the fused kernel with an online softmax instead of two
batched products, the scaling, the softmax and the transpose of k (five dispatches and their
barriers, and the score matrix's round trip through memory). Export decomposes the products into
bmm on [batch * heads, L, E] views (examples/models/transformer.py's block); drop_noop_copies has
already taken out the same-shape expands before them. Matched:

    bmm(view(softmax(scale(view(bmm(view(q), view(k^T))), dim=-1)), view(v))  [-> view to q's dims]

with scale a multiplication or division by a constant scalar (or none), k^T a permute swapping
k's last two dims, q [*, L, E], k [*, S, E], v [*, S, Ev] of one leading shape. The scores and
probabilities must have no other user (a model that returns them keeps its ops)."""
from typing import Dict, Optional

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import fake_tensor, insert_call, op_name

_VIEWS = ("aten.view_copy.default", "aten.clone.default", "dim_order_ops._clone_dim_order.default",
          "aten.alias_copy.default")


def _op(node, name: str) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and op_name(node.target) == name


def _single_user(node: Node) -> bool:
    return len(node.users) == 1


def _unviewed(node: Node) -> Node:
    """The tensor under a chain of views and identity copies that each feed only the next."""
    while any(_op(node, name) for name in _VIEWS) and isinstance(node.args[0], Node):
        node = node.args[0]
    return node


def _flattens(src: Node, flat: Node) -> bool:
    """flat has src's last two dims and its leading dims multiplied into one (or is src)."""
    a, b = fake_tensor(src), fake_tensor(flat)
    if a is None or b is None or a.dim() < 2 or b.dim() != 3:
        return False
    if str(a.shape[-1]) != str(b.shape[-1]) or str(a.shape[-2]) != str(b.shape[-2]):
        return False
    lead = 1
    for d in a.shape[:-2]:
        lead = lead * d
    return str(lead) == str(b.shape[0])


def _constant(program: ExportedProgram, item) -> Optional[float]:
    """A scalar's value: a Python number, or a one-element constant tensor of the program."""
    if isinstance(item, (int, float)) and not isinstance(item, bool):
        return float(item)
    if not isinstance(item, Node) or item.op != "placeholder":
        return None
    signature = program.graph_signature
    target = (signature.inputs_to_lifted_tensor_constants.get(item.name)
              or signature.inputs_to_parameters.get(item.name) or signature.inputs_to_buffers.get(item.name))
    value = program.constants.get(target, program.state_dict.get(target)) if target else None
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.reshape(()))
    return None


def _scaled(program: ExportedProgram, node: Node):
    """(scores, scale) where node is scores * c, c * scores or scores / c; else (node, 1.0)."""
    if _op(node, "aten.mul.Tensor") or _op(node, "aten.mul.Scalar"):
        for i in (0, 1):
            c = _constant(program, node.args[1 - i])
            if c is not None and isinstance(node.args[i], Node):
                return node.args[i], c
    if _op(node, "aten.div.Tensor") or _op(node, "aten.div.Scalar"):
        c = _constant(program, node.args[1])
        if c not in (None, 0.0):
            return node.args[0], 1.0 / c
    return node, 1.0


def _match(program: ExportedProgram, bmm2: Node):
    """(q, k, v, scale, the node the attention's output replaces) for a matching chain, or None."""
    probs_flat, v_flat = bmm2.args[0], bmm2.args[1]
    probs = _unviewed(probs_flat)
    if not _op(probs, "aten._softmax.default") or probs.args[2] or not _single_user(probs):
        return None
    scaled = probs.args[0]
    rank = fake_tensor(scaled).dim() if fake_tensor(scaled) is not None else 0
    if probs.args[1] not in (-1, rank - 1) or not _single_user(scaled):
        return None
    scores_view, scale = _scaled(program, scaled)
    if scale != 1.0 and not _single_user(scores_view):
        return None
    bmm1 = _unviewed(scores_view)
    if not _op(bmm1, "aten.bmm.default") or not _single_user(bmm1):
        return None
    q, k_t, v = _unviewed(bmm1.args[0]), _unviewed(bmm1.args[1]), _unviewed(v_flat)
    if not _op(k_t, "aten.permute_copy.default"):
        return None
    k = k_t.args[0]
    r = fake_tensor(k).dim() if fake_tensor(k) is not None else 0
    if r < 2 or list(k_t.args[1]) not in (list(range(r - 2)) + [r - 1, r - 2], list(range(r - 2)) + [-1, -2]):
        return None
    fq, fk, fv = fake_tensor(q), fake_tensor(k), fake_tensor(v)
    if fq is None or fk is None or fv is None or not fq.is_floating_point():
        return None
    if not (fq.dim() == fk.dim() == fv.dim() and fq.dtype == fk.dtype == fv.dtype):
        return None
    if [str(d) for d in fq.shape[:-2]] != [str(d) for d in fk.shape[:-2]] or \
            [str(d) for d in fk.shape[:-2]] != [str(d) for d in fv.shape[:-2]]:
        return None
    if str(fk.shape[-1]) != str(fq.shape[-1]) or str(fv.shape[-2]) != str(fk.shape[-2]):
        return None
    if not (_flattens(q, bmm1.args[0]) and _flattens(k_t, bmm1.args[1]) and _flattens(v, v_flat)
            and _flattens(scaled, probs_flat)):
        return None
    # The output: bmm2 itself where q is already [B, L, E], else the view of bmm2 back to q's dims.
    if fq.dim() == 3:
        return q, k, v, scale, bmm2
    out = next(iter(bmm2.users)) if _single_user(bmm2) else None
    want = list(fq.shape[:-1]) + [fv.shape[-1]]
    if out is None or not _op(out, "aten.view_copy.default") or \
            [str(d) for d in fake_tensor(out).shape] != [str(d) for d in want]:
        return None
    return q, k, v, scale, out


def fuse_manual_attention(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    sdpa = exir_ops.edge.aten.scaled_dot_product_attention.default
    for node in list(graph.nodes):
        if not _op(node, "aten.bmm.default"):
            continue
        found = _match(program, node)
        if found is None:
            continue
        q, k, v, scale, out = found
        fused = insert_call(graph, sdpa, (q, k, v), before=out, kwargs={"scale": scale})
        out.replace_all_uses_with(fused)  # the chain left without users goes with run_passes' dead code
