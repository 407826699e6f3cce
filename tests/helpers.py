"""Helpers shared by the tests: lower a module, look at what came out, run it."""
import functools
import hashlib
import os
from dataclasses import dataclass
from typing import List

import pytest
import torch
from executorch.exir import EdgeProgramManager, to_edge_transform_and_lower
from executorch.exir.lowered_backend_module import LoweredBackendModule

import vkdelegate.runtime  # noqa: F401  (registers the backend)
from vkdelegate.examples.models import MODELS
from vkdelegate.fx_nodes import op_name
from vkdelegate.partitioner import VulkanPartitioner

# Tolerances against eager PyTorch, per kind of op; written once here.
TOLERANCES = {
    "elementwise": dict(rtol=1e-5, atol=1e-5),
    "transcendental": dict(rtol=1e-4, atol=1e-5),
    "reduction": dict(rtol=1e-4, atol=1e-5),
    "matmul": dict(rtol=1e-4, atol=1e-4),
    "model": dict(rtol=1e-3, atol=1e-4),
    # PT2E static int8: int8 outputs may differ by one quantization step where the float
    # result lands on a rounding boundary (int32 accumulation vs PyTorch's float sum).
    "quantized": dict(rtol=0, atol=1),
    # Float16: against float32 math on the same half values, rounded to half. Kernels
    # compute in float and round once on store (half ulp: 4.9e-4 relative); samples that
    # chain ops (decompositions) round between them.
    "fp16_elementwise": dict(rtol=2e-3, atol=1e-3),
    "fp16_transcendental": dict(rtol=4e-3, atol=2e-3),
    "fp16_reduction": dict(rtol=1e-2, atol=5e-3),
    "fp16_matmul": dict(rtol=1e-2, atol=1e-2),
}


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def lower(module: torch.nn.Module, inputs, options=None, dynamic_shapes=None, partitioner=None) -> EdgeProgramManager:
    """torch.export + to_edge_transform_and_lower with VulkanPartitioner(options), or with `partitioner`."""
    if partitioner is not None and options is not None:
        raise ValueError("give options or a partitioner, not both")
    # Exported programs (torch.export's .module(), convert_pt2e's result) refuse eval(): their mode
    # was fixed when they were exported.
    if not isinstance(module, torch.fx.GraphModule):
        module = module.eval()
    program = torch.export.export(module, tuple(inputs), dynamic_shapes=dynamic_shapes)
    return to_edge_transform_and_lower(program, partitioner=[partitioner or VulkanPartitioner(options)])


# VKDELEGATE_FUZZ_SEEDS=DIR: the suite keeps what it lowers for the fuzz and sanitizer stage
# (tests/sanitizers.py): DIR/blobs/ the delegate blobs of every registry batch and example
# model, DIR/pte/ the example models' programs. Unset: nothing is written.
FUZZ_SEEDS_DIR = os.environ.get("VKDELEGATE_FUZZ_SEEDS")
# Larger blobs (models with big weights) would slow every fuzz input; their graphs are
# like the small ones'.
MAX_SEED_BYTES = 1 << 20
MAX_SEED_PTE_BYTES = 64 << 20


def keep_fuzz_seeds(edge_manager, pte: bytes = None, name: str = None) -> None:
    """With VKDELEGATE_FUZZ_SEEDS set, writes the program's delegate blobs (named by their
    hash, so a blob lowered twice is kept once) and, given, its .pte as NAME.pte."""
    if not FUZZ_SEEDS_DIR:
        return
    for module in lowered_modules(edge_manager):
        blob = module.processed_bytes
        if module.backend_id != "VkDelegateBackend" or len(blob) > MAX_SEED_BYTES:
            continue
        _write_new(os.path.join(FUZZ_SEEDS_DIR, "blobs", hashlib.sha1(blob).hexdigest() + ".blob"), blob)
    if pte is not None and len(pte) <= MAX_SEED_PTE_BYTES:
        _write_new(os.path.join(FUZZ_SEEDS_DIR, "pte", name + ".pte"), pte)


def _write_new(path: str, data: bytes) -> None:
    # Written aside and renamed: pytest-xdist workers write the same seeds side by side.
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


@dataclass(frozen=True)
class LoweredModel:
    model: torch.nn.Module
    inputs: tuple
    edge: EdgeProgramManager
    pte: bytes


@functools.lru_cache(maxsize=None)
def lowered_model(name: str, force_fp16: bool = False) -> LoweredModel:
    """An examples/models model lowered once per process: several test files check the same
    lowering (a model takes 5-50 s to lower on the CI machine). Treat it as read-only; the
    model's tests share an xdist group (`model_group`) so that they run in one process."""
    model, inputs = MODELS[name]()
    edge = lower(model, inputs, {"force_fp16": True} if force_fp16 else None)
    lowered = LoweredModel(model, tuple(inputs), edge, edge.to_executorch().buffer)
    keep_fuzz_seeds(edge, lowered.pte, name + ("_fp16" if force_fp16 else ""))
    return lowered


