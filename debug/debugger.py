"""The numerical debugger: a program's delegates run on the GPU in debug mode (every tensor
its own memory, DEBUG_VALUES) and on the CPU reference executor (reference.py) with the
same inputs; the first op of the chain whose output differs beyond tolerance is named,
with its shapes, dtype, errors and the shaders that ran it.

    report = debug_pte("model.pte")        # inputs: random (seeded) where not given
    print(report.format())
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..serialization.blob import deserialize_blob
from ..serialization.graph_ir import OpCall, SymIntValue, TensorValue, ValueListValue
from ..serialization.pte import DelegateBlob, delegate_blobs
from .reference import TORCH_DTYPES, GraphReferenceError, ReferenceGraph

# Where the caller gives none: float16 values carry a half's rounding per op.
DEFAULT_TOLERANCES = {
    torch.float32: (1e-3, 1e-4),
    torch.float16: (1e-2, 1e-2),
}


@dataclass
class OutputError:
    value_id: int
    shape: Tuple[int, ...]  # the GPU's
    ref_shape: Tuple[int, ...]
    dtype: torch.dtype
    max_abs: float
    max_rel: float
    mismatched: int  # elements beyond tolerance (all of them for a shape mismatch)
    numel: int


@dataclass
class Divergence:
    """The first op whose output differs beyond tolerance."""

    method: str
    delegate: int
    op_index: int
    op: str
    input_shapes: List[Tuple[int, ...]]
    outputs: List[OutputError]  # the op's diverging outputs
    shaders: List[str]  # what the op dispatched
    # The op's worst output error when the reference runs it on the GPU's own inputs, and
    # whether that is beyond tolerance (the kernel itself is wrong) or not (its inputs already
    # differed, within tolerance, and the op carried that past it). None: not computed.
    isolated_max_abs: Optional[float] = None
    isolated_beyond_tolerance: Optional[bool] = None

    def format(self) -> str:
        lines = [f"first divergence: {self.method} delegate {self.delegate}, op #{self.op_index} {self.op}",
                 f"  inputs: {', '.join(str(list(s)) for s in self.input_shapes) or '-'}",
                 f"  shaders: {', '.join(self.shaders) or '(none: no dispatch)'}"]
        for out in self.outputs:
            shape = (f"{list(out.shape)}" if out.shape == out.ref_shape
                     else f"{list(out.shape)} (reference {list(out.ref_shape)})")
            lines.append(f"  output %{out.value_id}: {str(out.dtype).replace('torch.', '')}{shape}: "
                         f"max abs error {out.max_abs:.4g}, max rel error {out.max_rel:.4g}, "
                         f"{out.mismatched} of {out.numel} elements beyond tolerance")
        if self.isolated_max_abs is not None:
            verdict = ("beyond tolerance: the kernel itself is wrong" if self.isolated_beyond_tolerance
                       else "within tolerance: its inputs already differed (each within its own tolerance) "
                            "and the op carried the difference past this one")
            lines.append(f"  run on the GPU's own inputs, the reference differs by {self.isolated_max_abs:.4g} "
                         f"(max abs), {verdict}")
        return "\n".join(lines)


@dataclass
class DelegateCheck:
    method: str
    delegate: int
    num_ops: int = 0
    skipped: Optional[str] = None  # why it was not checked
    divergence: Optional[Divergence] = None
    inputs_note: Optional[str] = None  # where its inputs were not the method's


@dataclass
class DebugReport:
    delegates: List[DelegateCheck] = field(default_factory=list)

    @property
    def divergence(self) -> Optional[Divergence]:
        """The first divergence, in program order of the delegates."""
        return next((d.divergence for d in self.delegates if d.divergence is not None), None)

    def format(self) -> str:
        lines = []
        for check in self.delegates:
            where = f"{check.method} delegate {check.delegate}"
            if check.inputs_note:
                where += f" ({check.inputs_note})"
                if check.divergence is not None:
                    lines.append(f"{where}:")
            if check.skipped:
                lines.append(f"{where}: not checked: {check.skipped}")
            elif check.divergence is None:
                lines.append(f"{where}: {check.num_ops} ops, every output within tolerance")
            else:
                lines.append(check.divergence.format())
        return "\n".join(lines)


def _random_input(value: TensorValue, generator: torch.Generator) -> torch.Tensor:
    dtype = TORCH_DTYPES[value.dtype]
    if dtype.is_floating_point:
        return torch.randn(value.sizes, generator=generator).to(dtype)
    # Integer inputs are often indices or positions: 0 is valid for any of them.
    return torch.zeros(value.sizes, dtype=dtype)


def _delegate_inputs(entry: DelegateBlob, num_inputs: int, method_inputs: Optional[Sequence[torch.Tensor]],
                     generated: Dict[Tuple[str, int], torch.Tensor], specs: Sequence[TensorValue],
                     generator: torch.Generator) -> Tuple[Optional[List[torch.Tensor]], Optional[str]]:
    """The delegate's inputs, and a note where they are not the method's (None: it cannot run)."""
    if entry.call_args is None:
        return None, "no instruction of the method calls it"
    positions = []
    for evalue in entry.call_args[:num_inputs]:
        if evalue not in entry.method_inputs:
            # Only the program could compute its inputs: the GPU and the reference still
            # compare on inputs of its own.
            return [_random_input(spec, generator) for spec in specs], (
                "on random inputs of its own: it takes values that CPU ops of the program compute")
        positions.append(entry.method_inputs.index(evalue))
    if method_inputs is not None:
        if len(method_inputs) != len(entry.method_inputs):
            raise ValueError(f"method {entry.method} takes {len(entry.method_inputs)} inputs, "
                             f"{len(method_inputs)} given")
        return [method_inputs[p] for p in positions], None
    inputs = []
    for position, spec in zip(positions, specs):
        key = (entry.method, position)
        if key not in generated:
            generated[key] = _random_input(spec, generator)
        inputs.append(generated[key])
    return inputs, None


def _compare(gpu: torch.Tensor, ref: torch.Tensor, value_id: int, rtol: float, atol: float) -> OutputError:
    numel = ref.numel()
    if tuple(gpu.shape) != tuple(ref.shape) or gpu.dtype != ref.dtype:
        return OutputError(value_id, tuple(gpu.shape), tuple(ref.shape), gpu.dtype, float("inf"), float("inf"),
                           max(numel, gpu.numel()), numel)
    g, r = gpu.double(), ref.double()
    diff = (g - r).abs()
    both_nan = torch.isnan(g) & torch.isnan(r)
    diff = torch.where(both_nan, torch.zeros_like(diff), diff)
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
    # Equal infinities differ by nan above: no error.
    diff = torch.where((g == r), torch.zeros_like(diff), diff)
    bad = diff > atol + rtol * r.abs()
    rel = diff / r.abs()
    rel = torch.where(diff == 0, torch.zeros_like(rel), rel)
    return OutputError(value_id, tuple(gpu.shape), tuple(ref.shape), gpu.dtype,
                       float(diff.max()) if numel else 0.0, float(rel.max()) if numel else 0.0,
                       int(bad.sum()), numel)


def check_delegate(blob: bytes, inputs: Sequence[torch.Tensor], rtol: Optional[float] = None,
                   atol: Optional[float] = None, overrides: Optional[Dict[str, Any]] = None,
                   method: str = "forward", delegate: int = 0) -> DelegateCheck:
    """One blob on the GPU (debug mode) and on the reference, op by op; the first diverging op."""
    import vkdelegate.runtime as runtime

    reference = ReferenceGraph(blob)
    graph = reference.graph
    check = DelegateCheck(method, delegate, len(graph.chain))
    gpu = runtime.Graph(blob, overrides={"DEBUG_VALUES": True, **(overrides or {})})
    gpu.run([x.contiguous().numpy() for x in inputs])
    shaders = gpu.op_shaders()
    reference.run(list(inputs))
    ref_values = reference.values

    def gpu_value(value_id: int):
        out = gpu.read_value(value_id)
        return torch.from_numpy(out) if isinstance(out, np.ndarray) else out

    gpu_values: Dict[int, Any] = {}
    for index, call in enumerate(graph.chain):
        num_inputs = len(call.args) - call.num_outputs
        errors = []
        for value_id in call.args[num_inputs:]:
            value = graph.values[value_id]
            if not isinstance(value, (TensorValue, SymIntValue)):
                continue
            gpu_values[value_id] = gpu_value(value_id)
            if isinstance(value, SymIntValue):
                if gpu_values[value_id] != ref_values[value_id]:
                    errors.append(OutputError(value_id, (), (), torch.int64,
                                              abs(gpu_values[value_id] - ref_values[value_id]), float("inf"), 1, 1))
                continue
            ref = ref_values[value_id]
            error = _compare(gpu_values[value_id], ref, value_id,
                             *_tolerances(_op_dtypes(graph, call, value_id), rtol, atol))
            if error.mismatched:
                errors.append(error)
        if errors:
            input_shapes = [tuple(ref_values[i].shape) for i in call.args[:num_inputs]
                            if isinstance(ref_values.get(i), torch.Tensor)]
            check.divergence = Divergence(method, delegate, index, call.name, input_shapes, errors,
                                          list(shaders[index]))
            isolated = _isolated_errors(reference, index, call, gpu_values, ref_values, gpu_value, rtol, atol)
            if isolated:
                check.divergence.isolated_max_abs = max(e.max_abs for e in isolated)
                check.divergence.isolated_beyond_tolerance = any(e.mismatched for e in isolated)
            break
    return check


def _tolerances(dtypes: Sequence[torch.dtype], rtol: Optional[float], atol: Optional[float]) -> Tuple[float, float]:
    """The caller's tolerances, else the loosest default of the dtypes: an op's output is held to
    its float inputs' tolerance too (a float32 copy of a float16 value carries the half's error)."""
    defaults = [DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0)) for dtype in dtypes] or [(0.0, 0.0)]
    return (max(d[0] for d in defaults) if rtol is None else rtol,
            max(d[1] for d in defaults) if atol is None else atol)


def _op_dtypes(graph, call: OpCall, value_id: int) -> List[torch.dtype]:
    """The dtype of output value_id and of the op's float tensor inputs."""
    num_inputs = len(call.args) - call.num_outputs
    ids = []
    for input_id in call.args[:num_inputs]:
        value = graph.values[input_id]
        ids.extend(value.items if isinstance(value, ValueListValue) else [input_id])
    dtypes = [TORCH_DTYPES[graph.values[i].dtype] for i in ids if isinstance(graph.values[i], TensorValue)]
    return [TORCH_DTYPES[graph.values[value_id].dtype]] + [d for d in dtypes if d.is_floating_point]


