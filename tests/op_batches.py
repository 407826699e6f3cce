"""Registry samples lowered a batch to a program.

Exporting and lowering a program costs ExecuTorch about a second, far more than the
GPU work of a sample. The samples of one registry entry are independent, so one
program holds a batch of them side by side (each sample its own inputs, its own
subgraph, its own outputs): one export, one lowering, one load and one execute
serve them all, and each sample's test then checks its own outputs.

A sample is checked from its batch only where the batch shows what the sample alone
would show: the batch lowered, loaded and ran, and no CPU op feeds the sample's
outputs, which all come from one delegate call. Any other sample, and every sample
of a batch that failed, is lowered and run alone by its test, exactly as before
batching, so a failure always names its own sample and its own error.
"""

import copy
import operator
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import pytest
import torch

from helpers import delegate_calls, delegated_targets, keep_fuzz_seeds, load_method, lower, output_dtypes

# Samples per program: lowering time grows slowly with the samples in it; a failed
# batch costs each of its samples a program of its own.
BATCH_SIZE = 16


class SampleBatch(torch.nn.Module):
    """Sample modules side by side: forward takes their inputs one after the other and
    returns their outputs one after the other."""

    def __init__(self, modules: Sequence[torch.nn.Module], arities: Sequence[int]):
        super().__init__()
        self.parts = torch.nn.ModuleList(modules)
        self.arities = list(arities)

    def forward(self, *inputs):
        outputs, start = [], 0
        for part, arity in zip(self.parts, self.arities):
            out = part(*inputs[start:start + arity])
            start += arity
            outputs.extend(out if isinstance(out, (tuple, list)) else [out])
        return tuple(outputs)


def output_count(module: torch.nn.Module, inputs) -> int:
    with torch.no_grad():
        # A copy: a sample that writes its buffers (a KV cache) must be lowered from its first state,
        # or its writes would already be there and a missing one would go unseen.
        out = copy.deepcopy(module)(*inputs)
    return len(out) if isinstance(out, (tuple, list)) else 1


@dataclass
class BatchResult:
    """What a batch gave each of its samples: its outputs per run (and their exported
    dtypes), or why the sample must be lowered and run alone."""
    outputs: Dict[str, List[List[torch.Tensor]]] = field(default_factory=dict)
    dtypes: Dict[str, List[torch.dtype]] = field(default_factory=dict)
    alone: Dict[str, str] = field(default_factory=dict)
    delegated_targets: set = field(default_factory=set)


def _output_sources(em) -> List[Tuple[Optional[object], bool]]:
    """For each program output: the delegate call producing it (or None), and whether
    a CPU op lies upstream of it."""
    gm = em.exported_program().graph_module
    calls = set(delegate_calls(em))
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    sources = []
    for value in out_node.args[0]:
        call = None
        if (isinstance(value, torch.fx.Node) and value.op == "call_function" and value.target is operator.getitem
                and value.args[0] in calls):
            call = value.args[0]
        seen, stack, cpu = set(), [value], False
        while stack:
            node = stack.pop()
            if not isinstance(node, torch.fx.Node) or node in seen:
                continue
            seen.add(node)
            if node.op == "call_function" and node not in calls and node.target is not operator.getitem:
                cpu = True
                break
            stack.extend(node.all_input_nodes)
        sources.append((call, cpu))
    return sources


def run_batch(cases: Sequence[Tuple[str, torch.nn.Module, tuple]],
              runs: Sequence[Callable[[str], list]] = (),
              dynamic_shapes: Optional[Dict[str, object]] = None) -> BatchResult:
    """Lowers (case_id, module, inputs) cases as one program and executes it once per
    entry of `runs` (each maps a case id to that run's inputs; by default the export
    inputs). `dynamic_shapes` maps case ids to their inputs' dynamic-shape specs."""
    result = BatchResult()
    runs = list(runs) or [lambda case_id: None]
    try:
        arities = [len(inputs) for _, _, inputs in cases]
        counts = [output_count(module, inputs) for _, module, inputs in cases]
        batch = SampleBatch([module for _, module, _ in cases], arities)
        flat = [x for _, _, inputs in cases for x in inputs]
        shapes = None
        if dynamic_shapes is not None:
            shapes = (tuple(spec for case_id, _, _ in cases for spec in dynamic_shapes[case_id]),)
        em = lower(batch, flat, dynamic_shapes=shapes)
        sources = _output_sources(em)
        dtypes = output_dtypes(em)
        method = load_method(em.to_executorch().buffer)
        run_outputs = []
        for run in runs:
            run_inputs = []
            for (case_id, _, inputs) in cases:
                given = run(case_id)
                run_inputs.extend(inputs if given is None else given)
            run_outputs.append(list(method.execute(run_inputs)))
        keep_fuzz_seeds(em)  # a blob that loaded and ran: a fuzz seed
    except Exception as e:  # any failure: every sample runs alone and shows its own error
        reason = f"its batch failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
        result.alone = {case_id: reason for case_id, _, _ in cases}
        return result
    result.delegated_targets = delegated_targets(em)
    start = 0
    for (case_id, _, _), count in zip(cases, counts):
        span = range(start, start + count)
        start += count
        calls = {sources[i][0] for i in span}
        if any(sources[i][1] for i in span):
            result.alone[case_id] = "a CPU op feeds its outputs in the batch"
        elif None in calls or len(calls) != 1:
            result.alone[case_id] = "its outputs do not all come from one delegate call in the batch"
        else:
            result.outputs[case_id] = [[outs[i] for i in span] for outs in run_outputs]
            result.dtypes[case_id] = [dtypes[i] for i in span]
    return result


def chunks(items: list, size: int = BATCH_SIZE) -> List[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


class Batches:
    """Batch results computed on first use, once per process; `params` gives the
    parametrize list with each case in its batch's xdist group, so that pytest-xdist
    (--dist loadgroup) sends a batch's cases to one worker."""

    def __init__(self, name: str, compute: Callable[[list], object]):
        self.name = name
        self.compute = compute
        self.members: Dict[str, list] = {}
        self.key_of: Dict[Tuple[str, str], str] = {}
        self.results: Dict[str, object] = {}

    @classmethod
    def by_entry(cls, name: str, cases: list, compute: Callable[[list], object]) -> "Batches":
        """Batches of (entry name, case id, module, inputs) cases, each of one entry's cases."""
        batches, by_entry = cls(name, compute), {}
        for case in cases:
            by_entry.setdefault(case[0], []).append(case)
        for entry_name, entry_cases in by_entry.items():
            batches.add(entry_name, entry_cases)
        return batches

    def add(self, group: str, cases: list) -> None:
        """cases: (entry name, case id, module, inputs) tuples of one entry."""
        for index, chunk in enumerate(chunks(cases)):
            key = f"{self.name}-{group}-{index}"
            self.members[key] = chunk
            for case in chunk:
                self.key_of[(case[0], case[1])] = key

    def params(self) -> list:
        return [pytest.param(*case, id=f"{case[0]}-{case[1]}", marks=pytest.mark.xdist_group(key))
                for key, chunk in self.members.items() for case in chunk]

    def result(self, entry_name: str, case_id: str):
        """What `compute` made of the case's batch (computed on first use)."""
        key = self.key_of[(entry_name, case_id)]
        if key not in self.results:
            self.results[key] = self.compute(self.members[key])
        return self.results[key]
