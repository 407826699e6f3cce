"""torchao quantized flows (weight-only and dynamic-activation linear, quantized
embedding) through vkdelegate's fused et_vk ops: against the float model (loose),
unsupported patterns left on CPU with a reason, and a 4-bit Llama in one partition."""
import copy
import logging

import pytest
import torch

import vkdelegate.runtime as rt
from helpers import TOLERANCES, cpu_ops, delegate_calls, lower, relative_error, run_pte
from kernel_check import run_forcing
from op_samples import SampleCase
import torchao_samples as S
from vkdelegate.quant import torchao_ops
from vkdelegate.quant.torchao_configs import dynamic_activation_config, quantized, weight_only_config

pytest.importorskip("torchao")

FLOWS = [("weight_only",) + f for f in S.linear_flows(False)] + [("8da",) + f for f in S.linear_flows(True)] + [
    ("embedding",) + f for f in S.embedding_flows()]


@pytest.mark.parametrize("flow, case_id, float_module, module, inputs", FLOWS,
                         ids=[f"{f[0]}-{f[1]}" for f in FLOWS])
def test_flow_close_to_float_model(flow, case_id, float_module, module, inputs):
    em = lower(module, inputs)
    assert cpu_ops(em) == [] and len(delegate_calls(em)) == 1
    out = run_pte(em.to_executorch().buffer, inputs)[0]
    with torch.no_grad():
        ref = float_module(*inputs)
    # Quantization error, not kernel error: a few percent of the output's scale.
    assert relative_error(out, ref) < (0.02 if "int8" in case_id and flow != "8da" else 0.15)


def test_pack_roundtrip():
    for bits in (4, 8):
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1))
        q = torch.randint(lo, hi, (5, 37), dtype=torch.int8)
        packed = torchao_ops.pack_weight(q, bits)
        assert packed.dtype == torch.int32 and packed.shape == (5, -(-37 // (32 // bits)))
        assert torch.equal(torchao_ops.unpack_weight(packed, bits, 37), q.to(torch.int32))


class _MatmulOfWeight(torch.nn.Module):
    """A dequantized weight used outside a linear: not a pattern the delegate fuses."""

    def __init__(self):
        super().__init__()
        self.register_buffer("q", torch.randint(-8, 8, (13, 64), dtype=torch.int8))
        self.register_buffer("scales", torch.rand(13, 2) * 0.1)
        self.register_buffer("zeros", torch.zeros(13, 2, dtype=torch.int8))

    def forward(self, x):
        w = torch.ops.torchao.dequantize_affine(self.q, [1, 32], self.scales, self.zeros, torch.int8, -8, 7)
        return x @ w.t() + 1.0


@pytest.mark.parametrize("case", ["weight_outside_linear", "group_size_4"])
def test_unsupported_pattern_stays_on_cpu_with_reason(case, caplog):
    torch.manual_seed(0)
    if case == "weight_outside_linear":
        module = _MatmulOfWeight()
        reason = "not as a linear or embedding weight"
    else:
        module = quantized(torch.nn.Sequential(torch.nn.Linear(64, 13)), weight_only_config(4, 4))
        reason = "group size 4 is not a multiple of 8"
    inputs = (torch.randn(3, 64),)
    with caplog.at_level(logging.INFO, logger="vkdelegate"):
        em = lower(module, inputs)
    assert any("torchao.dequantize_affine" in op for op in cpu_ops(em))
    assert any("not delegated" in r.message and reason in r.message for r in caplog.records), caplog.text
    # (Running it needs torchao's CPU kernels for ExecuTorch, which are not part of this project.)


def _llama():
    from vkdelegate.examples.models.llama import Llama
    model = Llama().eval()
    return model, Llama.example_inputs()


@pytest.mark.parametrize("flow", ["int4_g32_weight_only", "8da4w_g32_and_int4_embedding"])
def test_llama_int4_one_partition_matches_torchao(flow):
    model, inputs = _llama()
    float_pte = lower(copy.deepcopy(model), inputs).to_executorch().buffer
    if flow == "int4_g32_weight_only":
        quantized(model, weight_only_config(4, 32))
    else:
        quantized(model, dynamic_activation_config(4, 32))
        quantized(model, weight_only_config(4, 32), embedding=True)
    em = lower(model, inputs)
    assert cpu_ops(em) == [] and len(delegate_calls(em)) == 1
    pte = em.to_executorch().buffer
    assert len(pte) <= 0.3 * len(float_pte), (len(pte), len(float_pte))
    out = run_pte(pte, inputs)[0]
    with torch.no_grad():
        ref = model(*inputs)  # torchao's CPU reference
    if flow == "int4_g32_weight_only":
        torch.testing.assert_close(out, ref, **TOLERANCES["model"])
    else:
        # Per-token int8 activations: a last-bit difference upstream (GPU vs CPU float
        # order in norms and attention) moves a few values to the next integer, and that
        # spreads through the layers; the outputs agree to well under a percent.
        assert relative_error(out, ref) < 5e-3


DQ8A_CASES = [SampleCase(*case) for case in S.fused_op_cases("vkd_linear_dq8a_qw")] + [
    SampleCase(case_id, module, inputs) for case_id, _, module, inputs in S.linear_flows(True)[:3]]


@pytest.mark.parametrize("kernel", ["integer_dot", "plain_integer"])
@pytest.mark.parametrize("case", DQ8A_CASES, ids=[c.case_id for c in DQ8A_CASES])
def test_dq8a_kernels_match_reference(kernel, case):
    """Both dq8a kernels (the integer-dot one is taken where the device has it, as
    lavapipe does) against the dequantize-then-float reference."""
    run = run_forcing(case.module, case.inputs, NO_INTEGER_DOT=kernel == "plain_integer")
    dot = rt.device_info()["integer_dot_product"] and kernel == "integer_dot"
    assert any(s.startswith("qlinear_dq8a_dot" if dot else "qlinear_dq8a_rows") for s in run.shaders), run.shaders
    out = run.outputs[0]
    with torch.no_grad():
        torch.testing.assert_close(out, case.module(*case.inputs), **TOLERANCES["matmul"])
