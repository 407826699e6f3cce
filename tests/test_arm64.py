"""The runtime built for ARM64 (scripts/cross_arm64.sh build, which `scripts/setup.sh --tests` runs)
loads .pte files made here on x86, runs them under qemu-aarch64 on ARM64 lavapipe, and gives the
x86 runner's outputs (and eager PyTorch's).

Skipped, saying why, only where the cross build is absent (its packages could not be installed)."""
import os
import shutil
import subprocess

import pytest
import torch
from torch import nn

import vkdelegate.runtime as rt
from helpers import to_pte
from vkdelegate.examples.models import MODELS

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM64_OUT = os.path.join(REPO_ROOT, "build", "arm64", "out")
pytestmark = [
    pytest.mark.xdist_group("arm64"),
    pytest.mark.skipif(not os.path.exists(os.path.join(ARM64_OUT, "vkdelegate_runner"))
                       or shutil.which("qemu-aarch64") is None,
                       reason="no ARM64 build: scripts/cross_arm64.sh build (run by scripts/setup.sh --tests) "
                              "could not install its cross packages or fetch its sysroot"),
]


class SmallCNN(nn.Module):
    """Convolutions (dense, strided, depthwise, 1x1), batch norm, pooling and a linear head."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16), nn.ReLU6(),
            nn.Conv2d(16, 24, 1), nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(24, 10)
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def _cases():
    yield "mlp", MODELS["mlp"]
    yield "transformer_block", MODELS["transformer_block"]
    yield "small_cnn", lambda: (SmallCNN().eval(), (torch.randn(1, 3, 19, 23),))


def _run(command, pte, directory):
    r = subprocess.run([*command, "--model", str(pte), "--iters", "1", "--warmup", "0", "--inputs", str(directory),
                        "--dump-outputs", str(directory)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_arm64_binaries_are_aarch64():
    for name in ("vkdelegate_runner", "libvkdelegate_backend.so"):
        with open(os.path.join(ARM64_OUT, name), "rb") as f:
            header = f.read(20)
        assert header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == 183, name  # EM_AARCH64


@pytest.mark.parametrize("name, factory", list(_cases()), ids=[n for n, _ in _cases()])
def test_arm64_runner_matches_x86(tmp_path, name, factory):
    model, inputs = factory()
    with torch.no_grad():
        expected = model(*inputs)
    pte = tmp_path / f"{name}.pte"
    pte.write_bytes(to_pte(model, inputs))
    for where in ("x86", "arm64"):
        (tmp_path / where).mkdir()
        for i, t in enumerate(inputs):
            (tmp_path / where / f"input_{i}.bin").write_bytes(t.contiguous().numpy().tobytes())
    _run([rt.runner_path()], pte, tmp_path / "x86")
    stdout = _run(["bash", os.path.join(REPO_ROOT, "scripts", "cross_arm64.sh"), "run"], pte, tmp_path / "arm64")
    assert "llvmpipe" in stdout  # ARM64 lavapipe

    def output(where):
        data = bytearray((tmp_path / where / "output_0.bin").read_bytes())
        return torch.frombuffer(data, dtype=expected.dtype).reshape(expected.shape)

    torch.testing.assert_close(output("arm64"), output("x86"), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(output("arm64"), expected, rtol=1e-4, atol=1e-4)
