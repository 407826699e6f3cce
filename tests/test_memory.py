"""Memory planning: intermediates with disjoint lifetimes share device memory."""
import subprocess
from pathlib import Path

import pytest
import torch

from helpers import TOLERANCES, delegate_blob, delegate_calls, lower, run_pte
from vkdelegate.backends.memory_planning import plan_memory
from vkdelegate.runtime import _vkdelegate
from vkdelegate.serialization.blob import deserialize_blob
from vkdelegate.serialization.graph_ir import DType, GraphIR, OpCall, TensorValue, ValueListValue

WIDTH, BATCH, LAYERS = 32, 4, 24


class DeepMLP(torch.nn.Module):
    def __init__(self, layers=LAYERS, width=WIDTH):
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = torch.sigmoid(layer(x))  # two ops a layer (a relu would go into the linear)
        return x


class EarlyAndLate(torch.nn.Module):
    """Returns an early activation and a later one computed from it."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a = torch.nn.Linear(WIDTH, WIDTH)
        self.b = torch.nn.Linear(WIDTH, WIDTH)
        self.c = torch.nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        early = torch.relu(self.a(x))
        h = torch.relu(self.b(early))
        h = torch.relu(self.c(h))
        return early, h + 1.0


def test_deep_mlp_plans_a_few_activations_and_matches_eager():
    model, x = DeepMLP().eval(), torch.randn(BATCH, WIDTH)
    em = lower(model, (x,))
    blob = delegate_blob(em)
    graph = deserialize_blob(blob)
    activation = BATCH * WIDTH * 4
    planned = [v for v in graph.values if isinstance(v, TensorValue) and v.mem_obj_id >= 0]
    assert len(planned) >= 2 * (LAYERS - 1)
    assert graph.num_mem_objs <= 3

    report = _vkdelegate.Graph(blob).memory_report()
    assert report["num_shared_objects"] == graph.num_mem_objs
    assert report["planned_bytes"] <= 3 * activation
    assert report["unshared_bytes"] >= 2 * (LAYERS - 1) * activation
    assert report["constant_bytes"] >= LAYERS * (WIDTH * WIDTH + WIDTH) * 4

    out = run_pte(em.to_executorch().buffer, (x,))[0]
    torch.testing.assert_close(out, model(x), **TOLERANCES["model"])


def test_an_intermediate_that_is_an_output_is_never_overwritten():
    model, x = EarlyAndLate().eval(), torch.randn(BATCH, WIDTH)
    em = lower(model, (x,))
    assert len(delegate_calls(em)) == 1
    graph = deserialize_blob(delegate_blob(em))
    for output_id in graph.output_ids:
        assert graph.values[output_id].mem_obj_id == -1
    assert graph.num_mem_objs >= 1
    early, late = run_pte(em.to_executorch().buffer, (x,))
    ref_early, ref_late = model(x)
    torch.testing.assert_close(early, ref_early, **TOLERANCES["model"])
    torch.testing.assert_close(late, ref_late, **TOLERANCES["model"])


def _tensor(n=4):
    return TensorValue(DType.float32, (n,))


def test_views_share_their_input_allocation_and_lifetimes_join():
    # a(%0)=%1, view(%1)=%2, b(%2)=%3, c(%3)=%4, d(%2, %4)=%5: %1 and its view %2
    # are one group living over ops 0..4; %3 (ops 2..3) and %4 (ops 3..4)
    # overlap it and each other, so three objects.
    graph = GraphIR(values=[_tensor() for _ in range(6)])
    graph.chain = [
        OpCall("a", (0, 1)),
        OpCall("view", (1, 2)),
        OpCall("b", (2, 3)),
        OpCall("c", (3, 4)),
        OpCall("d", (2, 4, 5)),
    ]
    graph.input_ids, graph.output_ids = [0], [5]
    plan = plan_memory(graph, lambda name: name == "view")
    ids = {i: graph.values[i].mem_obj_id for i in range(6)}
    assert ids[0] == ids[5] == -1
    assert ids[1] == ids[2] >= 0
    assert len({ids[1], ids[3], ids[4]}) == 3
    assert plan.num_objects == 3


def test_tensors_in_lists_and_reuse_after_last_use():
    # a(%0)=%1, b(%1)=%2, cat([%1, %2])=%3, e(%3)=%4, f(%4)=%5 output: %1 and %2
    # live until the cat; %4 may reuse %1's or %2's object.
    graph = GraphIR(values=[_tensor(), _tensor(), _tensor(), _tensor(8), _tensor(8), _tensor(8),
                            ValueListValue((1, 2))])
    graph.chain = [
        OpCall("a", (0, 1)),
        OpCall("b", (1, 2)),
        OpCall("cat", (6, 3)),
        OpCall("e", (3, 4)),
        OpCall("f", (4, 5)),
    ]
    graph.input_ids, graph.output_ids = [0], [5]
    plan_memory(graph, lambda name: False)
    ids = {i: graph.values[i].mem_obj_id for i in range(6)}
    assert ids[1] != ids[2] and ids[3] not in (ids[1], ids[2])
    assert ids[4] in (ids[1], ids[2])
    assert graph.num_mem_objs == 3


def test_runner_prints_the_memory_report(tmp_path):
    model, x = DeepMLP(layers=4).eval(), torch.randn(BATCH, WIDTH)
    pte = tmp_path / "mlp.pte"
    pte.write_bytes(lower(model, (x,)).to_executorch().buffer)
    runner = Path(_vkdelegate.__file__).parent / "vkdelegate_runner"
    result = subprocess.run([str(runner), "--model", str(pte), "--iters", "2", "--memory"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if "memory:" in line)
    for field in ("planned", "shared objects", "without sharing", "constants", "staging"):
        assert field in line


def _unchecked_blob(graph, monkeypatch):
    from vkdelegate.serialization import blob as blob_module
    from vkdelegate.serialization.blob import serialize_graph

    with monkeypatch.context() as patch:
        patch.setattr(blob_module, "_validate_graph", lambda graph: None)
        return serialize_graph(graph)


def _relu_chain(mem_obj_ids, num_mem_objs, op="aten.relu.default"):
    # %0 input -> op -> %1 -> relu -> %2 output
    graph = GraphIR(values=[TensorValue(DType.float32, (4,), mem_obj_id=i) for i in mem_obj_ids])
    graph.chain = [OpCall(op, (0, 1)), OpCall("aten.relu.default", (1, 2))]
    graph.input_ids, graph.output_ids, graph.num_mem_objs = [0], [2], num_mem_objs
    return graph


def test_runtime_checks_the_plan(monkeypatch):
    ok = _vkdelegate.Graph(_unchecked_blob(_relu_chain((-1, 0, -1), 1), monkeypatch))
    assert ok.memory_report()["num_shared_objects"] == 1
    with pytest.raises(ValueError, match="mem_obj_id 1 is out of range"):
        _vkdelegate.Graph(_unchecked_blob(_relu_chain((-1, 1, -1), 1), monkeypatch))
    with pytest.raises(ValueError, match="shared memory object; inputs and outputs must have their own"):
        _vkdelegate.Graph(_unchecked_blob(_relu_chain((0, -1, -1), 1), monkeypatch))
    # A view whose output the plan put apart from its input (a registry entry
    # without aliases_input) is refused rather than left to corrupt memory.
    view = _relu_chain((-1, 0, -1), 1, op="aten.alias_copy.default")
    with pytest.raises(ValueError, match="aliases_input"):
        _vkdelegate.Graph(_unchecked_blob(view, monkeypatch))
