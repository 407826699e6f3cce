"""Every sample case of every registry entry, lowered to a .pte and run through
the ExecuTorch runtime on the Vulkan device, against eager PyTorch."""
import copy

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


# ---- fp16 family: the samples of every entry that lists float16, in half (module and
# float inputs cast with .half()). Only the first two samples per entry run, which covers
# each entry's f16 shader path while keeping the suite's added time moderate.
FP16_SAMPLES_PER_ENTRY = 2
DTYPES = {entry.name: entry.dtypes for entry in REGISTRY}


def _half_case(module, inputs):
    module = copy.deepcopy(module).half()
    inputs = tuple(x.half() if x.is_floating_point() else x for x in inputs)
    floats = [t for t in list(inputs) + list(module.parameters()) + list(module.buffers())
              if t.dtype == torch.float16]
    return (module, inputs) if floats else None


def _fp16_cases():
    cases, taken = [], {}
    for entry_name, case_id, module, inputs in CASES:
        if torch.float16 not in DTYPES[entry_name] or taken.get(entry_name, 0) >= FP16_SAMPLES_PER_ENTRY:
            continue
        half = _half_case(module, inputs)
        if half is not None:
            taken[entry_name] = taken.get(entry_name, 0) + 1
            cases.append((entry_name, case_id) + half)
    return cases


FP16_CASES = _fp16_cases()


@pytest.mark.parametrize("entry_name, case_id, module, inputs", FP16_CASES, ids=case_ids(FP16_CASES))
def test_op_fp16_matches_eager(entry_name, case_id, module, inputs):
    """Against eager float32 on the same half values (weights and inputs upcast), rounded to
    half at the end: what PyTorch's half kernels compute, on ops its CPU lacks in half too."""
    em = lower(module, inputs)
    assert cpu_ops(em) == [], "the whole case should run in the delegate"
    assert len(delegate_calls(em)) == 1
    out_node = next(n for n in em.exported_program().graph.nodes if n.op == "output")
    dtypes = [v.meta["val"].dtype for v in out_node.args[0]]
    with torch.no_grad():
        ref = copy.deepcopy(module).float()(*[x.float() if x.dtype == torch.float16 else x for x in inputs])
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    outs = run_pte(em.to_executorch().buffer, inputs)
    assert len(outs) == len(refs) == len(dtypes)
    for out, r, dtype in zip(outs, refs, dtypes):
        assert out.shape == r.shape and out.dtype == dtype
        if dtype == torch.float16:
            torch.testing.assert_close(out.float(), r.half().float(), **TOLERANCES["fp16_" + KIND[entry_name]],
                                       equal_nan=True)
        else:
            torch.testing.assert_close(out, r.to(dtype), **TOLERANCES[KIND[entry_name]], equal_nan=True)
