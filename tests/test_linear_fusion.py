"""backends/linear_fusion.py on the LLM graph: a decode layer's linears in 4 fused ops
(et_vk.vkd_linear_qw_fused), the final norm and output linear in one, fewer dispatches per
decode layer, and the same logits as eager. The op itself: its registry samples (test_ops.py)."""
import collections

import pytest
import torch
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

import vkdelegate.runtime as rt
from vkdelegate.backends import passes
from vkdelegate.examples import llm
from vkdelegate.partitioner import VulkanPartitioner
from vkdelegate.serialization.blob import deserialize_blob

from helpers import TOLERANCES, lower, lowered_modules
from kernel_check import assert_ran, lower_once, run_forcing
import torchao_samples

pytestmark = pytest.mark.xdist_group("linear_fusion")

MAX_SEQ_LEN = 32
FUSED = "et_vk.vkd_linear_qw_fused.default"


def _lower(layers: int, fuse: bool):
    model = llm.build_model("tiny", MAX_SEQ_LEN, seed=5)
    model.layers = model.layers[:layers]
    quantized = llm.quantize(model, "int4")
    seq = torch.export.Dim("seq", min=1, max=MAX_SEQ_LEN)
    example = (torch.zeros(1, 2, dtype=torch.long), torch.arange(2))
    with torch.no_grad():
        ep = torch.export.export(quantized, example, dynamic_shapes=({1: seq}, {0: seq}))
    saved = list(passes.PASSES)
    if not fuse:
        passes.PASSES.remove(passes.fuse_linears)
    try:
        edge = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner()])
    finally:
        passes.PASSES[:] = saved
    return quantized, edge


@pytest.fixture(scope="module")
def lowered():
    """{(layers, fused): (quantized eager model, edge program manager)}, each lowered once."""
    cache = {}

    def get(layers: int, fuse: bool = True):
        if (layers, fuse) not in cache:
            cache[(layers, fuse)] = _lower(layers, fuse)
        return cache[(layers, fuse)]

    return get


def _op_counts(edge) -> collections.Counter:
    (module,) = lowered_modules(edge)
    return collections.Counter(call.name for call in deserialize_blob(module.processed_bytes).chain)


def _decode_dispatches(edge, tmp_path) -> int:
    path = tmp_path / "model.pte"
    path.write_bytes(edge.to_executorch().buffer)
    method = Runtime.get().load_program(str(path)).load_method("forward")
    method.execute([torch.tensor([[5, 6, 7]]), torch.arange(3)])
    method.execute([torch.tensor([[8]]), torch.tensor([3])])
    return rt.loaded_execute_stats()[-1]["dispatches"]


def test_a_layer_is_four_fused_ops(lowered):
    """[norm + q/k/v] [wo + residual] [norm + w1/w3 + silu * mul] [w2 + residual] per layer, and
    [norm + output]: nothing of them left as its own op."""
    counts = _op_counts(lowered(1)[1])
    assert counts[FUSED] == 4 + 1
    for gone in ("et_vk.vkd_linear_qw.default", "aten.rms_norm.default", "aten.silu.default",
                 "aten.mul.Tensor", "aten.add.Tensor"):
        assert counts[gone] == 0, gone


def test_decode_dispatches(lowered, tmp_path):
    """A decode step's linears, norms, silu, mul and adds: 13 dispatches per layer become 4, and
    the final norm and output linear 1."""
    (tmp_path / "fused").mkdir()
    (tmp_path / "unfused").mkdir()
    fused = _decode_dispatches(lowered(1)[1], tmp_path / "fused")
    unfused = _decode_dispatches(lowered(1, fuse=False)[1], tmp_path / "unfused")
    assert unfused - fused == (13 - 4) + (2 - 1)


