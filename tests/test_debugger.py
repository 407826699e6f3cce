"""The numerical debugger: the CPU reference executor of our blobs (vkdelegate.debug.reference),
the runtime's debug mode (DEBUG_VALUES, Graph.read_value) and `vkdelegate debug`'s search for
the first diverging op, which must name a fault planted in one kernel (DEBUG_PERTURB_OP)."""
import functools

import pytest
import torch

from helpers import TOLERANCES, delegate_blob, lower, lowered_modules
from op_batches import SampleBatch, _output_sources, output_count
from op_cases import all_cases
from vkdelegate.debug import GraphReferenceError, ReferenceGraph, debug_pte, run_blob
from vkdelegate.op_registry import REGISTRY
from vkdelegate.runtime import Graph
from vkdelegate.serialization.blob import BLOB_VERSION, serialize_graph
from vkdelegate.serialization.graph_ir import DType, GraphIR, OpCall, TensorValue

ENTRIES = {entry.name: entry for entry in REGISTRY}


# ---- the reference executor against eager PyTorch, on the registry's samples

def with_reference_delegates(edge):
    """The lowered program as a function of its inputs, each delegate call run by the reference
    executor on its blob (one ReferenceGraph per delegate, so state carries over between calls),
    the program's CPU ops as they are."""
    graphs = {}

    class BlobsOnly(torch.fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if getattr(target, "__name__", "") != "executorch_call_delegate":
                return super().call_function(target, args, kwargs)
            lowered = args[0]
            if id(lowered) not in graphs:
                graphs[id(lowered)] = ReferenceGraph(lowered.processed_bytes)
            return tuple(graphs[id(lowered)].run(list(args[1:])))

    module = edge.exported_program().module()

    def run(*inputs):
        with torch.no_grad():
            return BlobsOnly(module).run(*inputs)
    return run

@functools.lru_cache(maxsize=None)
def registry_program():
    """The first sample of every registry entry side by side in one program (lowering is the
    cost: one program covers every op once), run with each delegate call replaced by the
    reference executor on the delegate's blob, the program's CPU ops as they are. Returns
    {entry name: (reference outputs, eager outputs)}, and the entries whose outputs do not all
    come straight from a delegate (a CPU op upstream, or none)."""
    first = {}
    for entry_name, case_id, module, inputs in all_cases():
        first.setdefault(entry_name, (module, inputs))
    names = list(first)
    modules = [first[name][0] for name in names]
    arities = [len(first[name][1]) for name in names]
    counts = [output_count(*first[name]) for name in names]
    batch = SampleBatch(modules, arities)
    flat = [x for name in names for x in first[name][1]]
    edge = lower(batch, flat)
    outputs = with_reference_delegates(edge)(*flat)
    with torch.no_grad():
        eager = batch(*flat)
    assert len(outputs) == len(eager) == sum(counts)
    sources = _output_sources(edge)
    by_entry, not_from_blobs, start = {}, [], 0
    for name, count in zip(names, counts):
        by_entry[name] = (outputs[start:start + count], eager[start:start + count])
        if any(call is None or cpu for call, cpu in sources[start:start + count]):
            not_from_blobs.append(name)
        start += count
    return by_entry, not_from_blobs


@pytest.mark.xdist_group("debugger-registry")
@pytest.mark.parametrize("entry_name", sorted(ENTRIES))
def test_reference_reproduces_registry_sample(entry_name):
    by_entry, _ = registry_program()
    outputs, eager = by_entry[entry_name]
    for out, ref in zip(outputs, eager):
        assert out.shape == ref.shape and out.dtype == ref.dtype
        torch.testing.assert_close(out, ref, **TOLERANCES[ENTRIES[entry_name].kind], equal_nan=True)


@pytest.mark.xdist_group("debugger-registry")
def test_registry_outputs_come_from_blobs():
    """The comparison above checks the blobs: every sample's outputs come from a delegate call
    with no CPU op upstream, so the reference executor alone computed them."""
    _, not_from_blobs = registry_program()
    assert not not_from_blobs


def test_reference_state_carries_over_runs():
    """A KV cache (delegate state) starts as its buffer and keeps each run's update, as on the GPU."""
    from test_sdpa_kv_cache import CachedAttention

    def step(start):
        positions = torch.arange(start, start + 3)
        return (torch.randn(1, 3, 4, 8), torch.randn(1, 3, 2, 8), torch.randn(1, 3, 2, 8), positions)

    torch.manual_seed(0)
    steps = [step(0), step(3)]
    edge = lower(CachedAttention(), steps[0])
    assert ReferenceGraph(delegate_blob(edge)).state_updates, "the cache should be delegate state"
    program, eager = with_reference_delegates(edge), CachedAttention()
    for inputs in steps:
        out = program(*inputs)  # the module returns one tensor
        torch.testing.assert_close(out, eager(*inputs), atol=1e-5, rtol=1e-5)


# ---- a small model with a dynamic batch: reference, debug mode, planted fault

class Chain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin1 = torch.nn.Linear(16, 32)
        self.norm = torch.nn.LayerNorm(32)
        self.lin2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        h = x.reshape(x.shape[0], -1)  # sym_size and a SymInt[] argument
        h = torch.nn.functional.gelu(self.lin1(h))  # one et_vk.vkd_linear_act (linear_act_fusion.py)
        return torch.softmax(self.lin2(self.norm(h)), -1)


@functools.lru_cache(maxsize=None)
def chain_program():
    model = Chain().eval()
    example = torch.randn(4, 4, 4)
    edge = lower(model, (example,), dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=8)},))
    return model, edge, edge.to_executorch().buffer


