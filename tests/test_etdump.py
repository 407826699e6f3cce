"""Per-dispatch GPU time in ExecuTorch's ETDump, read by ExecuTorch's own Inspector."""
import pytest
import torch
from executorch.devtools import Inspector
from executorch.exir import to_edge, to_edge_transform_and_lower

import vkdelegate.runtime as rt
from helpers import lowered_modules, run_pte
from vkdelegate.backends.vulkan_preprocess import delegate_event_key
from vkdelegate.partitioner import VulkanPartitioner
from vkdelegate.runtime.etdump import run_with_etdump
from vkdelegate.serialization.blob import deserialize_blob

BACKEND = "VkDelegateBackend"
# One worker exports the model once for every test here.
pytestmark = pytest.mark.xdist_group("etdump")


class LinearSigmoidCumsumMul(torch.nn.Module):
    """Two delegates around a CPU op: [linear, sigmoid] -> cumsum (not in the registry) -> [mul]
    (a sigmoid: a relu would go into the linear, linear_act_fusion.py)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 32)

    def forward(self, x):
        return torch.cumsum(torch.sigmoid(self.fc(x)), 1) * 2


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    torch.manual_seed(0)
    model = LinearSigmoidCumsumMul().eval()
    x = torch.randn(4, 16)
    edge = to_edge_transform_and_lower(torch.export.export(model, (x,)), partitioner=[VulkanPartitioner()],
                                       generate_etrecord=True)
    modules = lowered_modules(edge)
    program = edge.to_executorch()
    folder = tmp_path_factory.mktemp("etdump")
    pte, etdump, etrecord = (str(folder / name) for name in ("model.pte", "model.etdp", "model.etrecord"))
    with open(pte, "wb") as f:
        f.write(program.buffer)
    # The Inspector resolves debug handles from a saved ETRecord: the in-memory object's maps
    # are keyed by int instruction ids where the Inspector looks up strings.
    program.get_etrecord().save(etrecord)
    loaded_before = len(rt.loaded_shaders())
    outputs = run_with_etdump(pte, [x], etdump)
    return dict(model=model, x=x, pte=program.buffer, modules=modules, outputs=outputs,
                inspector=Inspector(etdump_path=etdump, etrecord=etrecord), loaded_before=loaded_before)


def _execute_events(inspector):
    block = next(b for b in inspector.event_blocks if b.name == "Execute")
    return block.events


def _ours(events):
    return [e for e in events if e.is_delegated_op and e.delegate_backend_name == BACKEND]


def test_one_event_per_dispatch_named_by_op_and_shader(traced):
    events = _ours(_execute_events(traced["inspector"]))
    expected = []
    for module in traced["modules"]:
        graph = deserialize_blob(module.processed_bytes)
        shaders = rt.Graph(module.processed_bytes).shaders()
        # Every op of these partitions runs one kernel, in chain order.
        assert len(shaders) == len(graph.chain)
        expected += [delegate_event_key(call.name, i) + " " + shader
                     for i, (call, shader) in enumerate(zip(graph.chain, shaders))]
    assert [e.name for e in events] == expected
    assert [e.name.split(" (")[0] for e in events] == ["aten.linear.default", "aten.sigmoid.default", "aten.mul.Tensor"]


def test_debug_handles_reach_the_aten_nodes(traced):
    events = _ours(_execute_events(traced["inspector"]))
    for event in events:
        assert event.debug_handles, event.name
        assert event.name.split(" (")[0] in event.op_types, (event.name, event.op_types)


def test_durations_are_plausible(traced):
    events = _execute_events(traced["inspector"])
    ours = _ours(events)
    assert all(e.perf_data.raw[0] > 0 for e in ours)
    calls = [e for e in events if e.name == "DELEGATE_CALL"]
    assert len(calls) == 2
    for call in calls:
        mine = [e for e in ours if e._instruction_id == call._instruction_id]
        assert mine
        # GPU time of the dispatches within the host's time of the whole delegate call,
        # in order, each starting where the previous ended (the same units as the CPU ops).
        assert sum(e.perf_data.raw[0] for e in mine) <= call.perf_data.raw[0]
        starts = [e.start_time[0] for e in mine]
        assert call.start_time[0] <= starts[0] and starts == sorted(starts)
        ms_per_tick = 1e-6  # the Inspector's default scales: host ticks are ns, shown in ms
        for before, after in zip(mine, mine[1:]):
            gap_ticks = after.start_time[0] - before.start_time[0]
            assert gap_ticks * ms_per_tick == pytest.approx(before.perf_data.raw[0], rel=1e-6, abs=1e-5)


def test_outputs_match_a_run_without_event_tracer(traced):
    untraced = run_pte(traced["pte"], [traced["x"]])
    torch.testing.assert_close(traced["outputs"][0], untraced[0], rtol=0, atol=0)
    torch.testing.assert_close(traced["outputs"][0], traced["model"](traced["x"]), rtol=1e-4, atol=1e-4)


def test_fused_op_maps_to_every_node_of_its_pattern():
    # conv + batch norm + relu become one op (backends/fuse_conv.py): its dispatch stands for all three.
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()).eval()
    edge = to_edge(torch.export.export(model, (torch.randn(1, 3, 8, 8),)))
    handles = {node.name: node.meta["debug_handle"]
               for node in edge.exported_program().graph.nodes if node.op == "call_function"}
    (module,) = lowered_modules(edge.to_backend(VulkanPartitioner()))
    graph = deserialize_blob(module.processed_bytes)
    assert len(graph.chain) == 1
    (key, mapped), = module.meta["debug_handle_map"].items()
    assert key == delegate_event_key(graph.chain[0].name, 0)
    assert set(mapped) == set(handles.values()), handles


def test_traced_executes_replay_one_recording(traced, tmp_path):
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(traced["pte"], enable_etdump=True)
    method = program.load_method("forward")
    for _ in range(3):
        method.execute([traced["x"]])
    stats = rt.loaded_execute_stats()[-2:]  # this program's two delegates
    # Tracing records once (timestamps and a barrier per dispatch), then replays that.
    assert [s["executes"] for s in stats] == [3, 3]
    assert [s["records"] for s in stats] == [1, 1]
    program.write_etdump_result_to_file(str(tmp_path / "three.etdp"), None)
    ours = _ours_without_etrecord(Inspector(etdump_path=str(tmp_path / "three.etdp")))
    assert len(ours) == 3 and all(len(e.perf_data.raw) == 3 for e in ours)


def _ours_without_etrecord(inspector):
    # Without an ETRecord the Inspector knows no backend names: our events are the delegated ones.
    return [e for e in _execute_events(inspector) if e.is_delegated_op]