def _isolated_errors(reference: ReferenceGraph, index: int, call: OpCall, gpu_values: Dict[int, Any],
                     ref_values: Dict[int, Any], gpu_value, rtol: Optional[float],
                     atol: Optional[float]) -> List[OutputError]:
    """The op's output errors when the reference runs it on the GPU's inputs (none if it cannot)."""
    graph = reference.graph
    env = dict(ref_values)
    num_inputs = len(call.args) - call.num_outputs
    for value_id in call.args[:num_inputs]:
        value = graph.values[value_id]
        ids = value.items if isinstance(value, ValueListValue) else [value_id]
        for item in ids:
            value = graph.values[item]
            if isinstance(value, (TensorValue, SymIntValue)) and not (
                    isinstance(value, TensorValue) and (value.constant_id >= 0 or value.state)):
                env[item] = gpu_values[item] if item in gpu_values else gpu_value(item)
    try:
        outputs = reference.run_op(index, env)
    except GraphReferenceError:
        return []
    return [_compare(gpu_values[value_id], out, value_id, *_tolerances(_op_dtypes(graph, call, value_id), rtol, atol))
            for value_id, out in zip(call.args[num_inputs:], outputs)
            if isinstance(out, torch.Tensor) and value_id in gpu_values]


def debug_pte(pte_path: str, inputs: Optional[Sequence[torch.Tensor]] = None, rtol: Optional[float] = None,
              atol: Optional[float] = None, overrides: Optional[Dict[str, Any]] = None,
              seed: int = 0) -> DebugReport:
    """Every vkdelegate delegate of the program, on the GPU in debug mode and on the reference
    executor. `inputs`: the method's inputs (one method); None: random (seeded) at each delegate's
    export sizes, integer inputs zero. A delegate that takes values CPU ops compute gets random
    inputs of its own (the report says so). Raises ValueError for a file that
    is not a program with our delegates, or a blob the reference cannot run (naming the op)."""
    entries = delegate_blobs(pte_path)
    if not entries:
        raise ValueError(f"{pte_path}: the program has no {'VkDelegateBackend'} delegate")
    methods = {entry.method for entry in entries}
    if inputs is not None and len(methods) > 1:
        raise ValueError(f"the program's delegates are in several methods ({', '.join(sorted(methods))}); "
                         "inputs are for one")
    report = DebugReport()
    generator = torch.Generator().manual_seed(seed)
    generated: Dict[Tuple[str, int], torch.Tensor] = {}
    for entry in entries:
        try:
            graph = deserialize_blob(entry.blob)
        except ValueError as error:
            raise ValueError(f"{entry.method} delegate {entry.index}: {error}") from error
        specs = [graph.values[i] for i in graph.input_ids]
        delegate_inputs, note = _delegate_inputs(entry, len(specs), inputs, generated, specs, generator)
        if delegate_inputs is None:
            report.delegates.append(DelegateCheck(entry.method, entry.index, len(graph.chain), skipped=note))
            continue
        try:
            check = check_delegate(entry.blob, delegate_inputs, rtol, atol, overrides, entry.method, entry.index)
        except GraphReferenceError as error:
            raise GraphReferenceError(f"{entry.method} delegate {entry.index}: {error}") from error
        check.inputs_note = note
        report.delegates.append(check)
    return report