@pytest.mark.xdist_group("debugger-chain")
def test_reference_resolves_dynamic_sizes():
    model, edge, _ = chain_program()
    blob = delegate_blob(edge)
    assert any(call.name == "aten.sym_size.int" for call in ReferenceGraph(blob).graph.chain)
    x = torch.randn(3, 4, 4)  # below the export size: the SymInts follow the input
    (out,) = run_blob(blob, [x])
    torch.testing.assert_close(out, model(x), **TOLERANCES["model"])


@pytest.mark.xdist_group("debugger-chain")
def test_debug_mode_keeps_every_value():
    model, edge, _ = chain_program()
    blob = delegate_blob(edge)
    reference = ReferenceGraph(blob)
    x = torch.randn(3, 4, 4)
    reference.run([x])
    planned = [i for i, v in enumerate(reference.graph.values) if isinstance(v, TensorValue) and v.mem_obj_id >= 0]
    assert planned, "the memory plan should share memory between intermediates"
    shared = Graph(blob)
    shared.run([x.numpy()])
    with pytest.raises(ValueError, match="DEBUG_VALUES"):
        shared.read_value(planned[0])
    debug = Graph(blob, overrides={"DEBUG_VALUES": True})
    debug.run([x.numpy()])
    assert debug.memory_report()["num_shared_objects"] == 0
    for value_id in planned:
        torch.testing.assert_close(torch.from_numpy(debug.read_value(value_id)), reference.values[value_id],
                                   **TOLERANCES["model"])
    symints = [i for i, call in enumerate(reference.graph.chain) if call.name == "aten.sym_size.int"]
    assert debug.read_value(reference.graph.chain[symints[0]].args[-1]) == 3
    assert len(debug.op_shaders()) == len(reference.graph.chain)


@pytest.fixture(scope="module")
def chain_pte(tmp_path_factory):
    path = tmp_path_factory.mktemp("debugger") / "chain.pte"
    path.write_bytes(chain_program()[2])
    return str(path)


@pytest.mark.xdist_group("debugger-chain")
def test_debugger_finds_no_divergence_without_a_fault(chain_pte):
    report = debug_pte(chain_pte, [torch.randn(3, 4, 4)])
    assert report.divergence is None, report.format()
    assert "within tolerance" in report.format()


@pytest.mark.xdist_group("debugger-chain")
@pytest.mark.parametrize("op_name", ["et_vk.vkd_linear_act.default", "et_vk.vkd_ln_linear.default"])
def test_debugger_names_the_planted_fault(chain_pte, op_name):
    """A fault planted in one op's kernel (its output overwritten on the GPU before its readers
    run, so every later op diverges too) is reported at that op, with its shader."""
    chain = ReferenceGraph(delegate_blob(chain_program()[1])).graph.chain
    names = [call.name for call in chain]
    if op_name not in names:
        pytest.fail(f"the model's blob has no {op_name}: {names}")
    planted = names.index(op_name)
    report = debug_pte(chain_pte, [torch.randn(3, 4, 4)], overrides={"DEBUG_PERTURB_OP": planted})
    found = report.divergence
    assert found is not None, report.format()
    assert (found.op_index, found.op) == (planted, op_name), report.format()
    assert found.shaders and found.outputs[0].max_abs > 1
    assert found.isolated_beyond_tolerance, report.format()
    text = report.format()
    assert f"op #{planted} {op_name}" in text and found.shaders[0] in text


