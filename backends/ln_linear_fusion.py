"""A layer norm over the last dim whose normalized output feeds one linear only (aten.linear or
et_vk.vkd_linear_act without a residual: a transformer block's norm before its qkv projection or its
first FFN linear) becomes one et_vk.vkd_ln_linear node: on a device with cooperative matrices the
float16 product's kernel normalizes each row of its input as it fetches it (matmul_coop.glslh: LN_A),
which saves the norm's dispatch, its barrier and a round trip of the normalized rows through memory;
elsewhere the runtime adds the layer norm's node itself (the same two dispatches as before). The norm's
mean and rstd outputs must be unused."""
import operator
from typing import Dict, Optional

from torch.export import ExportedProgram
from torch.fx import Node

from ..fx_nodes import arg_at, fake_tensor, op_name
from ..quant.library import ln_linear


def _linear_of(normed: Node) -> Optional[Node]:
    """The one user of `normed` if it is a linear (or linear_act without a residual) taking it as its input."""
    if len(normed.users) != 1:
        return None
    user = next(iter(normed.users))
    if user.op != "call_function" or not user.args or user.args[0] is not normed:
        return None
    name = op_name(user.target)
    if name == "aten.linear.default":
        return user
    if name == "et_vk.vkd_linear_act.default" and arg_at(user, 4, "residual") is None:
        return user
    return None


def fuse_ln_linear(program: ExportedProgram, options: Dict) -> None:
    graph = program.graph_module.graph
    for norm in list(graph.nodes):
        if norm.op != "call_function" or op_name(norm.target) != "aten.native_layer_norm.default":
            continue
        x = norm.args[0]
        shape = arg_at(norm, 1, "normalized_shape")
        val = fake_tensor(x)
        if val is None or not val.is_floating_point() or len(shape) != 1 or val.dim() < 1 or val.shape[-1] != shape[0]:
            continue
        users = list(norm.users)
        if not all(u.op == "call_function" and u.target is operator.getitem for u in users):
            continue
        outs = [u for u in users if u.args[1] == 0]
        if len(outs) != 1 or any(u.users for u in users if u.args[1] != 0):
            continue
        linear = _linear_of(outs[0])
        if linear is None:
            continue
        weight, bias = linear.args[1], arg_at(linear, 2, "bias")
        activation = arg_at(linear, 3, "activation") if op_name(linear.target) != "aten.linear.default" else "none"
        with graph.inserting_before(linear):
            fused = graph.call_function(ln_linear.default, (x, arg_at(norm, 2, "weight"), arg_at(norm, 3, "bias"),
                                                            float(arg_at(norm, 4, "eps")), weight, bias, activation))
        fused.meta = dict(linear.meta)
        linear.replace_all_uses_with(fused)
        graph.erase_node(linear)
        for u in users:
            graph.erase_node(u)
        graph.erase_node(norm)
