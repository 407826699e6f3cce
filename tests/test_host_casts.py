"""Host casts (runtime/graph/compute_graph.cpp: plan_input_host_casts, plan_output_host_casts; the setting
HOST_CASTS_KB): a float32 input whose one use is a cast to float16 (force_fp16's entry) is stored as halves,
converted by the host while it is copied in, and the cast adds no dispatch; a float32 output made by a cast
from float16 (force_fp16's exit) is stored as halves the cast's input is written into, converted while it is
copied out. The conversion rounds to nearest even, keeps infinities, NaN, signed zeros and half subnormals, and
overflows to infinity, as torch's .half() does. Inputs with other uses, casts between other dtypes and tensors
over the limit keep the casts' dispatches."""
import numpy as np
import torch

import vkdelegate.runtime as rt
from helpers import delegate_blob, lower
from kernel_check import run_forcing
from vkdelegate.examples.models.transformer import TransformerBlock
from vkdelegate.serialization.blob import serialize_graph
from vkdelegate.serialization.graph_ir import DType, GraphIR, IntValue, NullValue, OpCall, TensorValue

CONVERTS = ("convert_f32_to_f16", "convert_f16_to_f32")


def _shaders(graph):
    return [s for _, s in graph.dispatches()]


def test_force_fp16_block_runs_without_its_casts():
    """The fp16 transformer block: no cast dispatch with host casts, both without (HOST_CASTS_KB=0); the same
    outputs bit for bit (the GPU's conversion and the host's round alike), dynamic rows too."""
    torch.manual_seed(0)
    block, x = TransformerBlock(dim=32, heads=2).eval(), torch.randn(2, 11, 32)
    em = lower(block, (x,), {"force_fp16": True})
    blob = delegate_blob(em)
    host, gpu = rt.Graph(blob), rt.Graph(blob, overrides={"HOST_CASTS_KB": 0})
    assert not any(s.startswith(CONVERTS) for s in _shaders(host)), _shaders(host)
    assert [s for s in _shaders(gpu) if s.startswith(CONVERTS)] == list(CONVERTS), _shaders(gpu)
    (ours,) = host.run([x.numpy()])
    (theirs,) = gpu.run([x.numpy()])
    np.testing.assert_array_equal(ours, theirs)
    torch.testing.assert_close(torch.from_numpy(ours), block(x), atol=5e-3, rtol=5e-3)
    # Through ExecuTorch's runtime, as a user runs the .pte.
    run = run_forcing(block, (x,), edge_manager=em)
    np.testing.assert_array_equal(run.outputs[0].numpy(), ours)


def _cast_graph(n, then_add=False, dynamic=False):
    """x float32 [n] -> half -> (half + half: one dispatch) -> float32."""
    g = GraphIR()
    x = g.add_value(TensorValue(DType.float32, (n,), min_sizes=(1,) if dynamic else ()))
    half = g.add_value(TensorValue(DType.float16, (n,)))
    g.input_ids = [x]
    g.chain.append(OpCall("aten._to_copy.default", (x, g.add_value(IntValue(5)), g.add_value(NullValue()),
                                                    g.add_value(NullValue()), g.add_value(NullValue()),
                                                    g.add_value(NullValue()), g.add_value(NullValue()), half)))
    src = half
    if then_add:
        total = g.add_value(TensorValue(DType.float16, (n,)))
        g.chain.append(OpCall("aten.add.Tensor", (half, half, g.add_value(IntValue(1)), total)))
        src = total
    out = g.add_value(TensorValue(DType.float32, (n,)))
    g.chain.append(OpCall("aten._to_copy.default", (src, g.add_value(IntValue(6)), g.add_value(NullValue()),
                                                    g.add_value(NullValue()), g.add_value(NullValue()),
                                                    g.add_value(NullValue()), g.add_value(NullValue()), out)))
    g.output_ids = [out]
    return serialize_graph(g)


EDGES = np.array([0.0, -0.0, 1.0, -2.5, 65504.0, 65519.0, 65520.0, -1e6, np.inf, -np.inf, np.nan, 1e-5, 6e-8, 2.9e-8,
                  -3e-8, 1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, 0.1, 1 / 3, 5.96e-8, 1e-40], dtype=np.float32)


def test_host_conversion_rounds_as_torch():
    """Edge values through the host's conversion each way: x -> half on the host (the input's cast), half +
    half on the GPU, -> float32 on the host (the output's cast): 2 * x.half() exactly, with infinities, NaN,
    signed zeros, overflow, ties to even and half subnormals (more values than F16C's blocks of 8: its tail)."""
    values = np.concatenate([EDGES, np.random.default_rng(0).standard_normal(37).astype(np.float32) * 300])
    for n in (len(values), 7):  # 7: each value through the portable conversion, not F16C's blocks
        graph = rt.Graph(_cast_graph(n, then_add=True))
        assert len(_shaders(graph)) == 1 and not _shaders(graph)[0].startswith("convert"), _shaders(graph)
        (out,) = graph.run([values[:n]])
        expected = (torch.from_numpy(values[:n]).half() * 2).float().numpy()
        np.testing.assert_array_equal(out, expected)
        assert np.signbit(out[1]) and not np.signbit(out[0])


def test_an_input_cast_straight_to_an_output():
    """x -> half -> float32 with nothing between: the input's cast is the host's; the output's cast reads an
    input's storage, so it stays a dispatch (the output cannot live there); dynamic sizes resize through both."""
    graph = rt.Graph(_cast_graph(64, dynamic=True))
    assert _shaders(graph) == ["convert_f16_to_f32"], _shaders(graph)
    for n in (64, 5, 1):
        values = np.resize(EDGES, n).astype(np.float32)
        (out,) = graph.run([values])
        np.testing.assert_array_equal(out, torch.from_numpy(values).half().float().numpy())


def test_casts_that_stay_on_the_gpu():
    """An input with another use besides its cast, and tensors over HOST_CASTS_KB, keep the casts' dispatches."""
    class TwoUses(torch.nn.Module):
        def forward(self, x):
            return x.half() * 2, x + 1

    x = torch.randn(5, 7)
    em = lower(TwoUses(), (x,))
    shaders = _shaders(rt.Graph(delegate_blob(em)))
    assert any(s.startswith("convert_f32_to_f16") for s in shaders), shaders
    graph = rt.Graph(_cast_graph(300, then_add=True), overrides={"HOST_CASTS_KB": 1})  # 1200 bytes > 1 KiB
    assert sum(s.startswith("convert") for s in _shaders(graph)) == 2, _shaders(graph)
    values = np.linspace(-70000, 70000, 300, dtype=np.float32)
    (out,) = graph.run([values])
    np.testing.assert_array_equal(out, (torch.from_numpy(values).half() * 2).float().numpy())
