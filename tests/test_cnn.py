"""CNN ops beyond the per-op samples: what is refused (with a reason),
and a small CNN that resizes with its batch size."""
import logging

import torch
from helpers import TOLERANCES, cpu_ops, delegate_calls, lower, relative_error, run_pte
from torch.nn import functional as F


def test_conv3d_stays_on_cpu_with_a_reason(caplog):
    with caplog.at_level(logging.INFO, logger="vkdelegate"):
        em = lower(torch.nn.Conv3d(2, 3, 3), (torch.randn(1, 2, 5, 5, 5),))
    assert delegate_calls(em) == []
    assert "3-D convolution is not supported" in caplog.text


def test_bicubic_grid_sample_stays_on_cpu_with_a_reason(caplog):
    class Bicubic(torch.nn.Module):
        def forward(self, x, grid):
            return F.grid_sample(x, grid, mode="bicubic", align_corners=False)

    with caplog.at_level(logging.INFO, logger="vkdelegate"):
        em = lower(Bicubic(), (torch.randn(1, 2, 5, 5), torch.rand(1, 3, 3, 2) * 2 - 1))
    assert delegate_calls(em) == []
    assert "not bicubic" in caplog.text


class TinyCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(16).eval()
        self.dw = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        z = F.max_pool2d(self.dw(y), 2)
        up = F.interpolate(z, scale_factor=2.0, mode="bilinear", align_corners=False)
        return torch.cat([up, y], dim=1)


def test_cnn_resizes_with_the_batch_size():
    model = TinyCNN().eval()
    batch = torch.export.Dim("batch", max=4)
    em = lower(model, (torch.randn(2, 3, 8, 8),), dynamic_shapes=({0: batch},))
    assert len(delegate_calls(em)) == 1 and cpu_ops(em) == []
    pte = em.to_executorch().buffer
    for n in (4, 1, 3):
        x = torch.randn(n, 3, 8, 8)
        out = run_pte(pte, (x,))[0]
        ref = model(x)
        assert out.shape == ref.shape
        assert relative_error(out, ref) <= TOLERANCES["model"]["rtol"]