@pytest.mark.parametrize("length", [1, 5])
def test_logits_match_eager(lowered, tmp_path, length):
    """Prefill of `length` tokens (the unfused kernels where more than one row), then two decode
    steps (the fused kernel), against eager on the same dequantized weights."""
    model, edge = lowered(1)
    path = tmp_path / "model.pte"
    path.write_bytes(edge.to_executorch().buffer)
    method = Runtime.get().load_program(str(path)).load_method("forward")
    model.reset_cache()
    tokens, position = list(range(3, 3 + length)), 0
    for _ in range(3):
        with torch.no_grad():
            expected = model(torch.tensor([tokens]), torch.arange(position, position + len(tokens)))
        actual = method.execute([torch.tensor([tokens]), torch.arange(position, position + len(tokens))])[0]
        torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
        position += len(tokens)
        tokens = [int(expected[0, -1].argmax())]


ONE_ROW_CASES = ("qkv_norm_int4_k64_g16_n37_5_5_m1", "pair_silu_norm_int4_k96_g32_n37_m1",
                 "all_int8_asym_bias_k39_per_row_m1", "residual_int4_k64_g32_n37_m1")


@pytest.mark.parametrize("case_id", ONE_ROW_CASES)
def test_one_row_is_one_dispatch(case_id):
    """At one row the op is qlinear_gemv_fused.glsl alone; with QLINEAR_NO_GEMV its parts
    (rms_norm, the rows kernel per weight, the epilogue) run instead, to the same result."""
    module, inputs = next(case[1:] for case in torchao_samples.fused_linears_cases() if case[0] == case_id)
    pte = lower(module, inputs).to_executorch().buffer
    with torch.no_grad():
        expected = module(*inputs)
    dispatches = {}
    for no_gemv in (False, True):
        with rt.overrides(QLINEAR_NO_GEMV=no_gemv):
            method = Runtime.get().load_program(pte).load_method("forward")
        outputs = method.execute(list(inputs))
        dispatches[no_gemv] = rt.loaded_execute_stats()[-1]["dispatches"]
        assert len(outputs) == len(expected)
        for out, ref in zip(outputs, expected):
            torch.testing.assert_close(out, ref, **TOLERANCES["matmul"])
    assert dispatches[False] == 1
    assert dispatches[True] > 1


FUSED_SHAPES = ("c4u1", "c1u1", "c2u1", "c1u2", "c2u2", "c4u2", "c1u4", "c2u4", "c4u4", "c4u1s", "c4u2s", "c2u1s")


def _fused_shape_cases():
    """int4 one-row calls whose rows take several steps of 16 invocations, the last partly past
    the row: (id, module, inputs, the kernel's name without its shape)."""
    torch.manual_seed(1)
    weight = lambda n, k, group, asym, bias: torchao_samples.random_quantized_weight(n, k, 4, group, asym) + (
        torch.randn(n) if bias else None,)
    cases = []
    # A pair with the norm, zero points and biases; K = 525: a ragged last word (scalar x).
    module = torchao_samples.FusedLinearsCall([weight(37, 525, 525, True, True) for _ in range(2)], 4, 525,
                                              torch.rand(525) + 0.5, norm=True, silu_mul=True)
    cases.append(("pair_silu_norm_k525", module, (torch.randn(1, 525),), "qlinear_gemv_fused_pair_b4"))
    # Three weights of odd N, the norm without its weight, biases (vec4 x).
    module = torchao_samples.FusedLinearsCall([weight(n, 544, 32, False, True) for n in (37, 5, 9)], 4, 32,
                                              norm=True)
    cases.append(("qkv_norm_k544", module, (torch.randn(1, 1, 544) * 2.0,), "qlinear_gemv_fused_b4_x4"))
    # One weight with zero points and the residual.
    module = torchao_samples.FusedLinearsCall([weight(37, 520, 8, True, False)], 4, 8, residual=True)
    cases.append(("residual_k520", module, (torch.randn(1, 520), torch.randn(1, 37)), "qlinear_gemv_fused_b4_x4"))
    return cases


