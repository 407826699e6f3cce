"""backends/fuse_conv.py: batch norm folded into the convolution before it, a
following relu / hardtanh / clamp fused into it (et_vk.vkd_conv2d_clamp)."""
import pytest
import torch
from helpers import TOLERANCES, cpu_ops, delegate_calls, lower, lowered_model, lowered_modules, model_group, run_pte
from torch import nn

from vkdelegate.serialization.blob import deserialize_blob


def chain_ops(edge_manager):
    """The op chains of all the program's delegates, in order."""
    return [call.name for module in lowered_modules(edge_manager) for call in deserialize_blob(module.processed_bytes).chain]


def _randomized_bn(channels, dims=2):
    bn = (nn.BatchNorm2d if dims == 2 else nn.BatchNorm1d)(channels)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    return bn.eval()


class ConvBnAct(nn.Module):
    def __init__(self, conv, act, dims=2):
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.bn, self.act = conv, _randomized_bn(conv.out_channels, dims), act

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Residual(nn.Module):
    """ResNet's block tail: relu(bn(conv(x)) + x), and a plain conv + x with no activation."""

    def __init__(self, channels, act=True):
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.bn, self.act = nn.Conv2d(channels, channels, 3, padding=1), _randomized_bn(channels), act

    def forward(self, x):
        y = self.bn(self.conv(x)) + x
        return torch.relu(y) if self.act else y


CASES = {
    # split-K GEMM with the residual added before relu
    "residual_relu": (Residual(20), (1, 20, 9, 11)),
    # direct kernel, residual without activation (fused with unbounded clamp)
    "residual_only": (Residual(6, act=False), (2, 6, 7, 5)),
    # direct kernel, bias-free conv, relu
    "direct_relu": (ConvBnAct(nn.Conv2d(3, 5, 3, padding=1, bias=False), nn.ReLU()), (2, 3, 9, 7)),
    # depthwise, relu6 (hardtanh)
    "depthwise_relu6": (ConvBnAct(nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), nn.ReLU6()), (1, 8, 13, 9)),
    # split-K GEMM at batch 1, clamp with one bound
    "gemm_split_k_clamp": (ConvBnAct(nn.Conv2d(24, 40, 3, padding=1), lambda x: torch.clamp(x, min=-0.2)),
                           (1, 24, 11, 9)),
    # wide-tile GEMM at batch 3, hardtanh
    "gemm_batch3_hardtanh": (ConvBnAct(nn.Conv2d(16, 33, 1), nn.Hardtanh(-0.5, 0.5)), (3, 16, 17, 15)),
    # 1-D conv, no activation: only the fold
    "conv1d_bn_only": (ConvBnAct(nn.Conv1d(4, 6, 3), nn.Identity(), dims=1), (2, 4, 13)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_conv_bn_act_folds_and_matches_eager(case):
    model, shape = CASES[case]
    model = model.eval()
    torch.manual_seed(1)
    inputs = (torch.randn(*shape) * 2,)
    em = lower(model, inputs)
    assert len(delegate_calls(em)) == 1 and cpu_ops(em) == []
    ops = chain_ops(em)
    assert not any("batch_norm" in op for op in ops), ops
    assert not any(op.split(".")[1] in ("relu", "hardtanh", "clamp", "add") for op in ops), ops
    out = run_pte(em.to_executorch().buffer, inputs)[0]
    torch.testing.assert_close(out, model(*inputs), **TOLERANCES["matmul"])


def test_conv_with_a_second_user_is_not_fused():
    class TwoUsers(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x):
            y = self.conv(x)
            return torch.relu(y) + y

    model, inputs = TwoUsers().eval(), (torch.randn(1, 3, 7, 7),)
    em = lower(model, inputs)
    assert "aten.relu.default" in chain_ops(em)
    torch.testing.assert_close(run_pte(em.to_executorch().buffer, inputs)[0], model(*inputs),
                               **TOLERANCES["matmul"])


@pytest.mark.parametrize("name", [pytest.param(name, marks=model_group(name)) for name in ["mobilenet_v2", "resnet18"]])
def test_cnn_chains_have_no_batch_norm_or_separate_activation(name):
    ops = chain_ops(lowered_model(name).edge)
    assert "et_vk.vkd_conv2d_clamp.default" in ops
    assert not any("batch_norm" in op or op in ("aten.relu.default", "aten.hardtanh.default") for op in ops), \
        sorted(set(ops))
