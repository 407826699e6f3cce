import dataclasses
import logging

import pytest
import torch
from executorch.exir import to_edge
from helpers import MLP, cpu_ops, delegate_blob, delegate_count, delegated_targets, lower, lowered_modules

from vkdelegate.op_registry import REGISTRY, OpRegistry
from vkdelegate.partitioner import VulkanPartitioner
from vkdelegate.partitioner import vulkan_partitioner
from vkdelegate.serialization import deserialize_blob


class WithCumsum(torch.nn.Module):
    """Supported ops, an unsupported one (cumsum), then supported ops again."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        y = torch.relu(self.fc1(x))
        y = torch.cumsum(y, dim=1)
        return self.fc2(torch.sigmoid(y))


def mlp_input():
    torch.manual_seed(0)
    return (torch.randn(3, 16),)


def test_mlp_is_one_partition():
    edge = lower(MLP(), mlp_input())
    assert delegate_count(edge) == 1
    assert cpu_ops(edge) == []
    graph = deserialize_blob(delegate_blob(edge))
    assert len(graph.input_ids) == 1 and len(graph.output_ids) == 1
    assert len(graph.constants) == 4  # both weights and biases live in the blob


def test_unsupported_op_splits_into_two_partitions(caplog):
    with caplog.at_level(logging.INFO, logger="vkdelegate"):
        edge = lower(WithCumsum(), mlp_input())
    assert delegate_count(edge) == 2
    assert cpu_ops(edge) == ["aten.cumsum.default"]
    assert "aten.cumsum.default is not in the vkdelegate op registry" in caplog.text
    assert "not delegated: aten_cumsum_default" in caplog.text
    assert "aten.linear.default: 2" in caplog.text


def test_to_edge_then_to_backend():
    # Without ops_to_not_decompose, linear arrives decomposed (permute_copy + addmm).
    edge = to_edge(torch.export.export(MLP(), mlp_input())).to_backend(VulkanPartitioner())
    assert delegate_count(edge) == 1
    assert cpu_ops(edge) == []
    names = [call.name for call in deserialize_blob(delegate_blob(edge)).chain]
    assert "aten.addmm.default" in names and "aten.permute_copy.default" not in names  # folded into the weight


def test_coexists_with_executorch_vulkan_partitioner():
    from executorch.backends.vulkan.partitioner.vulkan_partitioner import (
        VulkanPartitioner as ExecuTorchVulkanPartitioner,
    )

    theirs = lower(MLP(), mlp_input(), partitioner=ExecuTorchVulkanPartitioner())
    ours = lower(MLP(), mlp_input())
    assert [module.backend_id for module in lowered_modules(theirs)] == ["VulkanBackend"]
    assert [module.backend_id for module in lowered_modules(ours)] == ["VkDelegateBackend"]
    theirs.to_executorch()
    ours.to_executorch()


def test_to_executorch_writes_pte(tmp_path):
    edge = lower(WithCumsum(), mlp_input())
    program = edge.to_executorch()
    path = tmp_path / "with_cumsum.pte"
    path.write_bytes(program.buffer)
    pte = path.read_bytes()
    assert len(pte) > 0
    for module in lowered_modules(edge):
        assert module.processed_bytes in pte


def test_options_reach_the_blob():
    edge = lower(MLP(), mlp_input(), {"require_dynamic_shapes": False})
    options = deserialize_blob(delegate_blob(edge)).options
    assert options == ["force_fp16=false", "fuse_rope_attention=true", "gguf_repack=true", "require_dynamic_shapes=false"]


def test_unknown_option_is_rejected():
    with pytest.raises(ValueError, match="unknown vkdelegate compile option.*texture_limits"):
        VulkanPartitioner({"texture_limits": 4})


def test_badly_typed_option_is_rejected():
    with pytest.raises(ValueError, match="require_dynamic_shapes"):
        VulkanPartitioner({"require_dynamic_shapes": "yes"})


def test_force_fp16_is_accepted():
    assert VulkanPartitioner({"force_fp16": True}).options["force_fp16"] is True


class ReshapeMLP(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x.view(-1)) + 1.0


def test_require_dynamic_shapes_keeps_non_resizable_ops_on_cpu(caplog, monkeypatch):
    # Every op of ReshapeMLP resizes; pretend view_copy does not.
    registry = OpRegistry(
        [dataclasses.replace(entry, supports_resize=False) if entry.name == "view_copy" else entry for entry in REGISTRY]
    )
    monkeypatch.setattr(vulkan_partitioner, "REGISTRY", registry)
    with caplog.at_level(logging.INFO, logger="vkdelegate"):
        edge = lower(ReshapeMLP(), (torch.randn(3, 5),), {"require_dynamic_shapes": True})
    assert cpu_ops(edge) == ["aten.view_copy.default"]
    assert "view_copy cannot resize, and require_dynamic_shapes is set" in caplog.text
    assert cpu_ops(lower(ReshapeMLP(), (torch.randn(3, 5),))) == []


def test_require_dynamic_shapes_accepts_every_op_that_resizes():
    edge = lower(ReshapeMLP(), (torch.randn(3, 5),), {"require_dynamic_shapes": True})
    assert cpu_ops(edge) == []


def test_bounded_dynamic_shape_uses_upper_bound():
    batch = torch.export.Dim("batch", max=64)
    edge = lower(MLP(), mlp_input(), dynamic_shapes=({0: batch},))
    graph = deserialize_blob(delegate_blob(edge))
    assert graph.values[graph.input_ids[0]].sizes == (64, 16)
    assert graph.values[graph.output_ids[0]].sizes == (64, 8)


def test_unbounded_dynamic_shape_is_not_delegated(caplog):
    batch = torch.export.Dim("batch")
    with caplog.at_level(logging.INFO, logger="vkdelegate"):
        edge = lower(MLP(), mlp_input(), dynamic_shapes=({0: batch},))
    assert delegate_count(edge) == 0
    assert "has no upper bound" in caplog.text


def test_unsupported_dtype_is_not_delegated(caplog):
    class DoubleAdd(torch.nn.Module):
        def forward(self, x, y):
            return x + y

    inputs = (torch.arange(6, dtype=torch.float64), torch.arange(6, dtype=torch.float64))
    with caplog.at_level(logging.INFO, logger="vkdelegate"):
        edge = lower(DoubleAdd(), inputs)
    assert delegate_count(edge) == 0
    assert "dtype torch.float64 cannot be serialized" in caplog.text


def test_linear_kept_undecomposed_only_where_supported():
    # A float64 linear is not delegated; it must then be decomposed, not kept
    # (ExecuTorch raises on a kept op that ends up neither decomposed nor delegated).
    class Mixed(torch.nn.Module):
        def forward(self, x, w, xi, wi):
            return torch.nn.functional.linear(x, w), torch.nn.functional.linear(xi, wi)

    inputs = (torch.randn(2, 3), torch.randn(4, 3), torch.ones(2, 3, dtype=torch.float64), torch.ones(4, 3, dtype=torch.float64))
    edge = lower(Mixed(), inputs)
    assert "aten.linear.default" not in cpu_ops(edge)
    assert [call.name for call in deserialize_blob(delegate_blob(edge)).chain] == ["aten.linear.default"]


class AttentionOfTransposedHeads(torch.nn.Module):
    """SDPA of non-contiguous q/k (heads transposed out of a projection), whose
    output export views through a transpose: it must stay one kept SDPA."""

    def forward(self, x):
        q = x.view(1, 5, 4, 8).transpose(1, 2) * 2
        k = x.view(1, 5, 4, 8).transpose(1, 2) * 3
        out = torch.nn.functional.scaled_dot_product_attention(q, k, k, is_causal=True)
        return out.transpose(1, 2).reshape(1, 5, -1)


def test_sdpa_output_viewed_through_transpose_is_delegated():
    torch.manual_seed(0)
    edge = lower(AttentionOfTransposedHeads(), (torch.randn(1, 5, 32),))
    assert delegate_count(edge) == 1
    assert cpu_ops(edge) == []
    targets = {str(target) for target in delegated_targets(edge)}
    assert any("scaled_dot_product_attention" in target for target in targets)