@pytest.mark.parametrize("case_id", ["pair_silu_norm_k525", "qkv_norm_k544", "residual_k520"])
def test_fused_shapes_match_reference(case_id):
    """Each shape of qlinear_gemv_fused.glsl that QLINEAR_GEMV_FUSED_SHAPE picks (columns per
    workgroup, words per invocation and step) gives the op's result, with its prologue and
    epilogues; QLINEAR_WG=16 makes several steps per row."""
    _, module, inputs, kernel = next(c for c in _fused_shape_cases() if c[0] == case_id)
    with torch.no_grad():
        expected = module(*inputs)
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    em = lower_once(("fused_shapes", case_id), module, inputs)
    for shape in FUSED_SHAPES:
        run = run_forcing(module, inputs, edge_manager=em, QLINEAR_GEMV_FUSED_SHAPE=shape, QLINEAR_WG=16)
        assert_ran(run.shaders, kernel + ("" if shape == "c4u1" else "_" + shape))
        assert len(run.outputs) == len(expected)
        for out, ref in zip(run.outputs, expected):
            torch.testing.assert_close(out, ref, **TOLERANCES["matmul"])


@pytest.mark.parametrize("case_id", ["pair_silu_norm_k525", "qkv_norm_k544"])
def test_default_fused_kernel_reduces_by_subgroups(case_id):
    """Unset, the int4 one-row kernel is the c4u2s shape (subgroupAdd) where the device has
    subgroup arithmetic (lavapipe has), and the shared-memory tree (c4u1) with NO_SUBGROUP_OPS,
    each to the op's result."""
    assert rt.device_info()["subgroup_arithmetic"], "lavapipe has subgroup arithmetic in compute shaders"
    _, module, inputs, kernel = next(c for c in _fused_shape_cases() if c[0] == case_id)
    with torch.no_grad():
        expected = module(*inputs)
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    em = lower_once(("fused_shapes", case_id), module, inputs)
    for settings, name in (({}, kernel + "_c4u2s"), ({"NO_SUBGROUP_OPS": True}, kernel)):
        run = run_forcing(module, inputs, edge_manager=em, **settings)
        assert_ran(run.shaders, name)
        for out, ref in zip(run.outputs, expected):
            torch.testing.assert_close(out, ref, **TOLERANCES["matmul"])


def test_bad_calls_are_clear_errors():
    """A residual with several outputs, silu_mul of weights of different N: refused by the op
    itself (eager and export), not lowered into something else."""
    k, bits, group = 32, 4, 32
    w5, w7 = (torchao_samples.random_quantized_weight(n, k, bits, group, False) for n in (5, 7))
    x = torch.randn(1, k)
    parts = lambda *ws: ([w[0] for w in ws], [w[1] for w in ws], [None] * len(ws), [None] * len(ws))
    with pytest.raises(ValueError, match="a residual needs one output"):
        torch.ops.et_vk.vkd_linear_qw_fused(x, *parts(w5, w5), bits, group, [], None, 1e-5, False, torch.randn(1, 5))
    with pytest.raises(ValueError, match="silu_mul takes two weights of one N"):
        torch.ops.et_vk.vkd_linear_qw_fused(x, *parts(w5, w7), bits, group, [], None, 1e-5, True, None)
    with pytest.raises(ValueError, match="1 to 3 weights"):
        torch.ops.et_vk.vkd_linear_qw_fused(x, *parts(w5, w5, w5, w5), bits, group, [], None, 1e-5, False, None)


def test_columns_past_65535_workgroups():
    """More than 65535 workgroups of 4 columns (a 262k vocabulary's output linear): the fused
    kernel's dispatch spills into y."""
    n, k = 4 * 65535 + 5, 8
    packed, scales, _ = torchao_samples.random_quantized_weight(n, k, 4, k, False)
    module = torchao_samples.FusedLinearsCall([(packed, scales, None, None)], 4, k, norm=True)
    inputs = (torch.randn(1, k),)
    method = Runtime.get().load_program(lower(module, inputs).to_executorch().buffer).load_method("forward")
    outputs = method.execute(list(inputs))
    assert rt.loaded_execute_stats()[-1]["dispatches"] == 1
    with torch.no_grad():
        torch.testing.assert_close(outputs[0], module(*inputs)[0], **TOLERANCES["matmul"])
