"""Every op resizes: each registry sample is exported with automatic dynamic
dims, lowered once, then run with every dynamic size made smaller, and compared
with eager PyTorch on the same smaller inputs (no rebuild in between)."""
import inspect

import pytest
import torch
from torch.export import Dim

from helpers import TOLERANCES, cpu_ops, delegate_calls, lower
from op_cases import all_cases, case_ids
from executorch.runtime import Runtime
from vkdelegate.op_registry import REGISTRY

CASES = all_cases()
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


@pytest.mark.parametrize("entry_name, case_id, module, inputs", CASES, ids=case_ids(CASES))
def test_op_resizes(entry_name, case_id, module, inputs):
    entry = ENTRIES[entry_name]
    if not entry.supports_resize:
        pytest.skip(f"{entry_name}: registry says no resize ({entry.notes})")
    # Upper bound: the export-time size (the delegate allocates at it).
    shapes = tuple({d: Dim.AUTO(max=max(int(x.shape[d]), 2)) for d in range(x.dim())}
                   if isinstance(x, torch.Tensor) else None for x in inputs)
    params = inspect.signature(module.forward).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        shapes = (shapes,)  # forward(*inputs) takes one nested spec
    try:
        ep = torch.export.export(module.eval(), tuple(inputs), dynamic_shapes=shapes)
    except Exception as e:  # export itself cannot make this sample dynamic
        pytest.skip(f"export with dynamic dims failed: {type(e).__name__}")
    smaller = _smaller_inputs(ep, inputs)
    if smaller is None:
        pytest.skip("export found no dynamic dim in this sample")
    em = lower(module, inputs, dynamic_shapes=shapes)
    if cpu_ops(em) or len(delegate_calls(em)) != 1:
        pytest.skip("with dynamic dims this sample is not one delegate (symbolic arguments stay on CPU)")
    pte = em.to_executorch().buffer
    program = Runtime.get().load_program(pte)
    method = program.load_method("forward")
    kind = TOLERANCES[entry.kind]
    try:
        with torch.no_grad():
            module(*smaller)
    except Exception as e:  # shrinking symbols one by one broke a relation between inputs
        pytest.skip(f"eager PyTorch rejects the smaller inputs too: {type(e).__name__}")
    for run_inputs in (smaller, list(inputs)):  # smaller first, then back to the export-time sizes
        outs = method.execute(run_inputs)
        with torch.no_grad():
            ref = module(*run_inputs)
        refs = ref if isinstance(ref, (tuple, list)) else (ref,)
        for out, r in zip(outs, refs):
            assert out.shape == r.shape
            torch.testing.assert_close(out, r, **kind, equal_nan=True)
