"""AOT graph passes that preprocess runs on a partition before building its graph.

A pass is `fn(program: ExportedProgram, options: dict) -> None` and rewrites
`program.graph_module.graph` in place (fusions into `et_vk` ops, folding batch
norm into conv, fp16 casts, ...). New weights need no new constants: insert
ops on constant nodes (e.g. `aten.mul(weight, scale)`, a packing op); the graph
builder folds every node whose inputs are all constants ahead of time and
stores only the result. A fused node must carry `meta["val"]` (its fake output),
which the builder reads for its sizes and dtype.

Each pass lives in its own module; adding one adds one line to PASSES.
"""
from typing import Callable, Dict, List

from torch.export import ExportedProgram

from .force_fp16 import force_fp16
from .q8ta_fusion import fuse_q8ta
from .fuse_conv import fuse_conv
from .attention_fusion import fuse_sdpa_kv_cache
from .gguf_fusion import fuse_gguf_dequantize
from .gguf_repack import repack_gguf
from .linear_act_fusion import fuse_linear_activation
from .linear_fusion import fuse_linears
from .ln_linear_fusion import fuse_ln_linear
from .manual_attention import fuse_manual_attention
from .noop_copies import drop_noop_copies
from .packed_attention import fuse_bthd_attention, fuse_packed_qkv_attention
from .rope_fusion import fuse_rope, fuse_rope_kv_update
from .torchao_fusion import fuse_torchao_quantized

Pass = Callable[[ExportedProgram, Dict], None]

PASSES: List[Pass] = [
    drop_noop_copies,  # perf: expand / permute / slice copies that copy nothing (matmul's decomposition leaves them)
    fuse_q8ta,  # pt2e: dq -> conv2d | linear | add -> [relu] -> q into et_vk.vkd_q8ta_*
    fuse_torchao_quantized,  # qlinear: torchao dequantize -> linear | embedding into et_vk.vkd_*_qw
    fuse_gguf_dequantize,  # the wheel's GGUF weights: dequantize_gguf -> linear | embedding into et_vk.vkd_*_gguf
    repack_gguf,  # Q4_0 / Q8_0 GGUF weights onto the weight-only et_vk.vkd_*_qw ops (same numbers; their fusions)
    # perf: batch norm into conv weights, [residual add +] relu/hardtanh/clamp into the conv;
    # after the int8 fusions, so that it only sees the float convolutions they leave.
    fuse_conv,
    fuse_manual_attention,  # perf: softmax(q @ k^T * scale) @ v written out into scaled_dot_product_attention
    # perf: sdpa of a packed q|k|v projection's heads, and its transpose back, into et_vk.vkd_sdpa_qkv
    fuse_packed_qkv_attention,
    fuse_linear_activation,  # perf: a float linear's relu / gelu into its epilogue (et_vk.vkd_linear_act)
    fuse_ln_linear,  # perf: a layer norm feeding one float linear into the product's fetch (et_vk.vkd_ln_linear)
    fuse_linears,  # perf: [rms_norm +] quantized linears of one input [+ silu(a) * b | + residual] into one op
    fuse_rope,  # perf: x * cos + rotate_half(x) * sin into et_vk.vkd_rope
    fuse_sdpa_kv_cache,  # perf: sdpa over transposed caches with a position mask into et_vk.vkd_sdpa_kv_cache
    # perf: sdpa of transposed [B, T, heads, D] projections and its transpose back into et_vk.vkd_sdpa_bthd
    # (after the cache fusions, which take the decode blocks' sdpa whole)
    fuse_bthd_attention,
    fuse_rope_kv_update,  # perf: rope of q and k + the two cache writes feeding vkd_sdpa_kv_cache into one op
    force_fp16,  # Float16: last, so that it sees what the other passes made
]


def run_passes(program: ExportedProgram, options: Dict) -> None:
    for graph_pass in PASSES:
        graph_pass(program, options)
    program.graph_module.graph.eliminate_dead_code()
    program.graph_module.recompile()
