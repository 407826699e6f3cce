"""Whole models through export -> .pte -> executorch.runtime, against eager PyTorch."""
import pytest
import torch

from helpers import (PHONE_PROFILES, TOLERANCES, cpu_ops, delegate_calls, lower, lowered_model, model_group,
                     profile_env, relative_error, run_pte, run_pte_with_runner, runner_output)
from vkdelegate.examples.models import MODELS


@pytest.mark.parametrize("name", [pytest.param(name, marks=model_group(name)) for name in sorted(MODELS)])
def test_model_fully_delegated_and_matches_eager(name):
    lowered = lowered_model(name)
    em, model, inputs = lowered.edge, lowered.model, lowered.inputs
    assert len(delegate_calls(em)) == 1, "the whole forward should be one partition"
    assert cpu_ops(em) == []
    out = run_pte(lowered.pte, inputs)[0]
    with torch.no_grad():
        ref = model(*inputs)
    assert out.shape == ref.shape
    assert relative_error(out, ref) <= TOLERANCES["model"]["rtol"]


# Not the ResNets: on lavapipe their runs under the three profiles take 20 s (resnet18) and a
# minute (resnet50), and their kernel choices (3x3 and 1x1 convolutions by size) are the op
# slice's convolution cases' and mobilenet_v2's and unet's (tests/test_device_profiles.py).
NOT_UNDER_PROFILES = {"resnet18", "resnet50"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=model_group(name))
                                  for name in sorted(MODELS) if name not in NOT_UNDER_PROFILES])
def test_model_matches_eager_under_phone_profiles(name, tmp_path):
    """The model's .pte (lowered once, above), run by vkdelegate_runner under each phone-GPU
    profile (docs/device-profiles.md): every kernel choice respects the lowered limits
    (pipeline creation refuses one that does not), the outputs still match eager, and the
    validation layer reports nothing."""
    lowered = lowered_model(name)
    with torch.no_grad():
        ref = lowered.model(*lowered.inputs)
    for profile in PHONE_PROFILES:
        where = tmp_path / profile
        r = run_pte_with_runner(lowered.pte, lowered.inputs, where, profile_env(profile))
        assert r.returncode == 0, f"{profile}: {r.stdout[-3000:]}{r.stderr[-3000:]}"
        assert "validation error" not in r.stderr, f"{profile}: {r.stderr[-3000:]}"
        out = runner_output(where, 0, ref)
        assert relative_error(out, ref) <= TOLERANCES["model"]["rtol"], profile


def test_partial_delegation_unsupported_op_in_the_middle():
    class Mixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(16, 16)
            self.b = torch.nn.Linear(16, 8)

        def forward(self, x):
            h = torch.relu(self.a(x))
            h = torch.cumsum(h, dim=-1)  # not supported: stays on CPU
            return torch.sigmoid(self.b(h))

    torch.manual_seed(0)
    m, x = Mixed().eval(), (torch.randn(4, 16),)
    em = lower(m, x)
    assert len(delegate_calls(em)) == 2
    assert any("cumsum" in op for op in cpu_ops(em))
    out = run_pte(em.to_executorch().buffer, x)[0]
    torch.testing.assert_close(out, m(*x), **TOLERANCES["matmul"])


@pytest.mark.parametrize("name", [pytest.param(name, marks=model_group(name)) for name in sorted(MODELS)])
def test_model_through_the_vkdelegate_command(name, tmp_path, capsys):
    """`vkdelegate info`, `run`, `bench` and `debug` on every example model (the lowering is the one
    the model's other tests share; run and bench not on the ResNets, as above): info names the delegate,
    its ops and the shaders of its dispatches; run's saved outputs match eager; bench times one execute
    and profiles one, with a chart; the debugger runs the GPU in debug mode beside the CPU reference on
    the model's own inputs and finds every op within tolerance (exit 0)."""
    from vkdelegate.cli.main import main

    lowered = lowered_model(name)
    pte, inputs = tmp_path / f"{name}.pte", tmp_path / "inputs.pt"
    pte.write_bytes(lowered.pte)
    torch.save(tuple(lowered.inputs), inputs)
    assert main(["info", str(pte)]) == 0
    info = capsys.readouterr().out
    assert "1 VkDelegateBackend" in info and " dispatches:" in info, info[-2000:]
    if name not in NOT_UNDER_PROFILES:  # the ResNets' runs on lavapipe take 10-30 s each
        _run_and_bench(main, lowered, pte, inputs, tmp_path, capsys)
    status = main(["debug", str(pte), "--inputs", str(inputs)])
    out = capsys.readouterr()
    assert status == 0, out.out[-3000:] + out.err[-3000:]


def _run_and_bench(main, lowered, pte, inputs, tmp_path, capsys):
    saved = tmp_path / "out.pt"
    assert main(["run", str(pte), "--inputs", str(inputs), "--save", str(saved)]) == 0
    with torch.no_grad():
        ref = lowered.model(*lowered.inputs)
    assert relative_error(torch.load(saved)[0], ref) <= TOLERANCES["model"]["rtol"]
    chart = tmp_path / "ops.html"
    assert main(["bench", str(pte), "--inputs", str(inputs), "--iters", "1", "--warmup", "0",
                 "--profile-runs", "1", "--chart", str(chart)]) == 0
    assert "GPU time per op" in capsys.readouterr().out and chart.stat().st_size > 1000
