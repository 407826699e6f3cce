"""Every sample case of every registry entry, lowered to a .pte and run through
the ExecuTorch runtime on the Vulkan device, against eager PyTorch."""
import pytest
import torch

from helpers import TOLERANCES, cpu_ops, delegate_calls, lower, run_pte
from op_cases import all_cases, case_ids
from vkdelegate.op_registry import REGISTRY

CASES = all_cases()
KIND = {entry.name: entry.kind for entry in REGISTRY}


@pytest.mark.parametrize("entry_name, case_id, module, inputs", CASES, ids=case_ids(CASES))
def test_op_matches_eager(entry_name, case_id, module, inputs):
    em = lower(module, inputs)
    assert cpu_ops(em) == [], "the whole case should run in the delegate"
    calls = delegate_calls(em)
    with torch.no_grad():
        ref = module(*inputs)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    outs = run_pte(em.to_executorch().buffer, inputs)
    assert len(outs) == len(refs)
    for out, r in zip(outs, refs):
        assert out.shape == r.shape and out.dtype == r.dtype
        torch.testing.assert_close(out, r, **TOLERANCES[KIND[entry_name]], equal_nan=True)
    assert len(calls) == 1, f"expected one delegate, got {len(calls)}"
