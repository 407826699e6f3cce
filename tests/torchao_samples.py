"""Sample cases of the torchao quantized flows: float modules with their torchao-quantized
copies, and direct calls of the fused et_vk ops (the registry samples in op_samples.py,
and the qlinear tests).

Importing this module does not import torchao; building the samples does.
"""
from typing import List, Tuple

import torch

from vkdelegate.quant import torchao_ops
from vkdelegate.quant.torchao_configs import dynamic_activation_config, quantized, weight_only_config


def _linear(k, n, bias=True):
    layer = torch.nn.Linear(k, n, bias=bias)
    if bias:
        torch.nn.init.normal_(layer.bias)
    return layer


# (case id, in features, out features, bias, bits, group size or None, asymmetric, input sizes)
LINEAR_CASES: List[Tuple] = [
    ("int4_g32_7x64_to_13", 64, 13, True, 4, 32, False, (7, 64)),
    ("int4_g32_asym_no_bias_rank3", 64, 13, False, 4, 32, True, (2, 5, 64)),
    ("int4_g64_gemv_m1", 128, 33, True, 4, 64, False, (1, 128)),
    ("int4_g128_rank4", 256, 9, True, 4, 128, False, (2, 1, 3, 256)),
    ("int4_g256_asym", 256, 7, True, 4, 256, True, (3, 256)),
    ("int4_per_axis_odd_k33", 33, 7, True, 4, None, False, (5, 33)),
    ("int8_per_axis_odd_k37_n13", 37, 13, True, 8, None, False, (4, 37)),
    ("int8_g32_asym_m1", 96, 13, False, 8, 32, True, (1, 96)),
]


def linear_flows(dynamic_activation: bool):
    """(case id, float module, quantized module, inputs) of each LINEAR_CASES row."""
    import copy
    torch.manual_seed(0)
    make = dynamic_activation_config if dynamic_activation else weight_only_config
    flows = []
    for case_id, k, n, bias, bits, group, asym, sizes in LINEAR_CASES:
        float_module = torch.nn.Sequential(_linear(k, n, bias)).eval()
        module = quantized(copy.deepcopy(float_module), make(bits, group, asym))
        flows.append((case_id, float_module, module, (torch.randn(sizes) * 2.0,)))
    return flows


def embedding_flows():
    """(case id, float module, quantized module, inputs) of quantized embeddings."""
    import copy
    torch.manual_seed(0)
    flows = []
    for case_id, rows, dim, bits, group, asym, indices in (
        ("int4_g32_10x64_rank2", 10, 64, 4, 32, False, torch.tensor([[1, 2, 9], [0, 0, 4]])),
        ("int4_g32_asym_rank1", 17, 96, 4, 32, True, torch.tensor([16, 3, 3, 0, 7])),
        ("int4_per_axis_odd_dim33", 9, 33, 4, None, False, torch.tensor([[[8], [2]]])),
        ("int8_per_axis_odd_dim37", 5, 37, 8, None, True, torch.tensor([4, 1, 0])),
    ):
        float_module = torch.nn.Sequential(torch.nn.Embedding(rows, dim)).eval()
        module = quantized(copy.deepcopy(float_module), weight_only_config(bits, group, asym), embedding=True)
        flows.append((case_id, float_module, module, (indices,)))
    return flows


class FusedCall(torch.nn.Module):
    """Calls one of our et_vk ops with constant quantized weights (buffers)."""

    def __init__(self, op, packed, scales, zeros, bias, bits, group_size, embedding_dim=None):
        super().__init__()
        self.op, self.bits, self.group_size, self.embedding_dim = op, bits, group_size, embedding_dim
        self.register_buffer("packed", packed)
        self.register_buffer("scales", scales)
        self.register_buffer("zeros", zeros)
        self.register_buffer("bias", bias)

    def forward(self, x):
        if self.embedding_dim is not None:
            return self.op(self.packed, self.scales, self.zeros, x, self.bits, self.group_size, self.embedding_dim)
        return self.op(x, self.packed, self.scales, self.zeros, self.bias, self.bits, self.group_size)


class FusedLinearsCall(torch.nn.Module):
    """Calls et_vk.vkd_linear_qw_fused with constant quantized weights (buffers)."""

    def __init__(self, weights, bits, group_size, norm_weight=None, norm=False, silu_mul=False, residual=False):
        super().__init__()
        self.count, self.bits, self.group_size = len(weights), bits, group_size
        self.norm, self.silu_mul, self.residual = norm, silu_mul, residual
        # Absent tensors as plain None attributes: torch.export miscounts a None buffer before others.
        for j, (packed, scales, zeros, bias) in enumerate(weights):
            for name, value in (("packed", packed), ("scales", scales), ("zeros", zeros), ("bias", bias)):
                if value is None:
                    setattr(self, f"{name}{j}", None)
                else:
                    self.register_buffer(f"{name}{j}", value)
        if norm_weight is None:
            self.norm_weight = None
        else:
            self.register_buffer("norm_weight", norm_weight)

    def forward(self, x, *residual):
        parts = [[getattr(self, f"{name}{j}") for j in range(self.count)] for name in ("packed", "scales", "zeros", "bias")]
        return torchao_ops.linear_qw_fused(x, *parts, self.bits, self.group_size, [x.shape[-1]] if self.norm else [],
                                           self.norm_weight, 1e-5, self.silu_mul, residual[0] if residual else None)