def model_group(name: str):
    return pytest.mark.xdist_group(f"model-{name}")


def to_pte(module, inputs, options=None):
    return lower(module, inputs, options).to_executorch().buffer


def delegate_calls(edge_manager):
    gm = edge_manager.exported_program().graph_module
    return [n for n in gm.graph.nodes if n.op == "call_function"
            and getattr(n.target, "__name__", "") == "executorch_call_delegate"]


def delegate_count(edge_manager) -> int:
    return len(delegate_calls(edge_manager))


def lowered_modules(edge_manager) -> List[LoweredBackendModule]:
    graph_module = edge_manager.exported_program().graph_module
    return [child for _, child in graph_module.named_children() if isinstance(child, LoweredBackendModule)]


def delegate_blob(edge_manager, backend_id: str = "VkDelegateBackend") -> bytes:
    """The blob of the program's one delegate (of backend_id)."""
    (module,) = lowered_modules(edge_manager)
    assert module.backend_id == backend_id
    return module.processed_bytes


def dispatch_ops(edge_manager) -> List[str]:
    """The op of each dispatch of the program's one delegate, in order ("aten.bmm.default"): what
    the AOT fusions left to run."""
    graph = vkdelegate.runtime.Graph(delegate_blob(edge_manager))
    return [op.split(" (", 1)[1].rstrip(")") for op, _ in graph.dispatches()]  # "op #3 (aten.bmm.default)"


def cpu_ops(edge_manager) -> List[str]:
    """Op names ("aten.cumsum.default") of the compute nodes left outside any delegate
    (getitem excluded)."""
    skip = ("executorch_call_delegate", "getitem")
    return [op_name(n.target) for n in edge_manager.exported_program().graph.nodes
            if n.op == "call_function" and getattr(n.target, "__name__", "") not in skip]


def delegated_targets(edge_manager) -> set:
    """The op overloads inside the program's delegates."""
    return {n.target for module in lowered_modules(edge_manager)
            for n in module.original_module.graph.nodes if n.op == "call_function"}


def output_dtypes(edge_manager) -> List[torch.dtype]:
    """The dtypes of the program's outputs, as exported."""
    out_node = next(n for n in edge_manager.exported_program().graph.nodes if n.op == "output")
    return [value.meta["val"].dtype for value in out_node.args[0]]


def load_method(pte: bytes):
    """The program's forward method. ExecuTorch's Python Method does not keep its
    Program alive, and executing it after the Program is gone reads freed memory:
    the Program rides along on the method's Python object. (Imported here: the eager device's GPU
    run, benchmarks/eager_gpu.sh, reads this module's tolerances without ExecuTorch's runtime.)"""
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(pte)
    method = program.load_method("forward")
    method.program = program
    return method


def run_pte(pte: bytes, inputs):
    return load_method(pte).execute(list(inputs))


def relative_error(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-12)).item()


# ---- phone-GPU limit profiles (VKDELEGATE_DEVICE_PROFILE, docs/device-profiles.md)

# The profiles the suite runs the example models and a slice of the op cases under.
PHONE_PROFILES = ("mali-g7x", "adreno-6xx", "vulkan-min")


def profile_env(profile: str) -> dict:
    """A subprocess's environment under `profile` (read when its device opens): validation
    on, and no fuzz seeds (the main run leaves those)."""
    env = {k: v for k, v in os.environ.items() if k != "VKDELEGATE_FUZZ_SEEDS"}
    env.update(VKDELEGATE_DEVICE_PROFILE=profile, VKDELEGATE_VALIDATION="1")
    return env


def run_pte_with_runner(pte: bytes, inputs, directory, env) -> "subprocess.CompletedProcess":
    """vkdelegate_runner on the .pte with these inputs (raw files in `directory`, where it
    also dumps its outputs: read them with runner_output)."""
    import subprocess
    os.makedirs(directory, exist_ok=True)
    model = os.path.join(directory, "model.pte")
    with open(model, "wb") as f:
        f.write(pte)
    for i, t in enumerate(inputs):
        with open(os.path.join(directory, f"input_{i}.bin"), "wb") as f:
            f.write(t.contiguous().numpy().tobytes())
    return subprocess.run([vkdelegate.runtime.runner_path(), "--model", model, "--iters", "1", "--warmup", "0",
                           "--inputs", str(directory), "--dump-outputs", str(directory)],
                          env=env, capture_output=True, text=True, timeout=600)


def runner_output(directory, index: int, like: torch.Tensor) -> torch.Tensor:
    """Output `index` the runner dumped, with the dtype and shape of `like`."""
    with open(os.path.join(directory, f"output_{index}.bin"), "rb") as f:
        data = bytearray(f.read())
    return torch.frombuffer(data, dtype=like.dtype).reshape(like.shape)
