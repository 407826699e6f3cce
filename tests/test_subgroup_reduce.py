"""Reductions with subgroup arithmetic (the NAME_sg shader variants, taken where the
device has it, as lavapipe does) and with shared memory alone (the setting NO_SUBGROUP_OPS),
both against eager PyTorch, on rows shorter than a subgroup, odd lengths, long rows,
and rows that hold -inf or large values."""
import numpy as np
import pytest
import torch

import vkdelegate.runtime as rt
from helpers import TOLERANCES, lower
from helpers import delegate_blob
from kernel_check import run_forcing

FAMILIES = ("softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm")


class Softmax(torch.nn.Module):
    def __init__(self, dim, log=False):
        super().__init__()
        self.dim, self.log = dim, log

    def forward(self, x):
        return torch.log_softmax(x, self.dim) if self.log else torch.softmax(x, self.dim)


def affine(norm):
    with torch.no_grad():
        norm.weight.uniform_(-2, 2)
        norm.bias.uniform_(-1, 1)
    return norm


def cases():
    torch.manual_seed(0)
    big = torch.randn(3, 5000) * 30
    with_inf = torch.randn(4, 37)
    with_inf[1, :5] = float("-inf")
    return [
        ("softmax_short", Softmax(-1), (torch.randn(5, 3),)),
        ("softmax_odd", Softmax(1), (torch.randn(2, 37, 3),)),
        ("softmax_long", Softmax(-1), (big,)),
        ("softmax_neg_inf", Softmax(-1), (with_inf,)),
        ("log_softmax_odd", Softmax(-1, log=True), (torch.randn(7, 129),)),
        ("layer_norm", torch.nn.LayerNorm(77), (torch.randn(3, 5, 77) * 100 + 7,)),
        ("layer_norm_short", torch.nn.LayerNorm(3), (torch.randn(9, 3),)),
        # 256 invocations from 1024 on: rows held in registers, and past 4096 read again
        ("layer_norm_long", affine(torch.nn.LayerNorm(1500)), (torch.randn(3, 1500) * 10 + 100,)),
        ("layer_norm_over_cache", affine(torch.nn.LayerNorm(4099)), (torch.randn(2, 4099) - 50,)),
        ("rms_norm", torch.nn.RMSNorm(257, eps=1e-6), (torch.randn(2, 11, 257),)),
        # 4-vectors, a 512-wide workgroup, two strided passes
        ("rms_norm_vec4", torch.nn.RMSNorm(2052, eps=1e-6), (torch.randn(3, 2052) * 10,)),
        ("group_norm", torch.nn.GroupNorm(3, 12), (torch.randn(2, 12, 7, 5),)),
    ]


CASES = cases()


def graph_of(module, inputs, **settings):
    em = lower(module.eval(), inputs)
    return em, rt.Graph(delegate_blob(em), overrides=settings)


@pytest.mark.parametrize("mode", ["subgroup", "shared_memory"])
@pytest.mark.parametrize("name,module,inputs", CASES, ids=[c[0] for c in CASES])
def test_reduction_kernels(mode, name, module, inputs):
    if mode == "subgroup" and not rt.device_info()["subgroup_arithmetic"]:
        pytest.skip("this device has no subgroup arithmetic in compute shaders")
    settings = dict(NO_SUBGROUP_OPS=mode == "shared_memory")
    em, graph = graph_of(module, inputs, **settings)
    run = run_forcing(module, inputs, edge_manager=em, **settings)
    shaders = run.shaders
    assert shaders == graph.shaders()
    reductions = [s for s in shaders if s.rsplit("_", 1)[0].removesuffix("_sg").removesuffix("_vec4") in FAMILIES]
    assert reductions, shaders
    # The variant that ran is the one the mode asks for.
    assert all(s.endswith("_sg_f32") == (mode == "subgroup") for s in reductions), shaders
    out = run.outputs[0]
    with torch.no_grad():
        ref = module(*inputs)
    torch.testing.assert_close(out, ref, **TOLERANCES["reduction"])
    # The same graph, run directly, agrees with the .pte run.
    direct = graph.run([x.numpy() for x in inputs])[0]
    np.testing.assert_allclose(direct, out.numpy(), rtol=0, atol=0)