def fused_linears_cases() -> List[Tuple[str, torch.nn.Module, Tuple[torch.Tensor, ...]]]:
    """(case id, module, inputs) of vkd_linear_qw_fused: 1-3 weights, odd N, with and without the
    norm (and its weight), each epilogue, int4 and int8, one row (the fused kernel) and more."""
    torch.manual_seed(0)
    cases = []
    for case_id, k, ns, bits, group, asym, bias, norm, gamma, silu_mul, residual, sizes in (
        ("qkv_norm_int4_k64_g16_n37_5_5_m1", 64, (37, 5, 5), 4, 16, False, False, True, True, False, False, (1, 1, 64)),
        ("qkv_norm_int4_k64_g16_n37_5_5_m3", 64, (37, 5, 5), 4, 16, False, False, True, True, False, False, (1, 3, 64)),
        ("pair_silu_norm_int4_k96_g32_n37_m1", 96, (37, 37), 4, 32, False, False, True, True, True, False, (1, 96)),
        ("pair_silu_norm_int4_k96_g32_n37_m3", 96, (37, 37), 4, 32, True, True, True, True, True, False, (1, 3, 96)),
        ("residual_int4_k64_g32_n37_m1", 64, (37,), 4, 32, False, False, False, False, False, True, (1, 1, 64)),
        ("residual_int8_asym_bias_k96_g24_n5_m3", 96, (5,), 8, 24, True, True, False, False, False, True, (3, 96)),
        ("all_int8_asym_bias_k39_per_row_m1", 39, (11, 11), 8, 39, True, True, True, False, True, True, (1, 39)),
        ("all_int8_asym_bias_k39_per_row_m3", 39, (11, 11), 8, 39, True, True, True, False, True, True, (3, 39)),
        ("two_int8_k36_g12_n5_11_m1", 36, (5, 11), 8, 12, False, True, False, False, False, False, (1, 36)),
        ("pair_silu_int8_k36_g12_n5_m3", 36, (5, 5), 8, 12, False, False, False, False, True, False, (3, 36)),
        ("three_norm_int4_k40_g8_bias_m1", 40, (3, 200, 9), 4, 8, True, True, True, False, False, False, (1, 40)),
        ("three_norm_int4_k40_g8_bias_m3", 40, (3, 200, 9), 4, 8, True, True, True, False, False, False, (3, 40)),
    ):
        weights = [random_quantized_weight(n, k, bits, group, asym) + (torch.randn(n) if bias else None,) for n in ns]
        norm_weight = torch.rand(k) + 0.5 if gamma else None
        module = FusedLinearsCall(weights, bits, group, norm_weight, norm, silu_mul, residual)
        inputs = (torch.randn(sizes) * 2.0,)
        if residual:
            inputs += (torch.randn(sizes[:-1] + (ns[0],)),)
        cases.append((case_id, module, inputs))
    return cases


def random_quantized_weight(rows, cols, bits, group_size, asymmetric):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    groups = cols // group_size
    q = torch.randint(lo, hi + 1, (rows, cols), dtype=torch.int8)
    scales = torch.rand(rows, groups) * 0.1 + 0.01
    zeros = torch.randint(lo, hi + 1, (rows, groups), dtype=torch.int8) if asymmetric else None
    return torchao_ops.pack_weight(q, bits), scales, zeros


def fused_op_cases(op_name: str) -> List[Tuple[str, torch.nn.Module, Tuple[torch.Tensor, ...]]]:
    """(case id, module, inputs): direct calls of et_vk.<op_name> on random packed weights (odd K and N,
    groups dividing K)."""
    torch.manual_seed(0)
    op = getattr(torch.ops.et_vk, op_name).default
    cases = []
    if op_name == "vkd_embedding_qw":
        for case_id, rows, dim, bits, group, asym, indices in (
            ("int4_g16_asym", 11, 48, 4, 16, True, torch.tensor([[10, 0], [5, 5]])),
            ("int8_odd_dim21", 7, 21, 8, 21, False, torch.tensor([6, 0, 2])),
        ):
            packed, scales, zeros = random_quantized_weight(rows, dim, bits, group, asym)
            cases.append((case_id, FusedCall(op, packed, scales, zeros, None, bits, group, dim), (indices,)))
        return cases
    for case_id, k, n, bits, group, asym, bias, sizes in (
        ("int4_k45_g15_n7_asym", 45, 7, 4, 45, True, True, (3, 45)),
        ("int4_k64_g16_n33", 64, 33, 4, 16, False, False, (1, 64)),
        ("int8_k39_g13_n5_rank3", 39, 5, 8, 39, True, True, (2, 3, 39)),
        ("int8_k96_g24_n11", 96, 11, 8, 24, False, True, (17, 96)),
        ("int4_k64_g32_n37_m33_asym", 64, 37, 4, 32, True, True, (33, 64)),  # prefill rows: 33 (ragged tiles)
    ):
        packed, scales, zeros = random_quantized_weight(n, k, bits, group, asym)
        b = torch.randn(n) if bias else None
        cases.append((case_id, FusedCall(op, packed, scales, zeros, b, bits, group), (torch.randn(sizes),)))
    return cases
