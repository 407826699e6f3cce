"""The registry's entries, their samples, and that the samples are what the partitioner delegates."""

import torch
from op_cases import all_cases
from op_samples import SAMPLES

from vkdelegate.op_registry import REGISTRY, lookup, registered_op_names


def test_samples_are_keyed_by_registry_entries():
    """Every entry has a sample set and every sample set names an entry."""
    names = {entry.name for entry in REGISTRY}
    assert not names - set(SAMPLES), f"entries without samples: {sorted(names - set(SAMPLES))}"
    assert not set(SAMPLES) - names, f"samples of no registry entry: {sorted(set(SAMPLES) - names)}"


def test_every_entry_has_samples():
    for entry in REGISTRY:
        cases = SAMPLES[entry.name]()
        assert cases, f"{entry.name} has no sample cases"
        ids = [case.case_id for case in cases]
        assert len(ids) == len(set(ids)), f"{entry.name} repeats case ids"


def test_registered_op_names_are_unique_schema_names():
    names = registered_op_names()
    assert len(names) == len(set(names))
    assert {"aten.add.Tensor", "aten.linear.default", "dim_order_ops._clone_dim_order.default"} <= set(names)


def test_samples_are_seeded():
    samples = SAMPLES[REGISTRY.entries[0].name]
    first, second = samples(), samples()
    for a, b in zip(first, second):
        assert all(torch.equal(x, y) for x, y in zip(a.inputs, b.inputs))


def test_samples_cover_a_large_tensor():
    assert any(t.numel() > 1_000_000 for _, _, _, inputs in all_cases() for t in inputs)


def test_kept_from_decomposition():
    """Exactly the ops with native kernels that ExecuTorch would otherwise decompose."""
    aten = torch.ops.aten
    assert set(REGISTRY.ops_to_keep_undecomposed()) == {
        aten.linear.default, aten.silu.default, aten.hardswish.default, aten.hardsigmoid.default,
        aten.leaky_relu.default, aten.softplus.default, aten.elu.default,
        aten.scaled_dot_product_attention.default, aten.rms_norm.default, aten.roll.default,
        aten.pixel_shuffle.default, aten.pixel_unshuffle.default,
    }


def test_lookup_gives_reasons():
    class Ops(torch.nn.Module):
        def forward(self, x, d):
            return torch.cumsum(x, 0), d + d, torch.relu(x)

    program = torch.export.export(Ops(), (torch.randn(3), torch.randn(3, dtype=torch.float64)))
    results = {
        node.name: lookup(node) for node in program.graph.nodes if node.op == "call_function"
    }
    assert results["cumsum"] == (None, "aten.cumsum.default is not in the vkdelegate op registry")
    assert results["add"] == (None, "input d is float64; add supports float16, float32, int32, int64")
    entry, reason = results["relu"]
    assert entry.name == "relu" and reason is None


# That every sample lowers to one delegate with no CPU op, and that the entry's own op is
# among the delegated ones: tests/test_ops.py (test_op_matches_eager, test_entry_op_is_delegated).
