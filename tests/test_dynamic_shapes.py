"""Upper-bound dynamic shapes: one lowered program runs every size within its Dims."""
import pytest
import torch
from executorch.runtime import Runtime

import vkdelegate.runtime as rt
from helpers import TOLERANCES, cpu_ops, delegate_blob, delegate_calls, lower
from vkdelegate.examples.models.transformer import TransformerBlock
from vkdelegate.partitioner import VulkanPartitioner
from vkdelegate.serialization import deserialize_blob
from vkdelegate.serialization.graph_ir import SymIntValue

MAX_SEQ = 96


_KEEP_ALIVE = []


def load(edge_manager):
    """The forward method of the lowered program; its buffer and program stay alive with the module."""
    buffer = edge_manager.to_executorch().buffer
    program = Runtime.get().load_program(buffer)
    _KEEP_ALIVE.append((buffer, program))
    return program.load_method("forward")


@pytest.fixture(scope="module")
def transformer():
    model = TransformerBlock(dim=32, heads=2).eval()
    seq = torch.export.Dim("seq", min=1, max=MAX_SEQ)
    em = lower(model, (torch.randn(2, 16, 32),), options={"require_dynamic_shapes": True},
               dynamic_shapes=({1: seq},))
    return model, em


def test_transformer_with_dynamic_sequence_is_one_delegate_with_symints(transformer):
    _, em = transformer
    assert len(delegate_calls(em)) == 1 and cpu_ops(em) == []
    graph = deserialize_blob(delegate_blob(em))
    assert any(isinstance(value, SymIntValue) for value in graph.values)
    assert "aten.sym_size.int" in [call.name for call in graph.chain]
    (x,) = [graph.values[i] for i in graph.input_ids]
    assert x.sizes == (2, MAX_SEQ, 32) and x.min_sizes == (2, 1, 32)


def test_transformer_runs_every_sequence_length_in_one_loaded_program(transformer):
    model, em = transformer
    method = load(em)
    reports_before = None
    for seq in (1, 7, 64, MAX_SEQ, 7):
        x = torch.randn(2, seq, 32)
        out = method.execute([x])[0]
        ref = model(x)
        assert out.shape == ref.shape
        torch.testing.assert_close(out, ref, **TOLERANCES["model"])
        reports = rt.loaded_memory_reports()
        # Same delegate, same buffers: nothing is rebuilt or re-uploaded.
        assert reports_before is None or reports == reports_before
        reports_before = reports


def test_out_of_bound_inputs_give_clear_errors():
    model = TransformerBlock(dim=32, heads=2).eval()
    seq = torch.export.Dim("seq", min=4, max=16)
    em = lower(model, (torch.randn(1, 8, 32),), dynamic_shapes=({1: seq},))
    blob = delegate_blob(em)
    # Directly on the graph: the messages name the bound.
    graph = rt._vkdelegate.Graph(blob)
    with pytest.raises(ValueError, match=r"dim 1 is above its upper bound 16"):
        graph.run([torch.randn(1, 17, 32).numpy()])
    with pytest.raises(ValueError, match=r"dim 1 is below its minimum 4"):
        graph.run([torch.randn(1, 3, 32).numpy()])
    (out,) = graph.run([torch.randn(1, 4, 32).numpy()])
    assert out.shape == (1, 4, 32)
    # Through ExecuTorch: execute fails, and the backend's error says why.
    method = load(em)
    with pytest.raises(RuntimeError):
        method.execute([torch.randn(1, 3, 32)])
    assert "below its minimum 4" in rt.last_error()
    with pytest.raises(RuntimeError):
        method.execute([torch.randn(1, 17, 32)])
    out = method.execute([torch.randn(1, 16, 32)])[0]
    assert out.shape == (1, 16, 32)


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.fc(x.flatten(1))


def test_cnn_with_dynamic_batch():
    model = SmallCNN().eval()
    batch = torch.export.Dim("batch", min=1, max=8)
    em = lower(model, (torch.randn(2, 3, 8, 8),), options={"require_dynamic_shapes": True},
               dynamic_shapes=({0: batch},))
    assert len(delegate_calls(em)) == 1 and cpu_ops(em) == []
    method = load(em)
    for n in (1, 5, 8, 3):
        x = torch.randn(n, 3, 8, 8)
        out = method.execute([x])[0]
        assert out.shape == (n, 10)
        torch.testing.assert_close(out, model(x), **TOLERANCES["model"])


class SymIntArithmetic(torch.nn.Module):
    """Sizes computed from dynamic sizes: b * t (sym mul), t // 2 (sym floordiv), expand to t."""

    def forward(self, x, y):
        b, t, c = x.shape
        flat = x.reshape(b * t, c)
        halves = x.reshape(b, t // 2, 2 * c)
        wide = y.expand(b, t, c)
        return torch.relu(flat) + 1.0, halves * 2.0, wide + x


def test_symint_arithmetic_in_view_and_expand_sizes():
    model = SymIntArithmetic().eval()
    half = torch.export.Dim("half", min=1, max=12)
    batch = torch.export.Dim("batch", min=1, max=3)
    inputs = (torch.randn(2, 8, 5), torch.randn(1, 1, 5))
    em = lower(model, inputs, dynamic_shapes=({0: batch, 1: 2 * half}, {}))
    assert len(delegate_calls(em)) == 1 and cpu_ops(em) == []
    names = {call.name for call in deserialize_blob(delegate_blob(em)).chain}
    assert {"aten.sym_size.int", "sym.mul"} <= names
    method = load(em)
    for b, t in ((1, 2), (3, 24), (2, 10)):
        x, y = torch.randn(b, t, 5), torch.randn(1, 1, 5)
        outs = method.execute([x, y])
        for out, ref in zip(outs, model(x, y)):
            assert out.shape == ref.shape
            torch.testing.assert_close(out, ref, **TOLERANCES["elementwise"])


class SliceToLength(torch.nn.Module):
    """slice_copy with a symbolic end: the runtime reads it at every resize."""

    def forward(self, x, table):
        return table[:, : x.shape[1]] + x


class RollByLength(torch.nn.Module):
    """roll with a symbolic shift decomposes into scalar_tensor(symbolic value) and index
    arithmetic; scalar_tensor takes no symbolic args, so it stays on CPU."""

    def forward(self, x, table):
        return torch.roll(table, x.shape[1], 1)[:, :1] + x


def test_symbolic_slice_end_runs_on_the_gpu_at_every_size():
    model = SliceToLength().eval()
    seq = torch.export.Dim("seq", min=1, max=16)
    table = torch.randn(1, 16, 4)
    em = lower(model, (torch.randn(1, 8, 4), table), dynamic_shapes=({1: seq}, {}))
    assert cpu_ops(em) == [] and len(delegate_calls(em)) == 1
    method = load(em)
    for t in (1, 16, 5):
        x = torch.randn(1, t, 4)
        torch.testing.assert_close(method.execute([x, table])[0], model(x, table))


def test_ops_without_symint_args_stay_on_cpu_and_results_stay_right():
    model = RollByLength().eval()
    seq = torch.export.Dim("seq", min=1, max=16)
    table = torch.randn(1, 16, 4)
    em = lower(model, (torch.randn(1, 8, 4), table), dynamic_shapes=({1: seq}, {}))
    assert any("scalar_tensor" in op for op in cpu_ops(em)), cpu_ops(em)
    method = load(em)
    for t in (1, 16, 5):
        x = torch.randn(1, t, 4)
        torch.testing.assert_close(method.execute([x, table])[0], model(x, table))
