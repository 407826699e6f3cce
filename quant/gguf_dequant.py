"""The executorch wheel's GGUF weights as vkdelegate's fused GGUF ops.

`executorch.extension.llm.export.gguf.ExportableGGUFTensor` keeps one tensor's raw
GGUF blocks (uint8 [N, row bytes]) and exports a linear or embedding on it as
`torchao.dequantize_gguf(raw, "q4_k", dtype)` feeding `aten.linear` / `aten.embedding`.
The fusion pass (backends/gguf_fusion.py) rewrites each such pattern into
`et_vk.vkd_linear_gguf` / `et_vk.vkd_embedding_gguf` on the same blocks, packed once
into int32 words by `et_vk.vkd_pack_gguf_words` (which the graph builder folds: the
blob holds the words, never a float copy). The registry accepts a dequantize_gguf
node only where `fusion_reason` here says the pass fuses all of its users, so the
two never disagree; any other one (a type we have no kernel for, such as Q5_K)
stays on the CPU with the reason in the partitioner's log.

A `t` / `permute([1, 0])` of the dequantized weight feeding `mm` / `addmm` (what
`x @ weight.t()` on such a tensor exports to) is the same linear and fuses too.
"""
from dataclasses import dataclass
from typing import Optional

import torch
from torch.fx import Node

from ..fx_nodes import arg_at, fake_tensor
from .gguf_linear import FORMATS_BY_NAME, BlockFormat, pack_words, weight_nbytes
from .library import define
from .torchao_ops import is_op

DEQUANTIZE = "torchao.dequantize_gguf"


def wheel_op_available() -> bool:
    """True if the wheel's torchao::dequantize_gguf is registered (importing its module registers it)."""
    try:
        import executorch.extension.llm.export.gguf  # noqa: F401
    except ImportError:
        return False
    return hasattr(torch.ops.torchao, "dequantize_gguf")


def _pack_reference(raw):
    return pack_words(raw)


def _pack_fake(raw):
    return raw.new_empty(((raw.numel() + 3) // 4,), dtype=torch.int32)


# Raw GGUF blocks (uint8, any shape) -> the int32 words the GGUF kernels read (gguf_linear.pack_words).
pack_gguf_words = define("vkd_pack_gguf_words(Tensor raw) -> Tensor", _pack_reference, _pack_fake)




@dataclass(frozen=True)
class Dequantize:
    """One dequantize_gguf node on raw blocks of a format our kernels read."""
    node: Node
    raw: Node
    format: BlockFormat
    n: int
    k: int


def match_dequantize(node: Node):
    """(Dequantize, None) if node is a dequantize_gguf of a supported format to float32, else (None, why)."""
    if not is_op(node, DEQUANTIZE):
        return None, "not a torchao.dequantize_gguf"
    raw, type_name = arg_at(node, 0, "weight"), arg_at(node, 1, "ggml_type")
    fmt = FORMATS_BY_NAME.get(str(type_name).upper())
    if fmt is None:
        return None, (f"GGUF type {type_name} has no vkdelegate kernel (the GGUF kernels read "
                      f"{', '.join(FORMATS_BY_NAME)}); it is dequantized on the CPU")
    raw_val, out = fake_tensor(raw), fake_tensor(node)
    if raw_val is None or raw_val.dtype != torch.uint8 or raw_val.dim() != 2 or raw.op != "placeholder":
        return None, "the raw blocks must be a uint8 [N, row bytes] constant"
    if out is None or out.dtype != torch.float32 or out.dim() != 2:
        dtype = None if out is None else str(out.dtype).replace("torch.", "")
        return None, f"dequantized to {dtype}; the GGUF kernels compute float32"
    n, k = int(out.shape[0]), int(out.shape[1])
    if k % fmt.block_size or raw_val.numel() != weight_nbytes(fmt.ggml_type, n, k):
        return None, f"{fmt.name} weight [{n}, {k}] does not match its {tuple(raw_val.shape)} raw bytes"
    return Dequantize(node, raw, fmt, n, k), None


def _transposed(node: Node) -> bool:
    if is_op(node, "aten.t_copy") or is_op(node, "aten.t"):
        return True
    if is_op(node, "aten.permute_copy") or is_op(node, "aten.permute"):
        return list(arg_at(node, 1, "dims")) in ([1, 0], [-1, -2], [1, -2], [-1, 0])
    return False


@dataclass(frozen=True)
class LinearUse:
    """A product of x [..., K] with the dequantized weight's transpose (plus bias): the fused linear's operands."""
    node: Node  # the node the fused linear replaces
    x: Node
    bias: Optional[Node]


def _linear_use(user: Node, dequant: Dequantize, through: Optional[Node] = None):
    """(LinearUse, None) if `user` multiplies by the weight (through = the transpose it went through), else (None, why)."""
    weight = through if through is not None else dequant.node
    if through is None and is_op(user, "aten.linear") and arg_at(user, 1, "weight") is weight:
        use = LinearUse(user, arg_at(user, 0, "input"), arg_at(user, 2, "bias"))
    elif through is not None and is_op(user, "aten.mm") and user.args[1] is weight:
        use = LinearUse(user, user.args[0], None)
    elif (through is not None and is_op(user, "aten.addmm") and user.args[2] is weight
          and arg_at(user, 3, "beta", 1) == 1 and arg_at(user, 4, "alpha", 1) == 1):
        use = LinearUse(user, user.args[1], user.args[0])
    else:
        return None, None
    x, bias = fake_tensor(use.x), fake_tensor(use.bias)
    if x is None or x.dtype != torch.float32 or x.dim() < 1 or x.shape[-1] != dequant.k:
        return None, f"the input of {user.name} must be float32 with K={dequant.k} features"
    if use.bias is not None and (bias is None or bias.dtype != torch.float32 or tuple(bias.shape) != (dequant.n,)):
        return None, f"the bias of {user.name} must be float32 of shape ({dequant.n},)"
    return use, None


def _embedding_reason(user: Node) -> Optional[str]:
    indices = fake_tensor(arg_at(user, 1, "indices"))
    if indices is None or indices.dtype not in (torch.int32, torch.int64) or indices.dim() > 7:
        return "embedding indices must be int32/int64 of rank up to 7"
    return None


def uses(dequant: Dequantize):
    """([(kind, LinearUse | embedding node, transpose node or None)], None) for every use of the
    dequantized weight, or (None, why) if one of them is not a fusable linear or embedding."""
    found = []
    if not dequant.node.users:
        return None, "the dequantized weight is unused"
    for user in dequant.node.users:
        if is_op(user, "aten.embedding") and arg_at(user, 0, "weight") is dequant.node:
            reason = _embedding_reason(user)
            if reason:
                return None, reason
            found.append(("embedding", user, None))
            continue
        through = user if _transposed(user) else None
        for consumer in (list(user.users) if through is not None else [user]):
            use, reason = _linear_use(consumer, dequant, through)
            if use is None:
                return None, reason or (f"used by {consumer.name} ({consumer.target}), not as a linear or "
                                        "embedding weight")
            found.append(("linear", use, through))
        if through is not None and not through.users:
            return None, f"the transpose {through.name} is unused"
    return found, None


def fusion_reason(node: Node) -> Optional[str]:
    """None if the fusion pass rewrites every use of this dequantize_gguf (or of its transpose)
    into a fused GGUF op, else why not."""
    dequant, reason = match_dequantize(node)
    return reason or uses(dequant)[1]
