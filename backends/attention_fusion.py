"""Fuses attention over a KV cache into one op that reads the positions on the GPU.

A Llama with a cache (examples/models/llama.py) attends with

    sdpa(q.transpose(1, 2), k_cache.transpose(1, 2), v_cache.transpose(1, 2),
         attn_mask=arange(S)[None, :] <= input_pos[:, None], enable_gqa=True).transpose(1, 2)

q [B, T, H, D], caches [B, S, KVH, D]: three transposes in, one out (four copies), and an sdpa
that visits all S cache positions of every query, however short the context. It becomes
et_vk.vkd_sdpa_kv_cache(q, k_cache, v_cache, input_pos): no transposes, and each query row
visits only the keys 0..input_pos[t]. The mask must be exactly that one (positions compared
with an arange over the whole cache); anything else is left alone.
"""
from typing import Dict, Optional, Tuple

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import fake_tensor, insert_call
from ..quant import library  # noqa: F401  (defines et_vk.vkd_sdpa_kv_cache)

aten = exir_ops.edge.aten
_HEADS_SWAP = [0, 2, 1, 3]



def _call(node, target) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and node.target == target


def _unswapped(node) -> Optional[Node]:
    """x where node is permute_copy(x, [0, 2, 1, 3]) of a rank-4 x."""
    if _call(node, aten.permute_copy.default) and list(node.args[1]) == _HEADS_SWAP and fake_tensor(node.args[0]) is not None:
        return node.args[0]
    return None


def _column(node, dim: int) -> Optional[Node]:
    """x where node is unsqueeze_copy(x, dim) (or a view to that shape) of a 1-D x."""
    if _call(node, aten.unsqueeze_copy.default) and node.args[1] in (dim, dim - 2):
        source = node.args[0]
    elif _call(node, aten.view_copy.default):
        source = node.args[0]
    else:
        return None
    val, out = fake_tensor(source), fake_tensor(node)
    if val is None or out is None or val.dim() != 1:
        return None
    want = (1, val.shape[0]) if dim == 0 else (val.shape[0], 1)
    return source if tuple(out.shape) == want else None


def _is_arange(node, length: int) -> bool:
    """node is arange(length) (start 0, step 1)."""
    if _call(node, aten.arange.start_step):
        start, end = node.args[0], node.args[1]
        step = node.args[2] if len(node.args) > 2 else node.kwargs.get("step", 1)
        return (start, end, step) == (0, length, 1)
    if _call(node, aten.arange.default):
        return node.args[0] == length
    return False


def _positions(mask, length: int) -> Optional[Node]:
    """input_pos where mask is arange(length)[None, :] <= input_pos[:, None] (or the ge mirror)."""
    if _call(mask, aten.le.Tensor):
        keys, queries = mask.args[0], mask.args[1]
    elif _call(mask, aten.ge.Tensor):
        queries, keys = mask.args[0], mask.args[1]
    else:
        return None
    arange, positions = _column(keys, 0), _column(queries, 1)
    if arange is None or positions is None or not _is_arange(arange, length):
        return None
    if fake_tensor(positions).dtype not in (torch.int32, torch.int64):
        return None
    return positions


def _match(node: Node) -> Optional[Tuple[Tuple[Node, Node, Node, Node], Optional[float]]]:
    """((q, k_cache, v_cache, input_pos), scale) when node is the cached attention above."""
    if not _call(node, aten.scaled_dot_product_attention.default):
        return None
    names = ["query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"]
    defaults = [None, None, None, None, 0.0, False, None, False]
    args = dict(zip(names, defaults))
    args.update(zip(names, node.args))
    args.update(node.kwargs)
    if args["dropout_p"] != 0.0 or args["is_causal"] or args["attn_mask"] is None:
        return None
    q, k, v = (_unswapped(args[name]) for name in ("query", "key", "value"))
    if q is None or k is None or v is None:
        return None
    qv, kv, vv = fake_tensor(q), fake_tensor(k), fake_tensor(v)
    if any(val.dim() != 4 or val.dtype not in (torch.float32, torch.float16) for val in (qv, kv, vv)):
        return None
    if len({qv.dtype, kv.dtype, vv.dtype}) != 1 or qv.shape[-1] > 256 or vv.shape[-1] > 256:
        return None
    if kv.shape[0] != qv.shape[0] or tuple(vv.shape[:3]) != tuple(kv.shape[:3]) or kv.shape[3] != qv.shape[3]:
        return None
    heads, kv_heads = qv.shape[2], kv.shape[2]
    if heads != kv_heads and not (args["enable_gqa"] and kv_heads > 0 and heads % kv_heads == 0):
        return None
    positions = _positions(args["attn_mask"], kv.shape[1])
    # One position per query (not one broadcast over them); str() compares symbolic lengths too.
    if positions is None or str(fake_tensor(positions).shape[0]) != str(qv.shape[1]):
        return None
    return (q, k, v, positions), args["scale"]


def fuse_sdpa_kv_cache(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    target = exir_ops.edge.et_vk.vkd_sdpa_kv_cache.default
    permute = aten.permute_copy.default
    for node in list(graph.nodes):
        match = _match(node)
        if match is None:
            continue
        operands, scale = match
        fused = insert_call(graph, target, operands, node, {} if scale is None else {"scale": scale})
        # The [B, T, H, D] output is what the transpose back to heads-last made.
        for user in list(node.users):
            if _unswapped(user) is node:
                user.replace_all_uses_with(fused)
                graph.erase_node(user)
        if node.users:
            with graph.inserting_after(fused):
                swapped = graph.call_function(permute, (fused, _HEADS_SWAP))
            swapped.meta["val"] = node.meta["val"]
            node.replace_all_uses_with(swapped)
        graph.erase_node(node)
