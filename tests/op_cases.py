"""Test cases generated from the op registry's samples, for parametrized tests.

    @pytest.mark.parametrize("entry_name, case_id, module, inputs", all_cases(), ids=case_ids(all_cases()))
"""

from typing import List, Tuple

import torch
from op_samples import SAMPLES

from vkdelegate.op_registry import REGISTRY

OpCase = Tuple[str, str, torch.nn.Module, Tuple[torch.Tensor, ...]]


def all_cases() -> List[OpCase]:
    """(entry name, case id, module, example inputs) for every sample of every registry entry."""
    return [(entry.name, case.case_id, case.module, case.inputs) for entry in REGISTRY
            for case in SAMPLES[entry.name]()]


def case_ids(cases: List[OpCase]) -> List[str]:
    return [f"{entry_name}-{case_id}" for entry_name, case_id, _, _ in cases]
