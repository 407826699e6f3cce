"""Lowering and running helpers shared by the tests."""
import torch
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

import vkdelegate.runtime  # noqa: F401  (registers the backend)
from vkdelegate.partitioner import VulkanPartitioner

# Tolerances against eager PyTorch, per kind of op; written once here.
TOLERANCES = {
    "elementwise": dict(rtol=1e-5, atol=1e-5),
    "transcendental": dict(rtol=1e-4, atol=1e-5),
    "reduction": dict(rtol=1e-4, atol=1e-5),
    "matmul": dict(rtol=1e-4, atol=1e-4),
    "model": dict(rtol=1e-3, atol=1e-4),
    # pt2e family: int8 outputs may differ by one quantization step where the float
    # result lands on a rounding boundary (int32 accumulation vs PyTorch's float sum).
    "quantized": dict(rtol=0, atol=1),
    # fp16 family: against float32 math on the same half values, rounded to half. Kernels
    # compute in float and round once on store (half ulp: 4.9e-4 relative); samples that
    # chain ops (decompositions) round between them.
    "fp16_elementwise": dict(rtol=2e-3, atol=1e-3),
    "fp16_transcendental": dict(rtol=4e-3, atol=2e-3),
    "fp16_reduction": dict(rtol=1e-2, atol=5e-3),
    "fp16_matmul": dict(rtol=1e-2, atol=1e-2),
}


def lower(module, inputs, options=None, dynamic_shapes=None):
    """torch.export + to_edge_transform_and_lower with our partitioner."""
    ep = torch.export.export(module.eval(), tuple(inputs), dynamic_shapes=dynamic_shapes)
    return to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner(options)])


def to_pte(module, inputs, options=None):
    return lower(module, inputs, options).to_executorch().buffer


def delegate_calls(edge_manager):
    gm = edge_manager.exported_program().graph_module
    return [n for n in gm.graph.nodes if n.op == "call_function"
            and getattr(n.target, "__name__", "") == "executorch_call_delegate"]


def cpu_ops(edge_manager):
    """Names of the compute ops that stayed outside any delegate."""
    gm = edge_manager.exported_program().graph_module
    skip = ("executorch_call_delegate", "getitem")
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"
            and getattr(n.target, "__name__", "") not in skip]


def load_method(pte: bytes):
    """The program's forward method. ExecuTorch's Python Method does not keep its
    Program alive, and executing it after the Program is gone reads freed memory:
    the Program rides along on the method's Python object."""
    program = Runtime.get().load_program(pte)
    method = program.load_method("forward")
    method.program = program
    return method


def run_pte(pte: bytes, inputs):
    return load_method(pte).execute(list(inputs))


def relative_error(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-12)).item()
