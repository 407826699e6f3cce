"""Every op resizes: each registry sample is exported with automatic dynamic
dims, lowered once, then run with every dynamic size made smaller, and compared
with eager PyTorch on the same smaller inputs (no rebuild in between), then run
again at the export-time sizes.

The samples of an entry are lowered and run as batches (tests/op_batches.py: one
program per batch, each sample its own subgraph and its own dynamic dims); a sample
its batch cannot vouch for is lowered and run alone."""
import copy
import inspect
from dataclasses import dataclass
from typing import Dict

import pytest
import torch
from torch.export import Dim

from helpers import TOLERANCES, cpu_ops, delegate_calls, load_method, lower
from op_batches import BatchResult, Batches, run_batch
from op_cases import all_cases
from vkdelegate.op_registry import REGISTRY

ENTRIES = {entry.name: entry for entry in REGISTRY}


def _smaller_inputs(ep, inputs):
    """Inputs cut down along their dynamic dims: each free symbol takes a value
    below its export-time value (and at or above its lower bound)."""
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"
                    and n.name in ep.graph_signature.user_inputs]
    env = {}
    for node in placeholders:
        for size in node.meta["val"].shape:
            if isinstance(size, torch.SymInt):
                for sym in size.node.expr.free_symbols:
                    lower_bound = int(ep.range_constraints[sym].lower) if sym in ep.range_constraints else 1
                    hint = size.node.shape_env.var_to_val[sym]
                    env[sym] = max(lower_bound, min(int(hint) - 1, (int(hint) + 1) // 2))
    if not env:
        return None
    smaller = []
    for node, x in zip(placeholders, inputs):
        sizes = [int(s.node.expr.subs(env)) if isinstance(s, torch.SymInt) else s for s in node.meta["val"].shape]
        smaller.append(x[tuple(slice(0, s) for s in sizes)].contiguous())
    return smaller


def _spec(module, specs):
    """The dynamic-shapes argument of export for module's forward."""
    params = inspect.signature(module.forward).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return (specs,)  # forward(*inputs) takes one nested spec
    return specs


def _prepare(entry_name, module, inputs):
    """(per-input dynamic dims, smaller inputs) for a sample, or why it cannot be tested."""
    entry = ENTRIES[entry_name]
    if not entry.supports_resize:
        return f"{entry_name}: registry says no resize ({entry.notes})"
    # Upper bound: the export-time size (the delegate allocates at it).
    specs = tuple({d: Dim.AUTO(max=max(int(x.shape[d]), 2)) for d in range(x.dim())}
                  if isinstance(x, torch.Tensor) else None for x in inputs)
    try:
        ep = torch.export.export(module.eval(), tuple(inputs), dynamic_shapes=_spec(module, specs))
    except Exception as e:  # export itself cannot make this sample dynamic
        return f"export with dynamic dims failed: {type(e).__name__}"
    smaller = _smaller_inputs(ep, inputs)
    if smaller is None:
        return "export found no dynamic dim in this sample"
    try:
        with torch.no_grad():
            copy.deepcopy(module)(*smaller)  # (a sample that writes its buffers keeps its first state)
    except Exception as e:  # shrinking symbols one by one broke a relation between inputs
        return f"eager PyTorch rejects the smaller inputs too: {type(e).__name__}"
    return specs, smaller


@dataclass
class ResizeBatch:
    runs: BatchResult           # the smaller run, then the export-time run, of the testable samples
    skipped: Dict[str, str]     # why a sample cannot be resize-tested
    smaller: Dict[str, list]    # each testable sample's smaller inputs


def _batch(cases):
    prepared, skipped = {}, {}
    for entry_name, case_id, module, inputs in cases:
        p = _prepare(entry_name, module, inputs)
        (skipped if isinstance(p, str) else prepared)[case_id] = p
    eligible = [(case_id, module, inputs) for _, case_id, module, inputs in cases if case_id in prepared]
    runs = run_batch(eligible, runs=(lambda case_id: prepared[case_id][1], lambda case_id: None),
                     dynamic_shapes={case_id: p[0] for case_id, p in prepared.items()})
    return ResizeBatch(runs, skipped, {case_id: p[1] for case_id, p in prepared.items()})


RESIZE = Batches.by_entry("resize", all_cases(), _batch)


def _alone(module, inputs, specs, smaller):
    """The smaller and the export-time run of the sample lowered alone."""
    em = lower(module, inputs, dynamic_shapes=_spec(module, specs))
    if cpu_ops(em) or len(delegate_calls(em)) != 1:
        pytest.skip("with dynamic dims this sample is not one delegate (symbolic arguments stay on CPU)")
    method = load_method(em.to_executorch().buffer)
    return [method.execute(run_inputs) for run_inputs in (smaller, list(inputs))]


@pytest.mark.parametrize("entry_name, case_id, module, inputs", RESIZE.params())
def test_op_resizes(entry_name, case_id, module, inputs):
    batch = RESIZE.result(entry_name, case_id)
    if case_id in batch.skipped:
        pytest.skip(batch.skipped[case_id])
    smaller = batch.smaller[case_id]
    if case_id in batch.runs.outputs:
        runs = batch.runs.outputs[case_id]
    else:
        specs, _ = _prepare(entry_name, module, inputs)
        runs = _alone(module, inputs, specs, smaller)
    kind = TOLERANCES[ENTRIES[entry_name].kind]
    eager = copy.deepcopy(module)  # both runs from the first state, as the program's (state carries over)
    for run_inputs, outs in zip((smaller, list(inputs)), runs):  # smaller first, then back to full size
        with torch.no_grad():
            ref = eager(*run_inputs)
        refs = ref if isinstance(ref, (tuple, list)) else (ref,)
        assert len(outs) == len(refs)
        for out, r in zip(outs, refs):
            assert out.shape == r.shape
            torch.testing.assert_close(out, r, **kind, equal_nan=True)
