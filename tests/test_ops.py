"""Every sample case of every registry entry, lowered to a .pte and run through
the ExecuTorch runtime on the Vulkan device, against eager PyTorch: in float32 and,
for the entries that list float16, in half.

The samples of an entry are lowered and run as batches (tests/op_batches.py: one
program per batch, each sample its own subgraph); a sample its batch cannot vouch
for is lowered and run alone."""
import copy

import pytest
import torch

from helpers import TOLERANCES, cpu_ops, delegate_calls, delegated_targets, lower, output_dtypes, run_pte
from op_batches import Batches, run_batch
from op_cases import all_cases
from vkdelegate.op_registry import REGISTRY

CASES = all_cases()
ENTRIES = {entry.name: entry for entry in REGISTRY}


def _batch(cases):
    return run_batch([(case_id, module, inputs) for _, case_id, module, inputs in cases])


def _outputs(batches, entry_name, case_id, module, inputs):
    """(outputs, their dtypes) from the case's batch, else from the case lowered alone
    (which must then be one delegate with no CPU op)."""
    result = batches.result(entry_name, case_id)
    if case_id in result.outputs:
        return result.outputs[case_id][0], result.dtypes[case_id]
    em = lower(module, inputs)
    assert cpu_ops(em) == [], "the whole case should run in the delegate"
    assert len(delegate_calls(em)) == 1, f"expected one delegate, got {len(delegate_calls(em))}"
    return run_pte(em.to_executorch().buffer, inputs), output_dtypes(em)


FP32 = Batches.by_entry("fp32", CASES, _batch)


@pytest.mark.parametrize("entry_name, case_id, module, inputs", FP32.params())
def test_op_matches_eager(entry_name, case_id, module, inputs):
    outs, _ = _outputs(FP32, entry_name, case_id, module, inputs)
    with torch.no_grad():
        ref = copy.deepcopy(module)(*inputs)  # (from its first state: output_count's reason)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    assert len(outs) == len(refs)
    for out, r in zip(outs, refs):
        assert out.shape == r.shape and out.dtype == r.dtype
        torch.testing.assert_close(out, r, **TOLERANCES[ENTRIES[entry_name].kind], equal_nan=True)


FIRST_CASES = {}
for _case in CASES:
    FIRST_CASES.setdefault(_case[0], _case)


@pytest.mark.parametrize("entry_name", [
    pytest.param(name, marks=pytest.mark.xdist_group(FP32.key_of[(name, FIRST_CASES[name][1])]))
    for name in sorted(ENTRIES)])
def test_entry_op_is_delegated(entry_name):
    """The entry's own op is among the delegated ops of its first batch (its samples
    exercise it, not only ops it decomposes into)."""
    _, case_id, module, inputs = FIRST_CASES[entry_name]
    result = FP32.result(entry_name, case_id)
    targets = result.delegated_targets
    if not targets:  # the batch failed: the first sample alone
        targets = delegated_targets(lower(module, inputs))
    assert targets & set(ENTRIES[entry_name].targets), f"no {entry_name} op among the delegated {targets}"


# ---- the samples of every entry that lists float16, in half (module and float inputs
# cast with .half()). Only the first two samples per entry run, which covers each
# entry's f16 shader path.
FP16_SAMPLES_PER_ENTRY = 2


def _half_case(module, inputs):
    module = copy.deepcopy(module).half()
    inputs = tuple(x.half() if x.is_floating_point() else x for x in inputs)
    floats = [t for t in list(inputs) + list(module.parameters()) + list(module.buffers())
              if t.dtype == torch.float16]
    return (module, inputs) if floats else None


def _fp16_cases():
    cases, taken = [], {}
    for entry_name, case_id, module, inputs in CASES:
        if torch.float16 not in ENTRIES[entry_name].dtypes or taken.get(entry_name, 0) >= FP16_SAMPLES_PER_ENTRY:
            continue
        half = _half_case(module, inputs)
        if half is not None:
            taken[entry_name] = taken.get(entry_name, 0) + 1
            cases.append((entry_name, case_id) + half)
    return cases


FP16 = Batches.by_entry("fp16", _fp16_cases(), _batch)


@pytest.mark.parametrize("entry_name, case_id, module, inputs", FP16.params())
def test_op_fp16_matches_eager(entry_name, case_id, module, inputs):
    """Against eager float32 on the same half values (weights and inputs upcast), rounded to
    half at the end: what PyTorch's half kernels compute, on ops its CPU lacks in half too."""
    outs, dtypes = _outputs(FP16, entry_name, case_id, module, inputs)
    with torch.no_grad():
        ref = copy.deepcopy(module).float()(*[x.float() if x.dtype == torch.float16 else x for x in inputs])
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    kind = ENTRIES[entry_name].kind
    assert len(outs) == len(refs) == len(dtypes)
    for out, r, dtype in zip(outs, refs, dtypes):
        assert out.shape == r.shape and out.dtype == dtype
        if dtype == torch.float16:
            torch.testing.assert_close(out.float(), r.half().float(), **TOLERANCES["fp16_" + kind], equal_nan=True)
        else:
            torch.testing.assert_close(out, r.to(dtype), **TOLERANCES[kind], equal_nan=True)
