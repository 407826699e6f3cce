"""Fuses the rotary position embedding into one op.

x * cos + rotate_half(x) * sin, with rotate_half(x) = cat([-x2, x1], -1) for the two
halves x1, x2 of the last dim, exports to seven nodes (mul, split_with_sizes_copy and its
two getitems, neg, cat, mul, add): seven dispatches and three intermediates per q and k of
each attention layer. With cos and sin of x's last two sizes [T, D] (x [..., T, D]), or [T, 1, D]
with x [..., T, H, D] (one row per position, shared by the heads), it becomes
et_vk.vkd_rope(x, cos, sin), one dispatch. Other broadcasts are left alone.

Then, in an attention layer over a KV cache (examples/models/llama.py), the ropes of q and k
and the cache writes feed the attention:

    k_new = index_put(k_cache, [None, input_pos], vkd_rope(k, cos, sin))
    v_new = index_put(v_cache, [None, input_pos], v)
    vkd_sdpa_kv_cache(vkd_rope(q, cos, sin), k_new, v_new, input_pos)

four dispatches, each with its barrier, per layer and token, and the attention's two. All of it
becomes et_vk.vkd_sdpa_rope_kv(q, k, v, cos, sin, k_cache, v_cache, input_pos, scale) -> (out,
k_new, v_new), which writes the caches in place as index_put did (they stay delegate state) and at
decode ropes and writes inside the attention's split kernel: the attention's dispatches alone.
The compile option fuse_rope_attention=False makes et_vk.vkd_rope_kv_update(q, k, v, cos, sin,
k_cache, v_cache, input_pos) -> (rope(q), k_new, v_new) instead, a dispatch of its own before
vkd_sdpa_kv_cache (to compare). Only that exact pattern is fused: both ropes on one table, the
caches mutable buffers read only by their update, one positions tensor for the writes and the
attention, and nothing else reading rope(q), rope(k) or the updated caches.
"""
import operator
from typing import Dict, Optional, Tuple

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import fake_tensor, insert_call
from ..quant.library import rope_table_fits  # (and defines et_vk.vkd_rope, et_vk.vkd_rope_kv_update)

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


def _call(node, target) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and node.target == target


def _cache_write(node, positions: Node, state: frozenset) -> Optional[Tuple[Node, Node]]:
    """(cache, values) if node is index_put(cache, [None, positions], values) into a mutable buffer
    that only this write reads, along dim 1, not accumulating."""
    if not _call(node, aten.index_put.default) or node.kwargs.get("accumulate", False):
        return None
    if len(node.args) > 3 and node.args[3]:
        return None
    cache, indices, values = node.args[:3]
    if list(indices) != [None, positions] or not isinstance(values, Node):
        return None
    if cache.op != "placeholder" or cache.name not in state or len(cache.users) != 1:
        return None
    return cache, values


def _rope_kv_match(node: Node, state: frozenset) -> Optional[Tuple[Tuple[Node, ...], Node, Node, Node]]:
    """((q, k, v, cos, sin, k_cache, v_cache, input_pos), rope(q), k_new, v_new) where node is the
    attention over the caches that the pattern above feeds."""
    rope = exir_ops.edge.et_vk.vkd_rope.default
    if not _call(node, exir_ops.edge.et_vk.vkd_sdpa_kv_cache.default) or len(node.args) < 4:
        return None
    q_rot, k_new, v_new, positions = node.args[:4]
    k_write, v_write = _cache_write(k_new, positions, state), _cache_write(v_new, positions, state)
    if not _call(q_rot, rope) or k_write is None or v_write is None:
        return None
    (k_cache, k_rot), (v_cache, v) = k_write, v_write
    if not _call(k_rot, rope) or list(k_rot.args[1:]) != list(q_rot.args[1:]) or len(k_rot.users) != 1:
        return None
    if set(q_rot.users) != {node}:
        return None
    for update in (k_new, v_new):
        if any(user is not node and user.op != "output" for user in update.users):
            return None
    q, (k, cos, sin) = q_rot.args[0], k_rot.args
    return (q, k, v, cos, sin, k_cache, v_cache, positions), q_rot, k_new, v_new


def fuse_rope_kv_update(program: ExportedProgram, options: Dict) -> None:
    from ..op_registry import REGISTRY  # (the registry imports the passes' ops)

    graph = program.graph_module.graph
    graph.eliminate_dead_code()  # the earlier fusions' leftovers (the transposes into sdpa) still read rope(q)
    signature = program.graph_signature
    mutated = set(signature.buffers_to_mutate.values())
    state = frozenset(name for name, target in signature.inputs_to_buffers.items() if target in mutated)
    with_attention = options.get("fuse_rope_attention", True)
    target = (exir_ops.edge.et_vk.vkd_sdpa_rope_kv.default if with_attention
              else exir_ops.edge.et_vk.vkd_rope_kv_update.default)
    for node in list(graph.nodes):
        match = _rope_kv_match(node, state)
        if match is None:
            continue
        operands, q_rot, k_new, v_new = match
        kwargs = {}
        if with_attention:
            scale = node.args[4] if len(node.args) > 4 else node.kwargs.get("scale")
            kwargs = {} if scale is None else {"scale": scale}
        fused = insert_call(graph, target, operands, node, kwargs)
        entry, _ = REGISTRY.lookup(fused)
        if entry is None:  # shapes or dtypes the op does not take: leave the pattern as it is
            graph.erase_node(fused)
            continue
        # The fused op's outputs: (attention out or rope(q), k_new, v_new).
        for index, replaced in enumerate((node if with_attention else q_rot, k_new, v_new)):
            with graph.inserting_before(node):
                item = graph.call_function(operator.getitem, (fused, index))
            item.meta["val"] = fused.meta["val"][index]
            replaced.replace_all_uses_with(item)
            if index > 0:
                # The buffer's mutation is now this output (the graph's output node uses it already).
                signature.replace_all_uses(replaced.name, item.name)
        k_rot = k_new.args[2]
        for dead in ((node,) if with_attention else ()) + (q_rot, k_new, v_new, k_rot):
            graph.erase_node(dead)