@pytest.mark.xdist_group("debugger-chain")
def test_debug_command(chain_pte, capsys):
    """`vkdelegate debug` prints the first divergence and exits 1; 0 when there is none."""
    pytest.importorskip("vkdelegate.cli.main", reason="the vkdelegate command (cli/) is not in this tree")
    import vkdelegate.runtime
    from vkdelegate.cli.main import main

    planted = [call.name for call in ReferenceGraph(delegate_blob(chain_program()[1])).graph.chain].index(
        "et_vk.vkd_linear_act.default")
    assert main(["debug", chain_pte, "--inputs", "3x4x4"]) == 0
    assert "every output within tolerance" in capsys.readouterr().out
    with vkdelegate.runtime.overrides(DEBUG_PERTURB_OP=planted):
        assert main(["debug", chain_pte, "--inputs", "3x4x4"]) == 1
    out = capsys.readouterr().out
    assert f"op #{planted} et_vk.vkd_linear_act.default" in out and "max abs error" in out


class CpuOpBetween(torch.nn.Module):
    def forward(self, x, y):
        a = torch.relu(x) + 1
        b = torch.cumsum(a, 0)  # not supported: stays on the CPU, between two delegates
        return torch.sigmoid(b) * y, a


def test_debugger_checks_a_delegate_behind_cpu_ops(tmp_path):
    """A delegate fed by CPU ops is checked on inputs of its own; a fault planted at op 0 of every
    graph is found in each delegate."""
    x, y = torch.randn(2, 16), torch.randn(2, 16)
    edge = lower(CpuOpBetween(), (x, y))
    assert len(lowered_modules(edge)) == 2, "cumsum should split the program"
    path = tmp_path / "split.pte"
    path.write_bytes(edge.to_executorch().buffer)
    report = debug_pte(str(path), [x, y])
    assert [(c.inputs_note is not None, c.divergence) for c in report.delegates] == [(False, None), (True, None)]
    assert "random inputs of its own" in report.format()
    planted = debug_pte(str(path), [x, y], overrides={"DEBUG_PERTURB_OP": 0})
    assert [c.divergence.op_index for c in planted.delegates] == [0, 0], planted.format()


# ---- bad input

def test_corrupt_pte_is_a_clear_error(tmp_path):
    path = tmp_path / "broken.pte"
    path.write_bytes(b"not a program" * 10)
    with pytest.raises(ValueError, match="not a readable ExecuTorch program"):
        debug_pte(str(path))


def _tiny_graph(op_name: str) -> GraphIR:
    graph = GraphIR()
    x = graph.add_value(TensorValue(DType.float32, (4,)))
    out = graph.add_value(TensorValue(DType.float32, (4,)))
    graph.input_ids, graph.output_ids = [x], [out]
    graph.chain.append(OpCall(op_name, (x, out)))
    return graph


def test_older_blob_version_is_a_clear_error():
    import struct

    from vkdelegate.serialization.blob import with_checksum

    blob = bytearray(serialize_graph(_tiny_graph("aten.relu.default")))
    blob[4:8] = struct.pack("<I", BLOB_VERSION - 1)
    with pytest.raises(ValueError, match=f"version {BLOB_VERSION - 1} is older"):
        ReferenceGraph(with_checksum(bytes(blob)))


def test_op_without_a_reference_is_named():
    graph = _tiny_graph("et_vk.vkd_no_such_op.default")
    with pytest.raises(GraphReferenceError, match="'et_vk.vkd_no_such_op.default' has no reference"):
        ReferenceGraph(graph)
    (out,) = ReferenceGraph(_tiny_graph("aten.relu.default")).run([torch.tensor([-1.0, 0.0, 2.0, -3.0])])
    assert out.tolist() == [0.0, 0.0, 2.0, 0.0]
