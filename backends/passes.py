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

# perf family
from .fuse_conv import fuse_conv

Pass = Callable[[ExportedProgram, Dict], None]

PASSES: List[Pass] = [
    fuse_conv,  # perf family: batch norm into conv weights, relu/hardtanh/clamp into the conv
]


def run_passes(program: ExportedProgram, options: Dict) -> None:
    for graph_pass in PASSES:
        graph_pass(program, options)
    program.graph_module.graph.eliminate_dead_code()
    program.graph_module.recompile()
