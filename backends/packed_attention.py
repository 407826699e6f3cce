"""Attention without its layout copies: of a packed q|k|v projection, and of heads in the layout the
projections make them.

A ViT block (examples/models/vit.py) and examples/models/transformer.py's block attend with

    qkv = linear(x).reshape(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
    out = sdpa(qkv[0], qkv[1], qkv[2]).transpose(1, 2)        # then .reshape(B, T, H * D)

which exports to view -> permute_copy -> select_copy x3 -> sdpa -> permute_copy: the permute and the
three selects copy q, k and v out of the projection and the last permute copies the output back,
four dispatches around one. It becomes et_vk.vkd_sdpa_qkv(linear(x), H) -> [B, T, H, D], whose kernel
reads q, k and v in place and writes the output in the merged-heads layout (the view after it stays a
view). Matched only whole: the permute's three selects each used once, as the sdpa's query, key and
value in that order, no mask, dropout 0, the sdpa's one user the transpose back; up to
op_registry.SDPA_QKV_MAX_TOKENS tokens (a static T). Anything else is left alone.

A Llama block (examples/models/llama.py without a KV cache) attends with

    q, k, v = rope(wq(x).view(B, T, H, D)), rope(wk(x).view(B, T, KVH, D)), wv(x).view(B, T, KVH, D)
    out = sdpa(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True)
    out = out.transpose(1, 2)                                 # then .reshape(B, T, H * D)

which exports to permute_copy x3 -> sdpa -> permute_copy. It becomes et_vk.vkd_sdpa_bthd(q, k, v) ->
[B, T, H, D]: the same kernels read the three in place and write the merged-heads layout. Matched
whole: each transpose used once, no mask, dropout 0, the sdpa's one user the transpose back, up to
SDPA_QKV_MAX_TOKENS keys (a static S).
"""
from typing import Dict, Optional

from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import arg, fake_tensor, insert_call
from ..quant import library  # noqa: F401  (defines et_vk.vkd_sdpa_qkv, et_vk.vkd_sdpa_bthd)

aten = exir_ops.edge.aten


def _call(node, target) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and node.target == target


def _match(sdpa: Node) -> Optional[Dict]:
    """The packed projection, heads, causal flag and scale of an sdpa that fits, and its transpose back."""
    from ..op_registry import SDPA_QKV_MAX_TOKENS

    if len(sdpa.args) < 3 or arg(sdpa, "attn_mask") is not None or arg(sdpa, "dropout_p") not in (0, 0.0):
        return None
    selects = sdpa.args[:3]
    if not all(_call(s, aten.select_copy.int) and len(s.users) == 1 for s in selects):
        return None
    if len(set(selects)) != 3 or [tuple(s.args[1:3]) for s in selects] != [(0, 0), (0, 1), (0, 2)]:
        return None
    permute = selects[0].args[0]
    if any(s.args[0] is not permute for s in selects) or not _call(permute, aten.permute_copy.default):
        return None
    if list(permute.args[1]) != [2, 0, 3, 1, 4] or len(permute.users) != 3:
        return None
    view = permute.args[0]
    if not _call(view, aten.view_copy.default) or len(view.users) != 1:
        return None
    packed, split = view.args[0], fake_tensor(view)
    flat = fake_tensor(packed)
    if flat is None or split is None or flat.dim() != 3 or split.dim() != 5:
        return None
    batch, tokens, width = flat.shape
    if (split.shape[0], split.shape[1], split.shape[2]) != (batch, tokens, 3) or not isinstance(tokens, int):
        return None
    heads, head_dim = split.shape[3], split.shape[4]
    if not isinstance(heads, int) or 3 * heads * head_dim != width or tokens > SDPA_QKV_MAX_TOKENS or head_dim > 256:
        return None
    back = next(iter(sdpa.users)) if len(sdpa.users) == 1 else None
    if not _call(back, aten.permute_copy.default) or list(back.args[1]) != [0, 2, 1, 3]:
        return None
    return {"packed": packed, "heads": heads, "is_causal": bool(arg(sdpa, "is_causal")),
            "scale": arg(sdpa, "scale"), "out": back, "before": [permute, view]}


def _fuse(graph, target, match, operands) -> None:
    """Each sdpa that `match` takes becomes `target(*operands(found))` with its causal flag and scale, in place
    of the transpose back after it; the copies it leaves without users go."""
    for node in list(graph.nodes):
        if not _call(node, aten.scaled_dot_product_attention.default):
            continue
        found = match(node)
        if found is None:
            continue
        kwargs = {"is_causal": found["is_causal"]}
        if found["scale"] is not None:
            kwargs["scale"] = found["scale"]
        fused = insert_call(graph, target, operands(found), before=found["out"], kwargs=kwargs)
        found["out"].replace_all_uses_with(fused)
        # Erased here: dead code elimination keeps sdpa (its schema allows dropout: nondeterministic).
        chain = [found["out"], node, *dict.fromkeys(node.args[:3])]
        chain += found.get("before", [])
        for dead in chain:
            if not dead.users:
                graph.erase_node(dead)


def fuse_packed_qkv_attention(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    # What fuse_manual_attention left without users still holds the selects (transformer.py's block).
    graph.eliminate_dead_code()
    _fuse(graph, exir_ops.edge.et_vk.vkd_sdpa_qkv.default, _match, lambda found: (found["packed"], found["heads"]))


def _transposed(node) -> Optional[Node]:
    """The [B, T, heads, D] tensor that `node` is the 1 <-> 2 transpose of, used only by its sdpa."""
    if not _call(node, aten.permute_copy.default) or list(node.args[1]) != [0, 2, 1, 3] or len(node.users) != 1:
        return None
    source = fake_tensor(node.args[0])
    return node.args[0] if source is not None and source.dim() == 4 else None


def _match_bthd(sdpa: Node) -> Optional[Dict]:
    from ..op_registry import SDPA_QKV_MAX_TOKENS

    if len(sdpa.args) < 3 or arg(sdpa, "attn_mask") is not None or arg(sdpa, "dropout_p") not in (0, 0.0):
        return None
    sources = [_transposed(t) for t in sdpa.args[:3]]
    if any(t is None for t in sources):
        return None
    q, k = fake_tensor(sources[0]), fake_tensor(sources[1])
    if not isinstance(k.shape[1], int) or k.shape[1] > SDPA_QKV_MAX_TOKENS or q.shape[3] > 256:
        return None
    if q.shape[2] != k.shape[2] and not arg(sdpa, "enable_gqa"):
        return None
    back = next(iter(sdpa.users)) if len(sdpa.users) == 1 else None
    if not _call(back, aten.permute_copy.default) or list(back.args[1]) != [0, 2, 1, 3]:
        return None
    return {"sources": sources, "is_causal": bool(arg(sdpa, "is_causal")), "scale": arg(sdpa, "scale"), "out": back}


def fuse_bthd_attention(program: ExportedProgram, options: Dict) -> None:
    _fuse(program.graph_module.graph, exir_ops.edge.et_vk.vkd_sdpa_bthd.default, _match_bthd,
          lambda found: tuple(found["sources"]))
