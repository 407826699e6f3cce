"""Drops copies that copy nothing, each of which would be a dispatch and a barrier: expand_copy
to the shape its input already has (torch's matmul decomposition puts one before each side of a
bmm: `q @ k.transpose(-2, -1)` on rank-4 tensors), permute_copy by the identity, and slice_copy
of a whole dim with step 1. Their users read the input instead. Shapes compare dim by dim as
expressions, so a dynamic dim counts as equal only to the same symbol. A copy that is a graph
output stays (an output must be a tensor of its own)."""
from typing import Dict, Optional

from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import arg_at, fake_tensor, op_name


def _same_shape(a, b) -> bool:
    return a is not None and b is not None and a.dtype == b.dtype and len(a.shape) == len(b.shape) and all(
        str(x) == str(y) for x, y in zip(a.shape, b.shape))


def _copied(node: Node) -> Optional[Node]:
    """The input that `node` copies unchanged, or None."""
    if node.op != "call_function" or not node.args or not isinstance(node.args[0], Node):
        return None
    src = node.args[0]
    name = op_name(node.target)
    if not _same_shape(fake_tensor(src), fake_tensor(node)):
        return None
    if name == "aten.expand_copy.default":
        return src
    if name == "aten.permute_copy.default":
        return src if list(node.args[1]) == list(range(len(node.args[1]))) else None
    if name == "aten.slice_copy.Tensor":
        start, step = arg_at(node, 2, "start"), arg_at(node, 4, "step", 1)
        return src if start in (None, 0) and step == 1 else None
    return None


def drop_noop_copies(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    for node in list(graph.nodes):
        src = _copied(node)
        if src is None or any(user.op == "output" for user in node.users):
            continue
        node.replace_all_uses_with(src)
        graph.erase_node(node)
