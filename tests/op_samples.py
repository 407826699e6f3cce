"""The op registry's sample cases: small modules and seeded inputs with odd sizes,
size-1 dims, broadcasting, high ranks and edge values, from which op_cases.py
generates the op tests. SAMPLES maps each registry entry's name to its builder;
every builder seeds torch's generator first, so inputs and weights repeat run to run.
"""
import functools
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torchao_samples

from vkdelegate.quant import gguf_linear as _gguf
from vkdelegate.quant import q8ta_ops
from vkdelegate.quant.library import (conv2d_clamp, linear_act, ln_linear, rope, rope_kv_update, sdpa_bthd,
                                      sdpa_kv_cache, sdpa_qkv, sdpa_rope_kv)


@dataclass(frozen=True)
class SampleCase:
    case_id: str
    module: torch.nn.Module
    inputs: Tuple[torch.Tensor, ...]


def _cases(flows) -> List[SampleCase]:
    """SampleCases of torchao_samples' (case id, float module, quantized module, inputs) flows."""
    return [SampleCase(case_id, module, inputs) for case_id, _, module, inputs in flows]


def _fused_op_cases(op_name: str) -> List[SampleCase]:
    return [SampleCase(*case) for case in torchao_samples.fused_op_cases(op_name)]


class _Call(torch.nn.Module):
    """A function of the inputs as a module, so that it can be exported."""

    def __init__(self, fn: Callable, constant: Optional[torch.Tensor] = None):
        super().__init__()
        self.fn = fn
        if constant is not None:
            # A buffer: exported as a lifted constant that the delegate owns.
            self.register_buffer("constant", constant)
        else:
            self.constant = None

    def forward(self, *inputs):
        if self.constant is None:
            return self.fn(*inputs)
        return self.fn(*inputs, self.constant)


def _seeded(make_cases: Callable[[], List[SampleCase]]) -> Callable[[], List[SampleCase]]:
    """Seeds torch's global generator first: inputs and module weights repeat run to run."""

    @functools.wraps(make_cases)
    def samples() -> List[SampleCase]:
        torch.manual_seed(0)
        return make_cases()

    return samples


def _values(*sizes: int, scale: float = 1.0) -> torch.Tensor:
    """Normal values with exact zeros mixed in (the kinks of relu, clamp, gelu)."""
    values = torch.randn(sizes) * scale
    values.view(-1)[::5] = 0.0
    return values


def _wide(*sizes: int) -> torch.Tensor:
    """Large magnitudes, where sigmoid and tanh saturate and softmax overflows if done naively."""
    values = _values(*sizes, scale=30.0)
    flat = values.view(-1)
    flat[1::7] = 100.0
    flat[2::7] = -100.0
    return values


def _ints(*sizes: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    """Integers of either sign, including 0."""
    return torch.randint(-1000, 1000, sizes, dtype=dtype)


def _wide_ints(*sizes: int) -> torch.Tensor:
    """int64 values outside int32 (|x| up to 2^50; devices with shaderInt64 store int64 as int64)."""
    return torch.randint(-2**50, 2**50, sizes, dtype=torch.int64)


def _nonzero(*sizes: int) -> torch.Tensor:
    """Divisors: magnitudes in [0.5, 1.5) of either sign."""
    magnitudes = torch.rand(sizes) + 0.5
    return torch.where(torch.rand(sizes) < 0.5, -magnitudes, magnitudes)


def _binary_cases(fn: Callable, scalar_overload: object, rhs: Callable = _values) -> List[SampleCase]:
    return [
        SampleCase("odd_7x13", _Call(fn), (_values(7, 13), rhs(7, 13))),
        SampleCase("broadcast_5x1x7_3x1", _Call(fn), (_values(5, 1, 7), rhs(3, 1))),
        SampleCase("size1_1x33x1_1x1x1", _Call(fn), (_values(1, 33, 1), rhs(1, 1, 1))),
        SampleCase("rank0_4x5", _Call(fn), (_values(), rhs(4, 5))),
        SampleCase("rank6_broadcast", _Call(fn), (_values(2, 1, 3, 1, 5, 3), rhs(3, 4, 1, 3))),
        SampleCase("rank8", _Call(fn), (_values(2, 1, 2, 3, 1, 2, 1, 3), rhs(2, 1, 1, 3))),
        SampleCase("constant_rhs_13", _Call(fn, rhs(13)), (_values(7, 13),)),
        # An int Python scalar becomes an int64 constant plus a conversion that preprocess folds.
        SampleCase("int_scalar", _Call(lambda x: fn(x, 3)), (_values(7, 13),)),
        SampleCase("scalar_overload", _Call(lambda x: scalar_overload(x, 1.5)), (_values(7, 13),)),
    ]


def _alpha_cases(fn: Callable, scalar_overload: object) -> List[SampleCase]:
    return [
        SampleCase("alpha_2.5", _Call(lambda x, y: fn(x, y, alpha=2.5)), (_values(7, 13), _values(13))),
        SampleCase("scalar_overload_alpha_3", _Call(lambda x: scalar_overload(x, 1.5, 3)), (_values(33),)),
    ]


@_seeded
def _add_samples() -> List[SampleCase]:
    return (
        _binary_cases(torch.add, torch.ops.aten.add.Scalar)
        + _alpha_cases(torch.add, torch.ops.aten.add.Scalar)
        + [SampleCase("int64_broadcast", _Call(torch.add), (_ints(5, 1, 7), _ints(3, 1))),
           SampleCase("int64_wide", _Call(lambda x, y: x + y + 3_000_000_000), (_wide_ints(7, 13), _wide_ints(13))),
           SampleCase("int32_alpha", _Call(lambda x, y: torch.add(x, y, alpha=3)),
                      (_ints(7, 13, dtype=torch.int32), _ints(13, dtype=torch.int32)))]
        # Over a million elements: more workgroups than one dispatch dimension may hold.
        + [SampleCase("large_1031x1031", _Call(torch.add), (_values(1031, 1031), _values(1031, 1031)))]
    )


@_seeded
def _sub_samples() -> List[SampleCase]:
    return (
        _binary_cases(torch.sub, torch.ops.aten.sub.Scalar)
        + _alpha_cases(torch.sub, torch.ops.aten.sub.Scalar)
        + [SampleCase("int64_7x13", _Call(torch.sub), (_ints(7, 13), _ints(7, 13)))]
    )


@_seeded
def _mul_samples() -> List[SampleCase]:
    return _binary_cases(torch.mul, torch.ops.aten.mul.Scalar) + [
        SampleCase("int64_rank5", _Call(torch.mul), (_ints(2, 3, 1, 5, 3), _ints(3, 1, 1))),
        SampleCase("int64_wide", _Call(lambda x, y: x * y * 2**20), (_wide_ints(7, 13) // 2**30, _ints(13))),
    ]


@_seeded
def _div_samples() -> List[SampleCase]:
    return _binary_cases(torch.div, torch.ops.aten.div.Scalar, rhs=_nonzero)


def _unary_cases(fn: Callable, prefix: str = "") -> List[SampleCase]:
    inputs = [
        ("odd_7x13x33", lambda: _values(7, 13, 33)),
        ("size1_1x1x9", lambda: _values(1, 1, 9)),
        ("rank5_2x3x1x4x5", lambda: _values(2, 3, 1, 4, 5)),
        ("rank8", lambda: _values(2, 1, 2, 1, 3, 1, 2, 3)),
        ("rank0", lambda: _values()),
        ("wide_13x33", lambda: _wide(13, 33)),
    ]
    return [SampleCase(prefix + case_id, _Call(fn), (make_input(),)) for case_id, make_input in inputs]


@_seeded
def _gelu_samples() -> List[SampleCase]:
    gelu = torch.nn.functional.gelu
    return (_unary_cases(gelu) + _unary_cases(lambda x: gelu(x, approximate="tanh"), prefix="approximate_tanh_")
            + [_nan_case(gelu)])


@_seeded
def _clamp_samples() -> List[SampleCase]:
    return [
        SampleCase("min_only_float", _Call(lambda x: torch.clamp(x, min=-0.5)), (_values(7, 13),)),
        SampleCase("max_only_int", _Call(lambda x: torch.clamp(x, max=1)), (_values(7, 13),)),
        SampleCase("min_max_float", _Call(lambda x: torch.clamp(x, -0.25, 0.75)), (_values(33, 7),)),
        SampleCase("min_max_int", _Call(lambda x: torch.clamp(x, -1, 1)), (_wide(13),)),
        SampleCase("rank5", _Call(lambda x: torch.clamp(x, -1.0, 2.0)), (_values(2, 3, 1, 5, 3),)),
        SampleCase("size1", _Call(lambda x: torch.clamp(x, min=0.0)), (_values(1, 1),)),
    ]


@_seeded
def _hardtanh_samples() -> List[SampleCase]:
    hardtanh = torch.nn.functional.hardtanh
    return [
        SampleCase("default_range", _Call(hardtanh), (_values(7, 13, scale=2.0),)),
        SampleCase("range_-2.5_0.5", _Call(lambda x: hardtanh(x, -2.5, 0.5)), (_values(33, 7, scale=2.0),)),
        SampleCase("rank5", _Call(hardtanh), (_values(2, 1, 3, 5, 3),)),
        SampleCase("size1", _Call(hardtanh), (_values(1, 9, 1),)),
        _nan_case(hardtanh),
    ]


@_seeded
def _mm_samples() -> List[SampleCase]:
    return [
        SampleCase("odd_7x13_13x33", _Call(torch.mm), (_values(7, 13), _values(13, 33))),
        SampleCase("size1_1x5_5x1", _Call(torch.mm), (_values(1, 5), _values(5, 1))),
        SampleCase("outer_33x1_1x7", _Call(torch.mm), (_values(33, 1), _values(1, 7))),
        SampleCase("constant_rhs", _Call(torch.mm, _values(13, 9)), (_values(7, 13),)),
        # Enough output tiles for the runtime to pick its large (64 x 64) tiles.
        SampleCase("large_tiles_721x719_719x723", _Call(torch.mm), (_values(721, 719), _values(719, 723))),
        # fp32mm: enough 128 x 128 tiles (256) for matmul_tiled.glsl; partial tiles, K below
        # its step of 8, unaligned (scalar path) and aligned (vec4 path) K and N.
        SampleCase("tiled_2049x5_5x2050", _Call(torch.mm), (_values(2049, 5), _values(5, 2050))),
        SampleCase("tiled_aligned_2048x12_12x2052", _Call(torch.mm), (_values(2048, 12), _values(12, 2052))),
        # split-K: few tiles and a long K: the default splits K (matmul_tiled _sk + reduce).
        SampleCase("splitk_200x1032_1032x330", _Call(torch.mm),
                   (_values(200, 1032, scale=0.1), _values(1032, 330, scale=0.1))),
    ]


@_seeded
def _addmm_samples() -> List[SampleCase]:
    return [
        SampleCase("bias_row_33", _Call(torch.addmm), (_values(33), _values(7, 13), _values(13, 33))),
        SampleCase("bias_full_7x33", _Call(torch.addmm), (_values(7, 33), _values(7, 13), _values(13, 33))),
        SampleCase(
            "beta0.5_alpha2",
            _Call(lambda bias, a, b: torch.addmm(bias, a, b, beta=0.5, alpha=2.0)),
            (_values(1, 33), _values(7, 13), _values(13, 33)),
        ),
        SampleCase("size1_bias_1x1", _Call(torch.addmm), (_values(1, 1), _values(1, 5), _values(5, 1))),
        # fp32mm: matmul_tiled.glsl with a bias, alpha and beta.
        SampleCase(
            "tiled_beta0.5_alpha2",
            _Call(lambda bias, a, b: torch.addmm(bias, a, b, beta=0.5, alpha=2.0)),
            (_values(2050), _values(2049, 20), _values(20, 2050)),
        ),
    ]


@_seeded
def _linear_samples() -> List[SampleCase]:
    return [
        SampleCase("bias_7x13_to_33", torch.nn.Linear(13, 33), (_values(7, 13),)),
        SampleCase("no_bias_7x13_to_33", torch.nn.Linear(13, 33, bias=False), (_values(7, 13),)),
        SampleCase("rank3_input", torch.nn.Linear(13, 9), (_values(2, 5, 13),)),
        SampleCase("rank5_input", torch.nn.Linear(13, 9), (_values(2, 1, 3, 1, 13),)),
        SampleCase("rank1_input", torch.nn.Linear(13, 9), (_values(13),)),
        SampleCase("size1_1_to_1", torch.nn.Linear(1, 1), (_values(9, 1),)),
        # fp32mm: matmul_tiled.glsl with B contiguous in k (the weight), aligned and not.
        SampleCase("tiled_2052x12_to_2056", torch.nn.Linear(12, 2056), (_values(2052, 12),)),
        SampleCase("tiled_2x1030x13_to_2049", torch.nn.Linear(13, 2049, bias=False), (_values(2, 1030, 13),)),
        # split K by default (77 tokens, a batch-1 transformer projection), K unaligned.
        SampleCase("splitk_77x1030_to_1024", torch.nn.Linear(1030, 1024), (_values(77, 1030),)),
    ]


class LinearAct(torch.nn.Module):
    """linear_act of the input, with a second input, given, as the residual."""

    def __init__(self, linear: torch.nn.Linear, activation: str):
        super().__init__()
        self.linear, self.activation = linear, activation

    def forward(self, x, residual=None):
        return linear_act.default(x, self.linear.weight, self.linear.bias, self.activation, residual)


@_seeded
def _linear_act_samples() -> List[SampleCase]:
    nan_row = _values(3, 13)
    nan_row[1, 4] = float("nan")  # relu keeps NaN, as torch.relu does
    return [
        SampleCase("relu_gemv_1x13_to_33", LinearAct(torch.nn.Linear(13, 33), "relu"), (_values(1, 13),)),
        SampleCase("relu_nan_3x13_to_9", LinearAct(torch.nn.Linear(13, 9), "relu"), (nan_row,)),
        SampleCase("gelu_rank3_no_bias", LinearAct(torch.nn.Linear(13, 9, bias=False), "gelu"),
                   (_values(2, 5, 13, scale=4.0),)),
        SampleCase("gelu_tanh_8x64_to_256", LinearAct(torch.nn.Linear(64, 256), "gelu_tanh"), (_values(8, 64),)),
        # matmul_tiled.glsl: the 16-byte store without bias, the scalar store with it.
        SampleCase("relu_tiled_no_bias", LinearAct(torch.nn.Linear(12, 2056, bias=False), "relu"),
                   (_values(2052, 12),)),
        SampleCase("gelu_tiled_bias_unaligned", LinearAct(torch.nn.Linear(13, 2049), "gelu"), (_values(1030, 13),)),
        # split K: the activation in the reduce, after the slices are summed.
        SampleCase("relu_splitk_77x1030_to_1024", LinearAct(torch.nn.Linear(1030, 1024), "relu"),
                   (_values(77, 1030),)),
        # A residual added after the activation, on each kernel: gemv (one row), matmul.glsl,
        # matmul_tiled.glsl (its 16-byte store without bias, the scalar one with), the split-K reduce.
        SampleCase("residual_gemv_1x13_to_33", LinearAct(torch.nn.Linear(13, 33), "none"),
                   (_values(1, 13), _values(1, 33))),
        SampleCase("gelu_residual_rank3_no_bias", LinearAct(torch.nn.Linear(13, 9, bias=False), "gelu"),
                   (_values(2, 5, 13), _values(2, 5, 9))),
        SampleCase("relu_residual_tiled_no_bias", LinearAct(torch.nn.Linear(12, 2056, bias=False), "relu"),
                   (_values(2052, 12), _values(2052, 2056))),
        SampleCase("residual_tiled_bias_unaligned", LinearAct(torch.nn.Linear(13, 2049), "none"),
                   (_values(1030, 13), _values(1030, 2049))),
        SampleCase("gelu_tanh_residual_splitk_77x1030_to_1024", LinearAct(torch.nn.Linear(1030, 1024), "gelu_tanh"),
                   (_values(77, 1030), _values(77, 1024))),
    ]


class LnLinear(torch.nn.Module):
    """ln_linear of the input: a LayerNorm's parameters (random; none without affine, a weight alone
    without bias), then a linear's, and an activation."""

    def __init__(self, k: int, n: int, activation: str = "none", affine: bool = True, norm_bias: bool = True,
                 bias: bool = True):
        super().__init__()
        self.norm = torch.nn.LayerNorm(k, eps=1e-5, elementwise_affine=affine, bias=norm_bias)
        if affine:
            with torch.no_grad():
                self.norm.weight.uniform_(-2, 2)
                if norm_bias:
                    self.norm.bias.uniform_(-1, 1)
        self.linear, self.activation = torch.nn.Linear(k, n, bias=bias), activation

    def forward(self, x):
        return ln_linear.default(x, self.norm.weight, self.norm.bias, self.norm.eps, self.linear.weight,
                                 self.linear.bias, self.activation)


@_seeded
def _ln_linear_samples() -> List[SampleCase]:
    return [
        SampleCase("gelu_rank3_2x5x24_to_40", LnLinear(24, 40, "gelu"), (_values(2, 5, 24, scale=3.0),)),
        SampleCase("no_affine_7x13_to_9", LnLinear(13, 9, affine=False), (_values(7, 13),)),
        # rows with a large mean (the variance is taken around it), a norm weight alone, no linear bias
        SampleCase("large_mean_weight_only_relu_9x32_to_17", LnLinear(32, 17, "relu", norm_bias=False, bias=False),
                   (_values(9, 32) * 0.5 + 300.0,)),
        SampleCase("gemv_1x64_to_33", LnLinear(64, 33), (_values(1, 64),)),
    ]


@_seeded
def _bmm_samples() -> List[SampleCase]:
    return [
        SampleCase("batch3_7x13_13x5", _Call(torch.bmm), (_values(3, 7, 13), _values(3, 13, 5))),
        # fp32mm: matmul_tiled.glsl over 4 batches of 9 x 9 tiles.
        SampleCase("tiled_batch4_1030x12_12x1032", _Call(torch.bmm), (_values(4, 1030, 12), _values(4, 12, 1032))),
        SampleCase("size1_1x1x9_1x9x1", _Call(torch.bmm), (_values(1, 1, 9), _values(1, 9, 1))),
        SampleCase("outer_batch4", _Call(torch.bmm), (_values(4, 33, 1), _values(4, 1, 7))),
        # split K by default over 4 batches.
        SampleCase("splitk_batch4_130x1030_1030x140", _Call(torch.bmm),
                   (_values(4, 130, 1030, scale=0.1), _values(4, 1030, 140, scale=0.1))),
    ]


def _softmax_cases(fn: Callable) -> List[SampleCase]:
    return [
        SampleCase("last_dim_7x13", _Call(lambda x: fn(x, -1)), (_values(7, 13),)),
        SampleCase("dim0_7x13", _Call(lambda x: fn(x, 0)), (_values(7, 13),)),
        SampleCase("dim1_rank4", _Call(lambda x: fn(x, 1)), (_values(2, 5, 3, 7),)),
        SampleCase("size1_dim", _Call(lambda x: fn(x, 1)), (_values(5, 1),)),
        SampleCase("wide_3x33", _Call(lambda x: fn(x, -1)), (_wide(3, 33),)),
        SampleCase("rank5_dim2", _Call(lambda x: fn(x, 2)), (_wide(2, 1, 9, 2, 3),)),
    ]


@_seeded
def _view_samples() -> List[SampleCase]:
    return [
        SampleCase("7x13_to_13x7", _Call(lambda x: x.view(13, 7)), (_values(7, 13),)),
        SampleCase("flatten_2x3x5", _Call(lambda x: x.view(-1)), (_values(2, 3, 5),)),
        SampleCase("size1_dims", _Call(lambda x: x.view(5, 1, 1)), (_values(1, 1, 5),)),
        SampleCase("rank6_to_rank2", _Call(lambda x: x.view(6, 4)), (_values(2, 3, 1, 2, 1, 2),)),
        SampleCase("to_rank0", _Call(lambda x: x.view([])), (_values(1),)),
    ]


@_seeded
def _permute_samples() -> List[SampleCase]:
    return [
        SampleCase("transpose_7x13", _Call(lambda x: x.permute(1, 0)), (_values(7, 13),)),
        SampleCase("rank5", _Call(lambda x: x.permute(4, 0, 3, 1, 2)), (_values(2, 3, 1, 5, 7),)),
        SampleCase("rank8_reversed", _Call(lambda x: x.permute(7, 6, 5, 4, 3, 2, 1, 0)), (_values(2, 1, 3, 1, 2, 1, 2, 3),)),
        SampleCase("size1_dims", _Call(lambda x: x.permute(2, 0, 1)), (_values(1, 7, 1),)),
        SampleCase("int64_rank4", _Call(lambda x: x.permute(3, 1, 0, 2)), (_ints(2, 3, 5, 7),)),
        SampleCase("bool_transpose", _Call(lambda x: x.permute(1, 0)), (torch.rand(7, 13) < 0.5,)),
        # transpose and t export as permute_copy.
        SampleCase("transpose_method_rank4", _Call(lambda x: x.transpose(1, -1)), (_values(2, 3, 5, 7),)),
        SampleCase("t_2d", _Call(lambda x: x.t()), (_values(7, 13),)),
    ]


@_seeded
def _unsqueeze_samples() -> List[SampleCase]:
    return [
        SampleCase("dim0_7x13", _Call(lambda x: x.unsqueeze(0)), (_values(7, 13),)),
        SampleCase("dim_last", _Call(lambda x: x.unsqueeze(-1)), (_values(7, 13),)),
        SampleCase("rank7_to_rank8", _Call(lambda x: x.unsqueeze(3)), (_values(2, 1, 2, 3, 1, 2, 3),)),
        SampleCase("rank0", _Call(lambda x: x.unsqueeze(0)), (_values(),)),
    ]


@_seeded
def _squeeze_samples() -> List[SampleCase]:
    return [
        SampleCase("all_1x7x1x13", _Call(torch.squeeze), (_values(1, 7, 1, 13),)),
        SampleCase("dims_0_2", _Call(lambda x: torch.squeeze(x, (0, 2))), (_values(1, 7, 1, 1),)),
        SampleCase("overload_dim", _Call(lambda x: torch.ops.aten.squeeze_copy.dim(x, 1)), (_values(7, 1, 13),)),
        SampleCase("overload_default", _Call(torch.ops.aten.squeeze_copy.default), (_values(1, 7, 1, 13),)),
        SampleCase("rank6", _Call(lambda x: x.squeeze(4)), (_values(2, 3, 1, 2, 1, 3),)),
    ]


@_seeded
def _select_samples() -> List[SampleCase]:
    return [
        SampleCase("row_2_of_7x13", _Call(lambda x: x[2]), (_values(7, 13),)),
        SampleCase("last_column", _Call(lambda x: x[:, -1]), (_values(7, 13),)),
        SampleCase("rank5_dim3", _Call(lambda x: x.select(3, 0)), (_values(2, 3, 1, 5, 3),)),
        SampleCase("size1_dim", _Call(lambda x: x.select(1, 0)), (_values(7, 1, 13),)),
        SampleCase("int64_row", _Call(lambda x: x[3]), (_ints(7, 13),)),
        # With dynamic shapes, the index is a SymInt.
        SampleCase("middle_column", _Call(lambda x: x[:, x.shape[1] // 2]), (_values(7, 13),)),
    ]


@_seeded
def _slice_samples() -> List[SampleCase]:
    return [
        SampleCase("rows_1_to_5", _Call(lambda x: x[1:5]), (_values(7, 13),)),
        SampleCase("step_2", _Call(lambda x: x[:, ::2]), (_values(7, 13),)),
        SampleCase("negative_start", _Call(lambda x: x[..., -3:]), (_values(3, 5, 33),)),
        SampleCase("rank5_step_3", _Call(lambda x: x[:, :, 1:8:3]), (_values(2, 1, 9, 3, 5),)),
        SampleCase("to_size1", _Call(lambda x: x[:, 4:5]), (_values(7, 13),)),
        # narrow exports as slice_copy.
        SampleCase("narrow", _Call(lambda x: x.narrow(1, 2, 3)), (_values(3, 7, 5),)),
        # With dynamic shapes, start and end are SymInts.
        SampleCase("second_half", _Call(lambda x: x[:, x.shape[1] // 2: x.shape[1] - 1]), (_values(7, 13),)),
    ]


@_seeded
def _expand_samples() -> List[SampleCase]:
    return [
        SampleCase("1x13_to_7x13", _Call(lambda x: x.expand(7, 13)), (_values(1, 13),)),
        SampleCase("middle_5x1x7", _Call(lambda x: x.expand(5, 3, 7)), (_values(5, 1, 7),)),
        SampleCase("new_leading_dim", _Call(lambda x: x.expand(2, -1, -1)), (_values(3, 33),)),
        SampleCase("rank5", _Call(lambda x: x.expand(2, 3, 4, 1, 5)), (_values(1, 3, 1, 1, 5),)),
    ]


@_seeded
def _layer_norm_samples() -> List[SampleCase]:
    return [
        SampleCase("affine_7x13", torch.nn.LayerNorm(13), (_values(7, 13),)),
        SampleCase("two_dims_3x5x7", torch.nn.LayerNorm([5, 7]), (_values(3, 5, 7),)),
        SampleCase("no_affine", torch.nn.LayerNorm(33, elementwise_affine=False), (_values(2, 9, 33),)),
        SampleCase("no_bias_rank5", torch.nn.LayerNorm(3, bias=False), (_values(2, 1, 3, 2, 3),)),
        SampleCase("size1_rows", torch.nn.LayerNorm(13), (_values(1, 1, 13),)),
        SampleCase("wide_values", torch.nn.LayerNorm(33), (_wide(4, 33),)),
    ]


@_seeded
def _clone_samples() -> List[SampleCase]:
    return [
        SampleCase("odd_7x13", _Call(torch.clone), (_values(7, 13),)),
        SampleCase("rank5", _Call(torch.clone), (_values(2, 3, 1, 5, 3),)),
        SampleCase("size1", _Call(torch.clone), (_values(1, 1, 9),)),
        SampleCase("rank0", _Call(torch.clone), (_values(),)),
        SampleCase("overload_aten_clone", _Call(torch.ops.aten.clone.default), (_values(7, 13),)),
    ]


@_seeded
def _to_copy_samples() -> List[SampleCase]:
    # ExecuTorch removes float32-to-float32 copies of activations before
    # partitioning, so what reaches the delegate are conversions of constants,
    # which preprocess folds.
    def add_as_float(x: torch.Tensor, constant: torch.Tensor) -> torch.Tensor:
        return x + constant.to(torch.float32)

    return [
        SampleCase("int64_constant_13", _Call(add_as_float, torch.arange(-6, 7)), (_values(7, 13),)),
        SampleCase("int64_constant_size1", _Call(add_as_float, torch.tensor([[[5]]])), (_values(1, 9, 1),)),
        SampleCase("bool_constant_rank5", _Call(add_as_float, torch.rand(2, 1, 3, 1, 5) < 0.5), (_values(2, 3, 3, 4, 5),)),
    ]


@_seeded
def _alias_copy_samples() -> List[SampleCase]:
    return [
        SampleCase("odd_7x13", _Call(torch.ops.aten.alias_copy.default), (_values(7, 13),)),
        SampleCase("size1", _Call(torch.ops.aten.alias_copy.default), (_values(1, 1, 3),)),
    ]


# ----------------------------------------------------------------------------
# Math, activations, comparisons, logical and bitwise ops, where, reductions,
# dtype conversions.


def _edge(*sizes: int, nan: bool = True) -> torch.Tensor:
    """_wide values with +-inf, -0.0 and (optionally) NaN mixed in."""
    values = _wide(*sizes)
    flat = values.view(-1)
    flat[3::11] = float("inf")
    flat[4::11] = float("-inf")
    flat[6::11] = -0.0
    if nan:
        flat[8::11] = float("nan")
    return values


def _nan_case(fn: Callable, *sizes: int) -> SampleCase:
    """fn on _wide values with NaN and -0.0 mixed in (no infinities: _edge has those): NaN must stay
    NaN where torch keeps it. A GPU compiler may turn a select or a clamp into max / min, which drop
    NaN (NVIDIA's does, lavapipe's not), so these run on the real GPUs too (benchmarks/eager_samples.py)."""
    sizes = sizes or (9, 11)
    values = _wide(*sizes)
    values.view(-1)[6::11] = -0.0
    values.view(-1)[8::11] = float("nan")
    return SampleCase("nan_" + "x".join(map(str, sizes)), _Call(fn), (values,))


def _positive(*sizes: int) -> torch.Tensor:
    """Magnitudes in [0.01, 10): inputs inside the domain of log, sqrt, rsqrt."""
    return torch.rand(sizes) * 10.0 + 0.01


def _bools(*sizes: int) -> torch.Tensor:
    return torch.rand(sizes) < 0.5


def _small_ints(*sizes: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    """Few distinct values: ties for comparisons and argmax."""
    return torch.randint(-3, 4, sizes, dtype=dtype)


def _math_cases(fn: Callable, domain: Callable = _values, edge: bool = True, nan: bool = True) -> List[SampleCase]:
    cases = [
        SampleCase("odd_7x13x33", _Call(fn), (domain(7, 13, 33),)),
        SampleCase("size1_1x1x9", _Call(fn), (domain(1, 1, 9),)),
        SampleCase("rank8", _Call(fn), (domain(2, 1, 2, 1, 3, 1, 2, 3),)),
        SampleCase("rank0", _Call(fn), (domain(),)),
        SampleCase("wide_13x33", _Call(fn), (_wide(13, 33),)),
    ]
    if edge:
        cases.append(SampleCase("edge_values_9x11", _Call(fn), (_edge(9, 11, nan=nan),)))
    return cases


def _int_cases(fn: Callable) -> List[SampleCase]:
    return [
        SampleCase("int64_7x13", _Call(fn), (_ints(7, 13),)),
        SampleCase("int32_rank5", _Call(fn), (_ints(2, 3, 1, 5, 3, dtype=torch.int32),)),
    ]


@_seeded
def _div_mode_samples() -> List[SampleCase]:
    def div(mode):
        return lambda a, b: torch.div(a, b, rounding_mode=mode)

    def nonzero_ints(*sizes):
        values = _ints(*sizes)
        return torch.where(values == 0, torch.ones_like(values), values)

    return [
        SampleCase("floor_7x13", _Call(div("floor")), (_values(7, 13, scale=10.0), _nonzero(7, 13))),
        SampleCase("trunc_broadcast", _Call(div("trunc")), (_values(5, 1, 7, scale=10.0), _nonzero(3, 1))),
        SampleCase("floor_int64", _Call(div("floor")), (_ints(7, 13), nonzero_ints(7, 13))),
        SampleCase("trunc_int64_wide", _Call(div("trunc")), (_wide_ints(7, 13), nonzero_ints(13) * 2**20)),
        SampleCase("trunc_int32_broadcast", _Call(div("trunc")),
                   (_ints(2, 3, 5, dtype=torch.int32), nonzero_ints(5).to(torch.int32))),
        SampleCase("floor_operator_int", _Call(lambda a, b: a // b), (_ints(33), nonzero_ints(33))),
        SampleCase("floor_by_zero", _Call(div("floor")), (_values(13), torch.zeros(13))),
        SampleCase("none_mode", _Call(div(None)), (_values(7, 13), _nonzero(7, 13))),
    ]


@_seeded
def _pow_samples() -> List[SampleCase]:
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, float("inf"), float("-inf"), float("nan"), 3.0])
    return [
        SampleCase("tensor_positive_base", _Call(torch.pow), (_positive(7, 13), _values(7, 13))),
        SampleCase("tensor_broadcast_int_exponents", _Call(torch.pow),
                   (_values(5, 1, 7), torch.randint(-3, 4, (3, 1)).float())),
        SampleCase("tensor_special_pairs", _Call(torch.pow),
                   (special.view(11, 1), special.view(1, 11))),
        SampleCase("tensor_negative_base_fraction", _Call(torch.pow), (_values(33), torch.full((33,), 0.5))),
        SampleCase("square", _Call(lambda x: x ** 2), (_wide(7, 13),)),
        SampleCase("cube_rank5", _Call(lambda x: x ** 3), (_values(2, 3, 1, 5, 3),)),
        SampleCase("half_power", _Call(lambda x: torch.pow(x, 0.5)), (_values(7, 13),)),
        SampleCase("negative_power", _Call(lambda x: torch.pow(x, -1.5)), (_positive(7, 13),)),
        SampleCase("scalar_base", _Call(lambda x: torch.pow(2.0, x)), (_values(7, 13, scale=4.0),)),
        SampleCase("scalar_base_edge", _Call(lambda x: torch.pow(2.0, x)), (_edge(9, 11),)),
        SampleCase("int64_tensor", _Call(torch.pow), (_small_ints(7, 13), torch.randint(0, 5, (7, 13)))),
        SampleCase("int64_square", _Call(lambda x: x ** 2), (_ints(7, 13),)),
    ]


def _minmax_cases(fn: Callable) -> List[SampleCase]:
    return [
        SampleCase("odd_7x13", _Call(fn), (_values(7, 13), _values(7, 13))),
        SampleCase("broadcast_5x1x7_3x1", _Call(fn), (_values(5, 1, 7), _values(3, 1))),
        SampleCase("rank8", _Call(fn), (_values(2, 1, 2, 3, 1, 2, 1, 3), _values(2, 1, 1, 3))),
        SampleCase("edge_values", _Call(fn), (_edge(9, 11), _edge(9, 11).flip(0))),
        SampleCase("int64_broadcast", _Call(fn), (_ints(5, 1, 7), _ints(3, 1))),
        SampleCase("constant_rhs", _Call(fn, _values(13)), (_values(7, 13),)),
    ]


def _named(fn: Callable, cases: List[SampleCase]) -> List[SampleCase]:
    """Cases of one entry that covers several functions: ids prefixed with the function's name."""
    return [SampleCase(f"{fn.__name__}_{case.case_id}", case.module, case.inputs) for case in cases]


def _compare_cases(fn: Callable) -> List[SampleCase]:
    ties = _small_ints(7, 13).float()
    return [
        SampleCase("ties_7x13", _Call(fn), (ties, _small_ints(7, 13).float())),
        SampleCase("broadcast_5x1x7_3x1", _Call(fn), (_small_ints(5, 1, 7).float(), _small_ints(3, 1).float())),
        SampleCase("rank8", _Call(fn), (_values(2, 1, 2, 3, 1, 2, 1, 3), _values(2, 1, 1, 3))),
        SampleCase("edge_values", _Call(fn), (_edge(9, 11), _edge(9, 11).flip(1))),
        SampleCase("int64_ties", _Call(fn), (_small_ints(7, 13), _small_ints(13))),
        SampleCase("int32", _Call(fn), (_small_ints(33, dtype=torch.int32), _small_ints(33, dtype=torch.int32))),
        SampleCase("bool", _Call(fn), (_bools(7, 13), _bools(7, 13))),
        SampleCase("scalar_float", _Call(lambda x: fn(x, 0.5)), (_edge(9, 11),)),
        SampleCase("scalar_zero", _Call(lambda x: fn(x, 0)), (_small_ints(7, 13).float(),)),
        SampleCase("scalar_int64", _Call(lambda x: fn(x, 1)), (_small_ints(7, 13),)),
    ]


def _logical_cases(fn: Callable) -> List[SampleCase]:
    return [
        SampleCase("bool_7x13", _Call(fn), (_bools(7, 13), _bools(7, 13))),
        SampleCase("bool_broadcast", _Call(fn), (_bools(5, 1, 7), _bools(3, 1))),
        SampleCase("float_with_zeros", _Call(fn), (_small_ints(7, 13).float(), _edge(7, 13))),
        SampleCase("int64", _Call(fn), (_small_ints(33), _small_ints(33))),
    ]


def _bitwise_cases(fn: Callable) -> List[SampleCase]:
    return [
        SampleCase("int64_7x13", _Call(fn), (_ints(7, 13), _ints(7, 13))),
        SampleCase("int32_broadcast", _Call(fn), (_ints(5, 1, 7, dtype=torch.int32), _ints(3, 1, dtype=torch.int32))),
        SampleCase("bool", _Call(fn), (_bools(7, 13), _bools(7, 13))),
    ]


def _not_samples(fn: Callable, floats: bool) -> Callable[[], List[SampleCase]]:
    @_seeded
    def samples() -> List[SampleCase]:
        cases = [
            SampleCase("bool_7x13", _Call(fn), (_bools(7, 13),)),
            SampleCase("int64_rank5", _Call(fn), (_small_ints(2, 3, 1, 5, 3),)),
            SampleCase("int32", _Call(fn), (_ints(33, dtype=torch.int32),)),
        ]
        if floats:
            cases.append(SampleCase("float_edge", _Call(fn), (_edge(9, 11),)))
        return cases

    return samples


@_seeded
def _where_samples() -> List[SampleCase]:
    return [
        SampleCase("same_shape_7x13", _Call(torch.where), (_bools(7, 13), _values(7, 13), _values(7, 13))),
        SampleCase("broadcast_all_three", _Call(torch.where), (_bools(5, 1, 7), _values(3, 1), _values(1, 5, 1, 1))),
        SampleCase("from_comparison", _Call(lambda x, y: torch.where(x > y, x, y)), (_edge(9, 11), _values(11))),
        SampleCase("rank8", _Call(torch.where), (_bools(2, 1, 2, 3, 1, 2, 1, 3), _values(2, 1, 1, 3), _values(3))),
        SampleCase("int64", _Call(torch.where), (_bools(7, 13), _ints(7, 13), _ints(13))),
        SampleCase("bool_values", _Call(torch.where), (_bools(33), _bools(33), _bools(1))),
        SampleCase("constant_other", _Call(torch.where, _values(13)), (_bools(7, 13), _values(7, 13))),
    ]


@_seeded
def _clamp_int_samples() -> List[SampleCase]:
    return [
        SampleCase("int64_min_max", _Call(lambda x: torch.clamp(x, -100, 100)), (_ints(7, 13),)),
        SampleCase("int32_min_only", _Call(lambda x: torch.clamp(x, min=0)), (_ints(33, dtype=torch.int32),)),
        SampleCase("int64_max_only", _Call(lambda x: torch.clamp(x, max=-5)), (_ints(2, 3, 1, 5),)),
        SampleCase("float_edge", _Call(lambda x: torch.clamp(x, -1.0, 1.0)), (_edge(9, 11),)),
    ]


def _reduce_cases(fn: Callable, ints: bool = True) -> List[SampleCase]:
    cases = [
        SampleCase("all_dims_7x13", _Call(lambda x: fn(x, None, False)), (_values(7, 13),)),
        SampleCase("dim_last_keepdim", _Call(lambda x: fn(x, -1, True)), (_values(7, 13, 33),)),
        SampleCase("dim0", _Call(lambda x: fn(x, 0, False)), (_values(33, 7),)),
        SampleCase("dims_0_2_rank4", _Call(lambda x: fn(x, (0, 2), False)), (_values(3, 5, 7, 2),)),
        SampleCase("dims_1_3_keepdim", _Call(lambda x: fn(x, (1, 3), True)), (_values(2, 5, 3, 7),)),
        SampleCase("rank8_dims_1_4_7", _Call(lambda x: fn(x, (1, 4, 7), False)), (_values(2, 3, 1, 2, 3, 1, 2, 3),)),
        SampleCase("size1_dim", _Call(lambda x: fn(x, 1, False)), (_values(7, 1, 13),)),
        SampleCase("long_row_1x1031", _Call(lambda x: fn(x, 1, False)), (_wide(2, 1031),)),
        SampleCase("rank0", _Call(lambda x: fn(x, None, False)), (_values(),)),
        SampleCase("edge_values", _Call(lambda x: fn(x, 1, False)), (_edge(9, 11),)),
    ]
    if ints:
        cases += [
            SampleCase("int64_dim1", _Call(lambda x: fn(x, 1, False)), (_ints(7, 13),)),
            SampleCase("int64_wide_dim1", _Call(lambda x: fn(x, 1, False)), (_wide_ints(7, 13),)),
            SampleCase("int32_all", _Call(lambda x: fn(x, None, True)), (_ints(5, 7, dtype=torch.int32),)),
        ]
    return cases


def _dims_or_all(dim):
    return [] if dim is None else dim


@_seeded
def _sum_samples() -> List[SampleCase]:
    return _reduce_cases(lambda x, dim, keepdim: torch.sum(x, _dims_or_all(dim), keepdim)) + [
        SampleCase("bool_count", _Call(lambda x: x.sum(0)), (_bools(7, 13),)),
        SampleCase("no_dim_arg", _Call(torch.sum), (_values(5, 9),)),
    ]


@_seeded
def _mean_samples() -> List[SampleCase]:
    return _reduce_cases(lambda x, dim, keepdim: torch.mean(x, _dims_or_all(dim), keepdim), ints=False) + [
        SampleCase("no_dim_arg", _Call(torch.mean), (_values(5, 9),)),
    ]


def _minmax_reduce_samples(fn: Callable) -> Callable[[], List[SampleCase]]:
    @_seeded
    def samples() -> List[SampleCase]:
        return _reduce_cases(lambda x, dim, keepdim: fn(x, _dims_or_all(dim), keepdim)) + [
            SampleCase("ties_float", _Call(lambda x: fn(x, 1)), (_small_ints(7, 13).float(),)),
        ]

    return samples


def _arg_reduce_samples(fn: Callable) -> Callable[[], List[SampleCase]]:
    @_seeded
    def samples() -> List[SampleCase]:
        def on_dim(x, dim, keepdim):
            return fn(x, dim[0] if isinstance(dim, tuple) else dim, keepdim)

        cases = [case for case in _reduce_cases(on_dim) if "dims_" not in case.case_id]
        return cases + [
            SampleCase("ties_float_dim1", _Call(lambda x: fn(x, 1)), (_small_ints(7, 13).float(),)),
            SampleCase("ties_int64_dim0", _Call(lambda x: fn(x, 0)), (_small_ints(33, 7),)),
            SampleCase("ties_flattened", _Call(lambda x: fn(x)), (_small_ints(5, 9).float(),)),
            SampleCase("all_nan_and_inf", _Call(lambda x: fn(x, 0)),
                       (torch.tensor([[float("nan"), float("inf")], [float("nan"), float("-inf")]]),)),
        ]

    return samples


def _max_dim_samples(fn: Callable) -> Callable[[], List[SampleCase]]:
    @_seeded
    def samples() -> List[SampleCase]:
        return [
            SampleCase("dim1_7x13", _Call(lambda x: tuple(fn(x, 1))), (_values(7, 13),)),
            SampleCase("dim0_keepdim_ties", _Call(lambda x: tuple(fn(x, 0, True))), (_small_ints(33, 7).float(),)),
            SampleCase("rank5_dim_minus2", _Call(lambda x: tuple(fn(x, -2))), (_edge(2, 3, 1, 11, 3),)),
            SampleCase("int64_dim1", _Call(lambda x: tuple(fn(x, 1))), (_small_ints(7, 13),)),
        ]

    return samples


@_seeded
def _var_samples() -> List[SampleCase]:
    return _reduce_cases(lambda x, dim, keepdim: torch.var(x, dim, keepdim=keepdim), ints=False) + [
        SampleCase("correction_0", _Call(lambda x: torch.var(x, 1, correction=0)), (_values(7, 13),)),
        SampleCase("std_dim1", _Call(lambda x: torch.std(x, 1)), (_values(7, 13),)),
        SampleCase("single_element_rows", _Call(lambda x: torch.var(x, 1)), (_values(7, 1),)),
    ]


@_seeded
def _convert_samples() -> List[SampleCase]:
    def to(dtype):
        return lambda x: x.to(dtype)

    return [
        SampleCase("float_to_int64", _Call(to(torch.int64)), (_values(7, 13, scale=100.0),)),
        SampleCase("float_to_int32_rank5", _Call(to(torch.int32)), (_values(2, 3, 1, 5, 3, scale=50.0),)),
        SampleCase("float_to_bool", _Call(to(torch.bool)), (_edge(9, 11),)),
        SampleCase("int64_to_float", _Call(to(torch.float32)), (_ints(7, 13),)),
        SampleCase("wide_int64_to_float", _Call(to(torch.float32)), (_wide_ints(7, 13),)),
        SampleCase("wide_float_to_int64", _Call(to(torch.int64)), (_values(7, 13, scale=2.0**40),)),
        SampleCase("int64_to_int32", _Call(to(torch.int32)), (_ints(7, 13),)),
        SampleCase("int32_to_int64", _Call(to(torch.int64)), (_ints(33, dtype=torch.int32),)),
        SampleCase("int64_to_bool", _Call(to(torch.bool)), (_small_ints(7, 13),)),
        SampleCase("bool_to_float", _Call(to(torch.float32)), (_bools(7, 13),)),
        SampleCase("bool_to_int64", _Call(to(torch.int64)), (_bools(1, 9, 1),)),
        SampleCase("mask_arithmetic", _Call(lambda x: x * (x > 0).float()), (_values(7, 13),)),
        # To and from float16 (NaN and inf convert; magnitudes above 65504 become inf).
        SampleCase("float_to_float16", _Call(to(torch.float16)), (_edge(7, 13) * 1000.0,)),
        SampleCase("float16_to_float_rank5", _Call(to(torch.float32)), (_edge(2, 3, 1, 5, 3).half(),)),
        SampleCase("float16_to_int64", _Call(to(torch.int64)), (_values(7, 13, scale=100.0).half(),)),
        SampleCase("int64_to_float16", _Call(to(torch.float16)), (_ints(7, 13) * 100,)),
        SampleCase("float16_to_bool", _Call(to(torch.bool)), (_edge(9, 11).half(),)),
        SampleCase("bool_to_float16", _Call(to(torch.float16)), (_bools(1, 9, 1),)),
    ]


@_seeded
def _cat_samples() -> List[SampleCase]:
    cat = torch.cat
    return [
        SampleCase("dim0_two", _Call(lambda x, y: cat([x, y])), (_values(7, 13), _values(3, 13))),
        SampleCase("dim1_three", _Call(lambda x, y, z: cat([x, y, z], 1)),
                   (_values(2, 3, 5), _values(2, 1, 5), _values(2, 7, 5))),
        SampleCase("last_dim_negative", _Call(lambda x, y: cat([x, y], -1)), (_values(3, 5, 33), _values(3, 5, 1))),
        SampleCase("single_input", _Call(lambda x: cat([x], 0)), (_values(7, 13),)),
        SampleCase("rank5_dim3", _Call(lambda x, y: cat([x, y], 3)), (_values(2, 1, 3, 2, 5), _values(2, 1, 3, 4, 5))),
        SampleCase("rank8_dim7", _Call(lambda x, y: cat([x, y], 7)),
                   (_values(2, 1, 2, 1, 3, 1, 2, 3), _values(2, 1, 2, 1, 3, 1, 2, 1))),
        SampleCase("same_input_twice", _Call(lambda x: cat([x, x], 1)), (_values(1, 9),)),
        SampleCase("constant_input", _Call(lambda x, c: cat([x, c], 0), _values(2, 13)), (_values(7, 13),)),
        SampleCase("int64_dim1", _Call(lambda x, y: cat([x, y], 1)), (_ints(3, 5), _ints(3, 2))),
        SampleCase("bool_dim0", _Call(lambda x, y: cat([x, y])), (torch.rand(3, 5) < 0.5, torch.rand(1, 5) < 0.5)),
        SampleCase("int32_nchw_channels", _Call(lambda x, y: cat([x, y], 1)),
                   (_ints(2, 3, 4, 5, dtype=torch.int32), _ints(2, 1, 4, 5, dtype=torch.int32))),
    ]


@_seeded
def _convolution_samples() -> List[SampleCase]:
    nn = torch.nn
    return [
        SampleCase("3x3_pad1_bias_batch2", nn.Conv2d(3, 5, 3, padding=1), (_values(2, 3, 7, 9),)),
        SampleCase("stride2_dilation_asym_no_bias",
                   nn.Conv2d(4, 6, (3, 5), stride=(2, 1), padding=(1, 2), dilation=(2, 1), bias=False),
                   (_values(3, 4, 13, 11),)),
        SampleCase("groups2", nn.Conv2d(4, 6, 3, groups=2), (_values(2, 4, 7, 7),)),
        SampleCase("depthwise_3x3_s2", nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), (_values(2, 8, 9, 9),)),
        SampleCase("depthwise_multiplier2", nn.Conv2d(4, 8, 3, groups=4, bias=False), (_values(1, 4, 7, 5),)),
        SampleCase("pointwise_16_to_33", nn.Conv2d(16, 33, 1), (_values(2, 16, 7, 5),)),
        SampleCase("channels_32_7x7_s2_p3", nn.Conv2d(32, 13, 7, stride=2, padding=3), (_values(1, 32, 13, 13),)),
        SampleCase("size1_1x1_input", nn.Conv2d(3, 4, 1), (_values(1, 3, 1, 1),)),
        SampleCase("weight_input", _Call(lambda x, w: torch.nn.functional.conv2d(x, w, stride=2)),
                   (_values(2, 3, 7, 7), _values(5, 3, 3, 3))),
        SampleCase("conv1d_s2_p1", nn.Conv1d(3, 5, 3, stride=2, padding=1), (_values(2, 3, 13),)),
        SampleCase("conv1d_groups_dilation", nn.Conv1d(6, 4, 3, dilation=3, groups=2, bias=False), (_values(1, 6, 33),)),
        SampleCase("transposed_s2_outpad_groups2",
                   nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
                   (_values(2, 4, 5, 7),)),
        SampleCase("transposed_asym_dilation_no_bias",
                   nn.ConvTranspose2d(3, 5, (2, 4), stride=(1, 3), dilation=(2, 1), bias=False),
                   (_values(1, 3, 4, 5),)),
        SampleCase("transposed_1d", nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1), (_values(2, 3, 9),)),
        # 16 or more output channels per group: the implicit-GEMM kernel.
        SampleCase("gemm_3x3_s2_p2_dilation2", nn.Conv2d(8, 67, 3, stride=2, padding=2, dilation=2),
                   (_values(2, 8, 13, 11),)),
        SampleCase("gemm_groups2_pointwise_no_bias", nn.Conv2d(6, 32, 1, groups=2, bias=False), (_values(3, 6, 9, 9),)),
        SampleCase("gemm_k_over_16_asym", nn.Conv2d(7, 16, (3, 2), stride=(1, 2), padding=(1, 0)), (_values(1, 7, 9, 17),)),
        SampleCase("gemm_conv1d", nn.Conv1d(5, 20, 5, padding=2), (_values(2, 5, 33),)),
    ]


class ConvClamp(torch.nn.Module):
    def __init__(self, conv: torch.nn.Module, low: float, high: float):
        super().__init__()
        self.conv, self.low, self.high = conv, low, high

    def forward(self, x, residual=None):
        c = self.conv
        return conv2d_clamp.default(x, c.weight, c.bias, list(c.stride), list(c.padding), list(c.dilation), False,
                                 [0] * len(c.stride), c.groups, self.low, self.high, residual)


@_seeded
def _conv2d_clamp_samples() -> List[SampleCase]:
    nn, inf = torch.nn, float("inf")
    return [
        # The direct kernels (fewer than 16 channels per group), relu and relu6 bounds.
        SampleCase("direct_3x3_relu_batch2", ConvClamp(nn.Conv2d(3, 5, 3, padding=1), 0.0, inf),
                   (_values(2, 3, 7, 9),)),
        SampleCase("depthwise_s2_relu6", ConvClamp(nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), 0.0, 6.0),
                   (_values(1, 8, 9, 9, scale=4.0),)),
        SampleCase("conv1d_clamp_no_bias", ConvClamp(nn.Conv1d(3, 5, 3, bias=False), -0.5, 0.25),
                   (_values(2, 3, 13),)),
        _nan_case(ConvClamp(nn.Conv2d(3, 5, 3, padding=1), 0.0, 6.0), 2, 3, 7, 9),  # relu6 of NaN is NaN
        # The implicit-GEMM kernels: wide tiles at larger batch, split-K tiles at batch 1.
        SampleCase("gemm_batch4_relu", ConvClamp(nn.Conv2d(8, 67, 3, padding=1), 0.0, inf),
                   (_values(4, 8, 13, 11),)),
        SampleCase("gemm_pointwise_min_only", ConvClamp(nn.Conv2d(33, 40, 1), -0.1, inf), (_values(1, 33, 7, 5),)),
        SampleCase("gemm_3x3_s2_hardtanh", ConvClamp(nn.Conv2d(20, 33, 3, stride=2, padding=1), -1.0, 1.0),
                   (_values(1, 20, 13, 9),)),
        # A residual added before the clamp (ResNet's conv + add + relu).
        SampleCase("gemm_residual_relu", ConvClamp(nn.Conv2d(16, 17, 3, padding=1), 0.0, inf),
                   (_values(1, 16, 9, 7), _values(1, 17, 9, 7))),
        SampleCase("direct_residual_no_bound", ConvClamp(nn.Conv2d(3, 4, 3, padding=1), -inf, inf),
                   (_values(2, 3, 5, 7), _values(2, 4, 5, 7))),
    ]


@_seeded
def _max_pool2d_samples() -> List[SampleCase]:
    nn = torch.nn
    return [
        SampleCase("3x3_s2_p1_batch2", nn.MaxPool2d(3, 2, 1), (_values(2, 3, 9, 9),)),
        SampleCase("2x2_default_stride_odd", nn.MaxPool2d(2), (_values(1, 4, 7, 13),)),
        SampleCase("ceil_mode_asym", nn.MaxPool2d((3, 2), stride=(2, 3), ceil_mode=True), (_values(2, 2, 8, 13),)),
        SampleCase("dilation2_pad1", nn.MaxPool2d(3, 1, 1, dilation=2), (_values(1, 3, 9, 7),)),
        SampleCase("unbatched_wide", nn.MaxPool2d(2, 2), (_wide(3, 6, 6),)),
        SampleCase("with_indices", nn.MaxPool2d(3, 2, 1, return_indices=True), (_values(2, 3, 7, 7),)),
        _nan_case(nn.MaxPool2d(2, 2, return_indices=True), 1, 3, 6, 8),  # NaN wins its window, as in torch
    ]


@_seeded
def _avg_pool2d_samples() -> List[SampleCase]:
    nn = torch.nn
    return [
        SampleCase("3x3_s2_p1_include_pad", nn.AvgPool2d(3, 2, 1), (_values(2, 3, 9, 9),)),
        SampleCase("3x3_s2_p1_exclude_pad", nn.AvgPool2d(3, 2, 1, count_include_pad=False), (_values(2, 3, 9, 9),)),
        SampleCase("ceil_mode_include_pad", nn.AvgPool2d(3, 2, 1, ceil_mode=True), (_values(1, 2, 8, 10),)),
        SampleCase("ceil_mode_exclude_pad", nn.AvgPool2d((2, 3), (2, 2), (1, 1), ceil_mode=True, count_include_pad=False),
                   (_values(1, 2, 7, 13),)),
        SampleCase("divisor_override_5", nn.AvgPool2d(2, divisor_override=5), (_values(2, 3, 6, 7),)),
        SampleCase("unbatched_7x7_global", nn.AvgPool2d(7), (_values(5, 7, 7),)),
    ]


@_seeded
def _adaptive_avg_pool2d_samples() -> List[SampleCase]:
    nn = torch.nn
    return [
        SampleCase("9x9_to_3x4", nn.AdaptiveAvgPool2d((3, 4)), (_values(2, 3, 9, 9),)),
        SampleCase("13x7_to_5x3_uneven", nn.AdaptiveAvgPool2d((5, 3)), (_values(1, 2, 13, 7),)),
        SampleCase("upsampling_3x3_to_7x5", nn.AdaptiveAvgPool2d((7, 5)), (_values(1, 2, 3, 3),)),
        SampleCase("unbatched_to_2x2", nn.AdaptiveAvgPool2d(2), (_values(3, 8, 5),)),
    ]


def _batch_norm_module(channels: int, affine: bool = True, dims: int = 2) -> torch.nn.Module:
    cls = {1: torch.nn.BatchNorm1d, 2: torch.nn.BatchNorm2d}[dims]
    module = cls(channels, affine=affine, eps=1e-3)
    module.running_mean.copy_(torch.randn(channels))
    module.running_var.copy_(torch.rand(channels) + 0.5)
    if affine:
        module.weight.data.copy_(torch.randn(channels))
        module.bias.data.copy_(torch.randn(channels))
    return module.eval()


@_seeded
def _batch_norm_samples() -> List[SampleCase]:
    return [
        SampleCase("nchw_batch2_7x9", _batch_norm_module(5), (_values(2, 5, 7, 9),)),
        SampleCase("no_affine", _batch_norm_module(3, affine=False), (_values(1, 3, 13, 1),)),
        SampleCase("1d_rank2", _batch_norm_module(33, dims=1), (_values(7, 33),)),
        SampleCase("1d_rank3", _batch_norm_module(4, dims=1), (_values(2, 4, 13),)),
    ]


@_seeded
def _group_norm_samples() -> List[SampleCase]:
    nn = torch.nn
    return [
        SampleCase("2_groups_batch2", nn.GroupNorm(2, 4), (_values(2, 4, 5, 7),)),
        SampleCase("no_affine_3_groups", nn.GroupNorm(3, 6, affine=False), (_values(1, 6, 9),)),
        SampleCase("instance_like", nn.GroupNorm(5, 5), (_wide(2, 5, 3, 3),)),
        SampleCase("one_group_rank2", nn.GroupNorm(1, 13), (_values(3, 13),)),
    ]


@_seeded
def _upsample_nearest2d_samples() -> List[SampleCase]:
    up = torch.nn.Upsample
    return [
        SampleCase("scale2_batch2", up(scale_factor=2), (_values(2, 3, 5, 7),)),
        SampleCase("size_7x9_from_5x5", up(size=(7, 9)), (_values(1, 3, 5, 5),)),
        SampleCase("scale_1.5_2.5", up(scale_factor=(1.5, 2.5)), (_values(1, 2, 5, 3),)),
        SampleCase("downsize_3x2", up(size=(3, 2)), (_values(2, 2, 7, 5),)),
        SampleCase("size1_input", up(scale_factor=3), (_values(1, 1, 1, 1),)),
    ]


@_seeded
def _upsample_bilinear2d_samples() -> List[SampleCase]:
    up = torch.nn.Upsample
    return [
        SampleCase("scale2_batch2", up(scale_factor=2, mode="bilinear"), (_values(2, 3, 5, 7),)),
        SampleCase("scale2_align_corners", up(scale_factor=2, mode="bilinear", align_corners=True), (_values(2, 3, 5, 7),)),
        SampleCase("size_7x9", up(size=(7, 9), mode="bilinear"), (_values(1, 3, 5, 5),)),
        SampleCase("size_7x9_align_corners", up(size=(7, 9), mode="bilinear", align_corners=True), (_values(1, 3, 5, 5),)),
        SampleCase("downscale_0.5", up(scale_factor=0.5, mode="bilinear"), (_values(1, 2, 13, 8),)),
        SampleCase("size1_to_1x1_align_corners", up(size=(1, 1), mode="bilinear", align_corners=True), (_values(1, 2, 3, 3),)),
        SampleCase("from_1x1", up(size=(4, 3), mode="bilinear"), (_values(2, 2, 1, 1),)),
    ]


@_seeded
def _pixel_shuffle_samples() -> List[SampleCase]:
    return [
        SampleCase("factor2_batch2", torch.nn.PixelShuffle(2), (_values(2, 8, 5, 3),)),
        SampleCase("factor3", torch.nn.PixelShuffle(3), (_values(1, 9, 2, 2),)),
        SampleCase("rank5", torch.nn.PixelShuffle(2), (_values(2, 3, 4, 3, 3),)),
        SampleCase("int64_rank3", torch.nn.PixelShuffle(2), (_ints(4, 3, 5),)),
    ]


@_seeded
def _pixel_unshuffle_samples() -> List[SampleCase]:
    return [
        SampleCase("factor2_batch2", torch.nn.PixelUnshuffle(2), (_values(2, 2, 6, 4),)),
        SampleCase("factor3", torch.nn.PixelUnshuffle(3), (_values(1, 1, 9, 3),)),
        SampleCase("rank5", torch.nn.PixelUnshuffle(2), (_values(2, 3, 1, 4, 2),)),
        SampleCase("int64_rank3", torch.nn.PixelUnshuffle(2), (_ints(1, 4, 6),)),
    ]


@_seeded
def _grid_sampler_samples() -> List[SampleCase]:
    def sampler(mode: str, padding: str, align_corners: bool) -> torch.nn.Module:
        return _Call(lambda x, grid: torch.nn.functional.grid_sample(
            x, grid, mode=mode, padding_mode=padding, align_corners=align_corners))

    cases = []
    for mode in ("bilinear", "nearest"):
        for padding in ("zeros", "border", "reflection"):
            for align_corners in (False, True):
                # Grid values past [-1, 1] exercise the padding modes.
                cases.append(SampleCase(f"{mode}_{padding}_align{int(align_corners)}",
                                        sampler(mode, padding, align_corners),
                                        (_values(2, 3, 5, 7), torch.rand(2, 4, 9, 2) * 3.0 - 1.5)))
    cases.append(SampleCase("size1_input", sampler("bilinear", "reflection", True),
                            (_values(1, 2, 1, 1), torch.rand(1, 3, 3, 2) * 2.0 - 1.0)))
    return cases
_F = torch.nn.functional


@_seeded
def _split_samples() -> List[SampleCase]:
    return [
        SampleCase("sizes_2_4_1_dim1", _Call(lambda x: torch.split(x, [2, 4, 1], 1)), (_values(3, 7, 5),)),
        SampleCase("equal_chunks_last_dim", _Call(lambda x: torch.split(x, 3, -1)), (_values(2, 5, 13),)),
        SampleCase("chunk_rank6", _Call(lambda x: torch.chunk(x, 2, 0)), (_values(4, 1, 2, 3, 1, 3),)),
        SampleCase("int64_size1_parts", _Call(lambda x: torch.split(x, 1, 0)), (_ints(3, 7),)),
        SampleCase("bool_unbalanced", _Call(lambda x: torch.split(x, [1, 6], 1)), (_bools(2, 7),)),
    ]


@_seeded
def _repeat_samples() -> List[SampleCase]:
    return [
        SampleCase("2x3_of_7x13", _Call(lambda x: x.repeat(2, 3)), (_values(7, 13),)),
        SampleCase("new_dims", _Call(lambda x: x.repeat(2, 1, 3, 1)), (_values(5, 7),)),
        SampleCase("size1_and_ones", _Call(lambda x: x.repeat(1, 1, 1)), (_values(1, 9, 1),)),
        SampleCase("rank8", _Call(lambda x: x.repeat(1, 2, 1, 1, 2, 1, 1, 2)), (_values(2, 1, 2, 3, 1, 2, 1, 3),)),
        SampleCase("int64", _Call(lambda x: x.repeat(3, 1)), (_ints(2, 5),)),
        SampleCase("bool", _Call(lambda x: x.repeat(2, 2)), (_bools(3, 3),)),
    ]


@_seeded
def _flip_samples() -> List[SampleCase]:
    return [
        SampleCase("dim0_7x13", _Call(lambda x: x.flip(0)), (_values(7, 13),)),
        SampleCase("dims_0_2_rank3", _Call(lambda x: x.flip(0, -1)), (_values(3, 5, 7),)),
        SampleCase("rank8_all", _Call(lambda x: x.flip(list(range(8)))), (_values(2, 1, 2, 3, 1, 2, 1, 3),)),
        SampleCase("size1_dim", _Call(lambda x: x.flip(1)), (_values(7, 1, 3),)),
        SampleCase("int64", _Call(lambda x: x.flip(1)), (_ints(4, 9),)),
        SampleCase("bool", _Call(lambda x: x.flip(0)), (_bools(5, 3),)),
    ]


@_seeded
def _pad_samples() -> List[SampleCase]:
    pad = _F.pad
    return [
        SampleCase("last_dim_1_2", _Call(lambda x: pad(x, (1, 2))), (_values(7, 13),)),
        SampleCase("two_dims_value", _Call(lambda x: pad(x, (0, 1, 3, 2), value=-1.5)), (_values(2, 5, 7),)),
        SampleCase("negative_crops", _Call(lambda x: pad(x, (-1, 2, 1, -2))), (_values(3, 7, 9),)),
        SampleCase("rank5_three_dims", _Call(lambda x: pad(x, (1, 1, 0, 2, 2, 0))), (_values(2, 1, 3, 4, 5),)),
        SampleCase("size1", _Call(lambda x: pad(x, (3, 3))), (_values(1, 1),)),
        SampleCase("int64_value", _Call(lambda x: pad(x, (2, 0), value=7)), (_ints(3, 5),)),
        SampleCase("neg_inf", _Call(lambda x: pad(x, (1, 1), value=float("-inf"))), (_values(4, 6),)),
    ]


@_seeded
def _roll_samples() -> List[SampleCase]:
    return [
        SampleCase("dim1_by_2", _Call(lambda x: x.roll(2, 1)), (_values(3, 7),)),
        SampleCase("flat_by_-3", _Call(lambda x: x.roll(-3)), (_values(5, 4),)),
        SampleCase("two_dims", _Call(lambda x: x.roll((1, -2), (0, 2))), (_values(3, 2, 5),)),
        SampleCase("shift_beyond_size", _Call(lambda x: x.roll(15, -1)), (_values(2, 1, 13),)),
        SampleCase("same_dim_twice_rank8", _Call(lambda x: x.roll((1, 2), (3, 3))), (_values(2, 1, 2, 3, 1, 2, 1, 3),)),
        SampleCase("int64", _Call(lambda x: x.roll(1, 0)), (_ints(4, 3),)),
        SampleCase("bool", _Call(lambda x: x.roll(-1, 1)), (_bools(3, 4),)),
    ]


@_seeded
def _unfold_samples() -> List[SampleCase]:
    return [
        SampleCase("size3_step2_last", _Call(lambda x: x.unfold(-1, 3, 2)), (_values(2, 5, 13),)),
        SampleCase("dim0_size2_step1", _Call(lambda x: x.unfold(0, 2, 1)), (_values(7, 3),)),
        SampleCase("step_larger_than_size", _Call(lambda x: x.unfold(1, 2, 5)), (_values(3, 13),)),
        SampleCase("whole_dim", _Call(lambda x: x.unfold(1, 7, 1)), (_values(2, 7, 1),)),
        SampleCase("rank1", _Call(lambda x: x.unfold(0, 4, 3)), (_values(33),)),
        SampleCase("int64", _Call(lambda x: x.unfold(1, 3, 3)), (_ints(2, 9),)),
    ]


@_seeded
def _index_select_samples() -> List[SampleCase]:
    return [
        SampleCase("dim1_repeats", _Call(lambda x, i: x.index_select(1, i)), (_values(7, 13), torch.tensor([0, 12, 3, 3, 5]))),
        SampleCase("dim0_rank5", _Call(lambda x, i: x.index_select(0, i)), (_values(3, 2, 1, 4, 5), torch.tensor([2, 0]))),
        SampleCase("negative_dim", _Call(lambda x, i: x.index_select(-1, i)), (_values(2, 5, 9), torch.randint(0, 9, (13,)))),
        SampleCase("int32_index", _Call(lambda x, i: x.index_select(0, i)), (_values(9, 3), torch.tensor([8, 1, 4], dtype=torch.int32))),
        SampleCase("int64_values", _Call(lambda x, i: x.index_select(1, i)), (_ints(4, 6), torch.tensor([5, 0]))),
        SampleCase("constant_index", _Call(lambda x, i: x.index_select(1, i), torch.tensor([1, 1, 0])), (_values(3, 2),)),
    ]


@_seeded
def _rope_samples() -> List[SampleCase]:
    return [
        SampleCase("heads4_t5_d8", _Call(lambda x, c, s: rope.default(x, c, s)),
                   (_values(1, 4, 5, 8), _values(5, 8), _values(5, 8))),
        SampleCase("rank2_t1_d2", _Call(lambda x, c, s: rope.default(x, c, s)), (_values(1, 2), _values(1, 2), _values(1, 2))),
        SampleCase("heads_last_t5_h3_d8", _Call(lambda x, c, s: rope.default(x, c, s)),
                   (_values(1, 5, 3, 8), _values(5, 1, 8), _values(5, 1, 8))),
    ]


@_seeded
def _sdpa_kv_cache_samples() -> List[SampleCase]:
    call = _Call(lambda q, k, v, positions: sdpa_kv_cache.default(q, k, v, positions))
    return [
        SampleCase("gqa2_t3_prefill", call,
                   (_values(1, 3, 4, 8), _values(1, 9, 2, 8), _values(1, 9, 2, 8), torch.tensor([0, 1, 2]))),
        SampleCase("decode_last_position_int32", call,
                   (_values(1, 1, 3, 5), _values(1, 6, 1, 5), _values(1, 6, 1, 5), torch.tensor([5], dtype=torch.int32))),
        # Past the split path's 16 queries: the tiled kernel (runtime/ops/attention.cpp).
        SampleCase("gqa4_t20_tiled", call,
                   (_values(1, 20, 8, 8), _values(1, 24, 2, 8), _values(1, 24, 2, 8), torch.arange(4, 24))),
    ]


@_seeded
def _sdpa_qkv_samples() -> List[SampleCase]:
    """qkv [B, T, 3 * heads * D]: odd T and D, one head and several, causal with a scale, a batch."""
    return [
        SampleCase("t9_h3_d8", _Call(lambda qkv: sdpa_qkv.default(qkv, 3)), (_values(1, 9, 72),)),
        SampleCase("causal_scale_b2_t7_h2_d13", _Call(lambda qkv: sdpa_qkv.default(qkv, 2, True, 0.4)),
                   (_values(2, 7, 78),)),
        SampleCase("t33_h1_d20", _Call(lambda qkv: sdpa_qkv.default(qkv, 1)), (_values(1, 33, 60),)),
    ]


@_seeded
def _sdpa_bthd_samples() -> List[SampleCase]:
    """q [B, T, H, E], k and v [B, S, KVH, *]: GQA causal with odd T and E, a scale, Ev != E, one head."""
    return [
        SampleCase("gqa4_causal_t9_e13", _Call(lambda q, k, v: sdpa_bthd.default(q, k, v, True)),
                   (_values(1, 9, 8, 13), _values(1, 9, 2, 13), _values(1, 9, 2, 13))),
        SampleCase("scale_b2_t5_s7_ev6", _Call(lambda q, k, v: sdpa_bthd.default(q, k, v, False, 0.3)),
                   (_values(2, 5, 3, 8), _values(2, 7, 3, 8), _values(2, 7, 3, 6))),
        SampleCase("h1_t33", _Call(lambda q, k, v: sdpa_bthd.default(q, k, v)),
                   (_values(1, 33, 1, 20), _values(1, 33, 1, 20), _values(1, 33, 1, 20))),
    ]


class _StateWrite(torch.nn.Module):
    """A buffer written in place at positions (index_copy_ and `buffer[..., positions] = values` export
    to index_put), then read."""

    def __init__(self, shape, dim: int, dtype=torch.float32):
        super().__init__()
        self.dim = dim
        self.register_buffer("state", torch.zeros(shape, dtype=dtype))

    def forward(self, values, positions):
        torch.ops.aten.index_put_(self.state, [None] * self.dim + [positions], values)
        return self.state * 2


@_seeded
def _index_put_samples() -> List[SampleCase]:
    return [
        SampleCase("cache_dim2", _StateWrite((1, 2, 9, 4), 2), (_values(1, 2, 3, 4), torch.tensor([6, 0, 2]))),
        SampleCase("dim0_int32_index", _StateWrite((5, 3), 0), (_values(2, 3), torch.tensor([4, 1], dtype=torch.int32))),
        SampleCase("int64_state", _StateWrite((4, 6), 1, torch.int64), (_ints(4, 2), torch.tensor([5, 3]))),
    ]


class _CacheStep(torch.nn.Module):
    """`op` (vkd_rope_kv_update or vkd_sdpa_rope_kv) into two cache buffers (state), then the caches read.
    `filled`: the caches start with values (earlier steps' rows that an attention reads), else zeros."""

    def __init__(self, op, cache_shape, filled=False):
        super().__init__()
        self.op = op
        self.register_buffer("k_cache", _values(*cache_shape) if filled else torch.zeros(cache_shape))
        self.register_buffer("v_cache", _values(*cache_shape) if filled else torch.zeros(cache_shape))

    def forward(self, q, k, v, cos, sin, positions):
        first, k_new, v_new = self.op(q, k, v, cos, sin, self.k_cache, self.v_cache, positions)
        self.k_cache.copy_(k_new)
        self.v_cache.copy_(v_new)
        return first, k_new * 2, v_new * 2


def _cache_step_case(op, name, heads, kv_heads, head_dim, cache_len, positions, batch=1, filled=False):
    length = len(positions)
    return SampleCase(name, _CacheStep(op, (batch, cache_len, kv_heads, head_dim), filled),
                      (_values(batch, length, heads, head_dim), _values(batch, length, kv_heads, head_dim),
                       _values(batch, length, kv_heads, head_dim), _values(length, 1, head_dim),
                       _values(length, 1, head_dim), positions))


@_seeded
def _rope_kv_update_samples() -> List[SampleCase]:
    op = rope_kv_update.default
    return [
        _cache_step_case(op, "gqa2_prefill_t3", 4, 2, 8, 9, torch.tensor([0, 4, 8])),
        _cache_step_case(op, "decode_last_position_int32", 3, 1, 6, 5, torch.tensor([4], dtype=torch.int32)),
    ]


@_seeded
def _sdpa_rope_kv_samples() -> List[SampleCase]:
    # Decode (T = 1) takes the split kernel's rope variant; up to 16 queries too (several new rows,
    # some in the chunks of others' queries); above, the rope dispatch and the prefill kernel. Caches
    # of 9 take chunks of 4 keys, filled with earlier rows. Head dims: 8 (a half is two 4-vectors), 12
    # (4-vectors, halves of 6: the rope element by element), 6 (element by element throughout).
    def case(*args, **kwargs):
        return _cache_step_case(sdpa_rope_kv.default, *args, filled=True, **kwargs)

    return [
        case("decode_gqa4_mid_chunk", 8, 2, 8, 9, torch.tensor([6])),
        case("decode_d6_last_position_int32", 3, 1, 6, 5, torch.tensor([4], dtype=torch.int32)),
        case("decode_d12_batch2_first_position", 4, 4, 12, 9, torch.tensor([0]), batch=2),
        case("t3_gqa2", 4, 2, 8, 9, torch.tensor([2, 5, 8])),
        case("prefill_t18", 2, 1, 8, 21, torch.arange(1, 19)),
    ]


@_seeded
def _gather_samples() -> List[SampleCase]:
    return [
        SampleCase("dim1_7x13", _Call(lambda x, i: x.gather(1, i)), (_values(7, 13), torch.randint(0, 13, (7, 5)))),
        SampleCase("dim0_smaller_index", _Call(lambda x, i: x.gather(0, i)), (_values(7, 13), torch.randint(0, 7, (3, 9)))),
        SampleCase("rank5_negative_dim", _Call(lambda x, i: x.gather(-2, i)), (_values(2, 3, 1, 5, 3), torch.randint(0, 5, (2, 3, 1, 8, 3)))),
        SampleCase("int64_values", _Call(lambda x, i: torch.gather(x, 1, i)), (_ints(4, 6), torch.randint(0, 6, (4, 6)))),
        SampleCase("size1", _Call(lambda x, i: x.gather(0, i)), (_values(1, 1), torch.zeros(1, 1, dtype=torch.int64))),
    ]


@_seeded
def _index_tensor_samples() -> List[SampleCase]:
    i3 = lambda n, *s: torch.randint(0, n, s)
    return [
        SampleCase("dim0", _Call(lambda x, i: x[i]), (_values(7, 13), i3(7, 5))),
        SampleCase("middle_dim_2d_index", _Call(lambda x, i: x[:, i]), (_values(3, 9, 4), i3(9, 2, 5))),
        SampleCase("two_adjacent_broadcast", _Call(lambda x, i, j: x[:, i, j]), (_values(2, 5, 7, 3), i3(5, 4, 1), i3(7, 6))),
        SampleCase("two_apart_go_first", _Call(lambda x, i, j: x[i, :, j]), (_values(5, 3, 7), i3(5, 4), i3(7, 4))),
        SampleCase("negative_indices", _Call(lambda x, i: x[:, i]), (_values(3, 9), -i3(9, 6) - 1)),
        SampleCase("four_indices", _Call(lambda x, a, b, c, d: x[a, b, c, d]),
                   (_values(2, 3, 4, 5, 6), i3(2, 3), i3(3, 3), i3(4, 3), i3(5, 3))),
        SampleCase("int64_values_int32_index", _Call(lambda x, i: x[i]), (_ints(6, 4), i3(6, 3).to(torch.int32))),
        SampleCase("bool_values", _Call(lambda x, i: x[:, :, i]), (_bools(2, 3, 5), i3(5, 7))),
    ]


@_seeded
def _embedding_samples() -> List[SampleCase]:
    return [
        SampleCase("vocab_33_dim_13", torch.nn.Embedding(33, 13), (torch.randint(0, 33, (2, 7)),)),
        SampleCase("padding_idx", torch.nn.Embedding(10, 8, padding_idx=0), (torch.tensor([[0, 3, 9, 0]]),)),
        SampleCase("rank1_indices", torch.nn.Embedding(5, 3), (torch.tensor([4, 4, 0, 1]),)),
        SampleCase("rank0_index", _Call(lambda i, w: _F.embedding(i, w), _values(9, 5)), (torch.tensor(7),)),
        SampleCase("rank7_indices", torch.nn.Embedding(6, 2), (torch.randint(0, 6, (2, 1, 2, 1, 3, 1, 2)),)),
        SampleCase("int32_indices", torch.nn.Embedding(17, 33), (torch.randint(0, 17, (5,), dtype=torch.int32),)),
    ]


@_seeded
def _full_samples() -> List[SampleCase]:
    # No tensor inputs: these fold to constants at preprocess.
    return [
        SampleCase("full_plus_input", _Call(lambda x: x + torch.full((7, 13), 2.5)), (_values(7, 13),)),
        SampleCase("zeros_broadcast", _Call(lambda x: x * 2 + torch.zeros(13)), (_values(7, 13),)),
        SampleCase("ones_int64", _Call(lambda x: x + torch.ones(3, 1, dtype=torch.int64)), (_ints(3, 5),)),
    ]


@_seeded
def _full_like_samples() -> List[SampleCase]:
    # Of an input: these reach the runtime.
    return [
        SampleCase("full_like_7x13", _Call(lambda x: torch.full_like(x, -3.25)), (_values(7, 13),)),
        SampleCase("zeros_like_plus", _Call(lambda x: torch.zeros_like(x) + x), (_values(2, 3, 1, 5),)),
        SampleCase("ones_like_rank8", _Call(torch.ones_like), (_values(2, 1, 2, 3, 1, 2, 1, 3),)),
        SampleCase("ones_like_int64", _Call(lambda x: torch.ones_like(x) + x), (_ints(5, 7),)),
        SampleCase("full_like_bool", _Call(lambda x: torch.full_like(x, True)), (_bools(4, 3),)),
        SampleCase("full_like_to_int64", _Call(lambda x: torch.full_like(x, 7, dtype=torch.int64)), (_values(3, 5),)),
        SampleCase("rank0", _Call(lambda x: torch.full_like(x, 1e30)), (_values(),)),
    ]


@_seeded
def _arange_samples() -> List[SampleCase]:
    return [
        SampleCase("int_end_13", _Call(lambda x: x + torch.arange(13)), (_ints(7, 13),)),
        SampleCase("float_step", _Call(lambda x: x * torch.arange(-1.0, 2.25, 0.25)), (_values(2, 13),)),
        SampleCase("start_end_step", _Call(lambda x: x - torch.arange(3, 40, 3)), (_ints(13),)),
    ]


@_seeded
def _scalar_tensor_samples() -> List[SampleCase]:
    return [
        SampleCase("float", _Call(lambda x: x + torch.scalar_tensor(3.5)), (_values(7, 13),)),
        SampleCase("int64", _Call(lambda x: x * torch.scalar_tensor(-4, dtype=torch.int64)), (_ints(5),)),
    ]


def _sdpa(**kwargs) -> Callable:
    return lambda q, k, v, *mask: _F.scaled_dot_product_attention(q, k, v, *mask, **kwargs)


@_seeded
def _sdpa_samples() -> List[SampleCase]:
    qkv = lambda b, h, l, s, e, hk=None, ev=None: (
        _values(b, h, l, e), _values(b, hk or h, s, e), _values(b, hk or h, s, ev or e))
    return [
        # Without a mask and up to 512 keys, below the tiled kernel's 128 workgroups: the short kernel
        # (sdpa_short.glsl; tests/test_sdpa_tiled.py covers it and the tiled one); with a mask a workgroup
        # per row (sdpa.glsl). The first two, so that the float16 run takes both.
        SampleCase("no_mask_2x3x7x16", _Call(_sdpa()), qkv(2, 3, 7, 7, 16)),
        SampleCase("float_mask_broadcast", _Call(_sdpa()), qkv(2, 3, 5, 7, 8) + (_values(1, 5, 7),)),
        SampleCase("short_gqa_causal_L40_S23_Ev12", _Call(_sdpa(enable_gqa=True, is_causal=True)),
                   qkv(1, 4, 40, 23, 16, hk=2, ev=12)),
        SampleCase("cross_L5_S13_Ev9", _Call(_sdpa()), qkv(1, 2, 5, 13, 8, ev=9)),
        SampleCase("causal_33", _Call(_sdpa(is_causal=True)), qkv(1, 2, 33, 33, 8)),
        SampleCase("causal_S_larger", _Call(_sdpa(is_causal=True)), qkv(2, 1, 5, 9, 4)),
        # More keys than one block of the kernel (64): the online softmax rescales.
        SampleCase("long_S_150_wide", _Call(_sdpa()), (_wide(1, 2, 3, 8), _wide(1, 2, 150, 8), _values(1, 2, 150, 8))),
        SampleCase("scale_0.3", _Call(_sdpa(scale=0.3)), qkv(2, 2, 4, 6, 8)),
        SampleCase("float_mask_neg_inf", _Call(_sdpa()),
                   qkv(2, 2, 4, 6, 8) + (torch.where(torch.rand(2, 1, 4, 6) < 0.3, float("-inf"), 0.0),)),
        SampleCase("bool_mask_with_empty_row", _Call(_sdpa()),
                   qkv(2, 2, 4, 70, 8) + (torch.cat([torch.zeros(1, 70, dtype=torch.bool), _bools(3, 70)]),)),
        SampleCase("gqa_8_heads_2_kv", _Call(_sdpa(enable_gqa=True, is_causal=True)), qkv(2, 8, 9, 9, 16, hk=2)),
        SampleCase("rank3", _Call(_sdpa()), (_values(3, 7, 8), _values(3, 5, 8), _values(3, 5, 4))),
        SampleCase("head_dim_256", _Call(_sdpa()), qkv(1, 1, 3, 5, 256)),
        SampleCase("rank5", _Call(_sdpa(is_causal=True)), (_values(2, 1, 2, 5, 4),) * 3),
        SampleCase("tiled_rank3_d128", _Call(_sdpa()), (_values(2, 20, 128), _values(2, 11, 128), _values(2, 11, 96))),
    ]


@_seeded
def _rms_norm_samples() -> List[SampleCase]:
    return [
        SampleCase("module_7x13", torch.nn.RMSNorm(13), (_values(7, 13),)),
        # One decode row of a Llama's width: 4-vectors, a 256-wide workgroup (second: fp16 runs it too).
        SampleCase("no_weight_one_row_2048", _Call(lambda x: _F.rms_norm(x, (2048,), None, 1e-5)), (_values(1, 1, 2048),)),
        SampleCase("d1", _Call(lambda x: _F.rms_norm(x, (1,))), (_values(5, 1),)),
        SampleCase("d7_weight", torch.nn.RMSNorm(7, eps=1e-5), (_values(4, 7),)),
        SampleCase("d1031_weight", _Call(lambda x, w: _F.rms_norm(x, (1031,), w, 1e-5), _values(1031)), (_values(3, 1031),)),
        # 1025 4-vectors over a 512-wide workgroup: three strided passes.
        SampleCase("d4100_weight_rows", _Call(lambda x, w: _F.rms_norm(x, (4100,), w, 1e-5), _values(4100)), (_values(2, 4100),)),
        SampleCase("eps_none_no_weight", _Call(lambda x: _F.rms_norm(x, (33,))), (_values(2, 9, 33),)),
        SampleCase("two_dims_eps", torch.nn.RMSNorm([5, 7], eps=1e-3), (_values(3, 5, 7),)),
        SampleCase("random_weight_rank5", _Call(lambda x, w: _F.rms_norm(x, (3,), w, 1e-6), _values(3)), (_values(2, 1, 3, 2, 3),)),
        SampleCase("size1_rows_wide", torch.nn.RMSNorm(300), (_wide(1, 1, 300),)),
    ]


def _int8(*sizes: int) -> torch.Tensor:
    return torch.randint(-128, 128, sizes, dtype=torch.int8)


class _Q8Weighted(torch.nn.Module):
    """An int8 conv2d or linear: et_vk.vkd_q8ta_* called directly, or (pattern=True) as PT2E's
    dequantize -> float op -> quantize that the fusion pass rewrites into it."""

    def __init__(self, x: torch.Tensor, out_channels: int, kernel=None, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, relu=False, pattern=False):
        super().__init__()
        self.conv = kernel is not None
        in_channels = x.shape[1] if self.conv else x.shape[-1]
        shape = (out_channels, in_channels // groups, kernel, kernel) if self.conv else (out_channels, in_channels)
        self.register_buffer("weight", torch.randint(-127, 128, shape, dtype=torch.int8))
        self.register_buffer("scales", torch.rand(out_channels) * 0.01 + 0.002)
        self.register_buffer("zero_points", torch.zeros(out_channels, dtype=torch.int64))
        self.register_buffer("bias", torch.randn(out_channels) if bias else None)
        self.conv_args = [[stride] * 2, [padding] * 2, [dilation] * 2, groups]
        self.x_qparams = (0.05, 3)
        self.relu, self.pattern = relu, pattern
        # The output scale covers the float result of the sample input, so that few values clamp.
        self.out_qparams = (1.0, 0)
        reach = self._float(q8ta_ops._dequantize(x, *self.x_qparams)).abs().max().item()
        self.out_qparams = (max(reach, 1e-3) / 100.0, -5)

    def _float(self, x: torch.Tensor) -> torch.Tensor:
        weight = q8ta_ops._dequantize_weight(self.weight, self.scales, self.zero_points)
        if self.conv:
            return torch.nn.functional.conv2d(x, weight, self.bias, *self.conv_args)
        return torch.nn.functional.linear(x, weight, self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out_scale, out_zero_point = self.out_qparams
        if self.pattern:
            ops = torch.ops.quantized_decomposed
            xf = ops.dequantize_per_tensor(x, *self.x_qparams, -128, 127, torch.int8)
            weight = ops.dequantize_per_channel(self.weight, self.scales, self.zero_points, 0, -127, 127, torch.int8)
            if self.conv:
                y = torch.nn.functional.conv2d(xf, weight, self.bias, *self.conv_args)
            else:
                y = torch.nn.functional.linear(xf, weight, self.bias)
            if self.relu:
                y = torch.relu(y)
            return ops.quantize_per_tensor(y, out_scale, out_zero_point, -128, 127, torch.int8)
        out_min = out_zero_point if self.relu else -128
        weights = (self.weight, self.scales, self.zero_points, self.bias)
        if self.conv:
            return torch.ops.et_vk.vkd_q8ta_conv2d(x, *self.x_qparams, *weights, *self.conv_args,
                                                   out_scale, out_zero_point, out_min, 127)
        return torch.ops.et_vk.vkd_q8ta_linear(x, *self.x_qparams, *weights, out_scale, out_zero_point, out_min, 127)


def _q8_conv_cases(pattern: bool) -> List[SampleCase]:
    cases = [
        ("3x3_pad1_bias_batch2", _int8(2, 3, 7, 9), dict(out_channels=5, kernel=3, padding=1)),
        ("stride2_dilation2_relu", _int8(1, 4, 13, 11), dict(out_channels=7, kernel=3, stride=2, dilation=2, relu=True)),
        ("depthwise_3x3_s2_p1", _int8(2, 8, 9, 9), dict(out_channels=8, kernel=3, stride=2, padding=1, groups=8)),
        ("depthwise_multiplier2_relu", _int8(1, 4, 7, 5), dict(out_channels=8, kernel=3, groups=4, bias=False, relu=True)),
        ("pointwise_16_to_33", _int8(1, 16, 5, 7), dict(out_channels=33, kernel=1)),
        ("groups2_size1_input", _int8(1, 6, 1, 1), dict(out_channels=4, kernel=1, groups=2)),
    ]
    return [SampleCase(case_id, _Q8Weighted(x, pattern=pattern, **kw), (x,)) for case_id, x, kw in cases]


def _q8_linear_cases(pattern: bool) -> List[SampleCase]:
    cases = [
        ("2d_bias", _int8(3, 33), dict(out_channels=13)),
        ("3d_relu_no_bias", _int8(2, 5, 16), dict(out_channels=7, bias=False, relu=True)),
        ("1d", _int8(7), dict(out_channels=1)),
        ("4d", _int8(2, 1, 3, 9), dict(out_channels=5)),
    ]
    return [SampleCase(case_id, _Q8Weighted(x, pattern=pattern, **kw), (x,)) for case_id, x, kw in cases]


@_seeded
def _q8_pattern_samples() -> List[SampleCase]:
    return ([SampleCase("conv2d_" + c.case_id, c.module, c.inputs) for c in _q8_conv_cases(True)]
            + [SampleCase("linear_" + c.case_id, c.module, c.inputs) for c in _q8_linear_cases(True)])


@_seeded
def _quantize_samples() -> List[SampleCase]:
    ops = torch.ops.quantized_decomposed
    return [
        SampleCase("int8_clamps", _Call(lambda x: ops.quantize_per_tensor(x, 0.02, 3, -128, 127, torch.int8)),
                   (_values(2, 7, 13) * 2.0,)),
        SampleCase("narrow_range_rank5", _Call(lambda x: ops.quantize_per_tensor(x, 0.1, -4, -100, 100, torch.int8)),
                   (_wide(1, 3, 1, 5, 2),)),
        # Exact halves: round half to even, like torch.round.
        SampleCase("halves", _Call(lambda x: ops.quantize_per_tensor(x, 0.5, 0, -128, 127, torch.int8)),
                   (torch.arange(-9, 10, dtype=torch.float32) * 0.25,)),
    ]


@_seeded
def _dequantize_samples() -> List[SampleCase]:
    ops = torch.ops.quantized_decomposed
    return [
        SampleCase("int8", _Call(lambda x: ops.dequantize_per_tensor(x, 0.05, -7, -128, 127, torch.int8)),
                   (_int8(3, 33),)),
        SampleCase("rank4_zp0", _Call(lambda x: ops.dequantize_per_tensor(x, 0.003, 0, -128, 127, torch.int8)),
                   (_int8(2, 1, 5, 7),)),
    ]


class _Q8Add(torch.nn.Module):
    def __init__(self, relu: bool):
        super().__init__()
        self.relu = relu

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.ops.et_vk.vkd_q8ta_add(a, 0.05, 3, b, 0.02, -10, 0.08, -5, -5 if self.relu else -128, 127)


@_seeded
def _q8_conv2d_samples() -> List[SampleCase]:
    return _q8_conv_cases(False)


@_seeded
def _q8_linear_samples() -> List[SampleCase]:
    return _q8_linear_cases(False)


@_seeded
def _q8_add_samples() -> List[SampleCase]:
    return [
        SampleCase("same_shape", _Q8Add(False), (_int8(2, 3, 7, 5), _int8(2, 3, 7, 5))),
        SampleCase("relu_broadcast", _Q8Add(True), (_int8(2, 3, 7, 5), _int8(3, 1, 5))),
        SampleCase("rank1_size1", _Q8Add(True), (_int8(13), _int8(1))),
    ]


class _GGUFLinearCase(torch.nn.Module):
    def __init__(self, fmt: str, n: int, k: int, bias: bool):
        super().__init__()
        ggml_type = _gguf.FORMATS_BY_NAME[fmt].ggml_type
        self.linear = _gguf.GGUFLinear(_gguf.random_blocks(ggml_type, n, k).reshape(-1), ggml_type, n, k,
                                       torch.randn(n) if bias else None)

    def forward(self, x):
        return self.linear(x)


@_seeded
def _linear_gguf_samples() -> List[SampleCase]:
    # (format, x sizes, N, bias): M <= 4 takes the GEMV path, larger M the tiled one;
    # odd N; K a multiple of the block size (32, or 256 for the K-quants).
    shapes = [
        ("Q4_0", (1, 64), 13, False), ("Q4_0", (2, 19, 96), 33, True),
        ("Q4_1", (1, 96), 13, True), ("Q4_1", (2, 19, 64), 33, False),
        ("Q8_0", (3, 32), 7, True), ("Q8_0", (37, 160), 45, False),
        ("Q4_K", (1, 1, 512), 13, False), ("Q4_K", (33, 256), 35, True),
        ("Q6_K", (4, 256), 9, True), ("Q6_K", (2, 17, 512), 33, False),
    ]
    return [
        SampleCase(f"{fmt}_x{'x'.join(map(str, sizes))}_n{n}" + ("_bias" if bias else ""),
                   _GGUFLinearCase(fmt, n, sizes[-1], bias), (torch.randn(*sizes),))
        for fmt, sizes, n, bias in shapes
    ]


class _GGUFEmbeddingCase(torch.nn.Module):
    def __init__(self, fmt: str, rows: int, dim: int):
        super().__init__()
        ggml_type = _gguf.FORMATS_BY_NAME[fmt].ggml_type
        self.embedding = _gguf.GGUFEmbedding.from_blocks(_gguf.random_blocks(ggml_type, rows, dim), ggml_type,
                                                         rows, dim)

    def forward(self, indices):
        return self.embedding(indices)


@_seeded
def _embedding_gguf_samples() -> List[SampleCase]:
    # (format, rows, dim, index sizes): odd row counts, int64 and int32 indices, repeats.
    shapes = [("Q8_0", 37, 96, (2, 5)), ("Q4_0", 13, 32, (7,)), ("Q4_1", 21, 160, (1, 3)),
              ("Q4_K", 5, 256, (4,)), ("Q6_K", 9, 512, (2, 2))]
    cases = []
    for fmt, rows, dim, sizes in shapes:
        indices = torch.randint(0, rows, sizes)
        cases.append(SampleCase(f"{fmt}_{rows}x{dim}_i{'x'.join(map(str, sizes))}",
                                _GGUFEmbeddingCase(fmt, rows, dim), (indices,)))
    cases.append(SampleCase("Q8_0_int32_indices", _GGUFEmbeddingCase("Q8_0", 11, 64),
                            (torch.tensor([[10, 0, 10]], dtype=torch.int32),)))
    return cases


class _WheelGGUFCase(torch.nn.Module):
    """A linear (or `x @ weight.t()`, `addmm(bias, x, weight.t())`) or an embedding on the executorch wheel's
    ExportableGGUFTensor."""

    def __init__(self, kind: str, fmt: str, n: int, k: int, bias: bool = False):
        super().__init__()
        from gguf_files import wheel_gguf_weight

        self.kind = kind
        self.weight = wheel_gguf_weight(_gguf.random_blocks(_gguf.FORMATS_BY_NAME[fmt].ggml_type, n, k), fmt.lower())
        self.bias = torch.nn.Parameter(torch.randn(n), requires_grad=False) if bias else None

    def forward(self, x):
        if self.kind == "embedding":
            return torch.nn.functional.embedding(x, self.weight)
        if self.kind == "transposed":
            return x @ self.weight.t()
        if self.kind == "addmm":
            return torch.addmm(self.bias, x, self.weight.t())
        return torch.nn.functional.linear(x, self.weight, self.bias)


@_seeded
def _wheel_gguf_samples() -> List[SampleCase]:
    cases = [("linear", "Q4_K", (1, 256), 13, True), ("linear", "Q6_K", (2, 5, 512), 33, False),
             ("transposed", "Q4_K", (3, 256), 7, False), ("transposed", "Q6_K", (2, 2, 256), 9, False),
             ("addmm", "Q6_K", (5, 256), 11, True)]
    samples = [SampleCase(f"{kind}_{fmt}_x{'x'.join(map(str, sizes))}_n{n}" + ("_bias" if bias else ""),
                          _WheelGGUFCase(kind, fmt, n, sizes[-1], bias), (torch.randn(*sizes),))
               for kind, fmt, sizes, n, bias in cases]
    return samples + [
        SampleCase("embedding_Q6_K_11x256", _WheelGGUFCase("embedding", "Q6_K", 11, 256),
                   (torch.tensor([[10, 0, 3], [3, 3, 1]]),)),
        SampleCase("embedding_Q4_K_5x512_int32", _WheelGGUFCase("embedding", "Q4_K", 5, 512),
                   (torch.tensor([4, 0, 2], dtype=torch.int32),)),
    ]


# Entry name -> its sample cases, in registry order; every entry has at least one case.
SAMPLES: Dict[str, Callable[[], List[SampleCase]]] = {
    "add": _add_samples,
    "sub": _sub_samples,
    "mul": _mul_samples,
    "div": _div_samples,
    "relu": _seeded(lambda: _unary_cases(torch.relu) + _int_cases(torch.relu)
                    + [SampleCase("edge_values_9x11", _Call(torch.relu), (_edge(9, 11),))]),  # NaN stays NaN
    "sigmoid": _seeded(lambda: _unary_cases(torch.sigmoid) + [_nan_case(torch.sigmoid)]),
    "tanh": _seeded(lambda: _unary_cases(torch.tanh) + [_nan_case(torch.tanh)]),
    "gelu": _gelu_samples,
    "clamp": lambda: _clamp_samples() + _clamp_int_samples(),
    "hardtanh": _hardtanh_samples,
    "mm": _mm_samples,
    "addmm": _addmm_samples,
    "linear": _linear_samples,
    "linear_act": _linear_act_samples,
    "ln_linear": _ln_linear_samples,
    "bmm": _bmm_samples,
    "softmax": _seeded(lambda: _softmax_cases(torch.softmax) + [_nan_case(lambda x: torch.softmax(x, -1))]),
    "log_softmax": _seeded(lambda: _softmax_cases(torch.log_softmax)),
    "view_copy": _view_samples,
    "permute_copy": _permute_samples,
    "unsqueeze_copy": _unsqueeze_samples,
    "squeeze_copy": _squeeze_samples,
    "select_copy": _select_samples,
    "slice_copy": _slice_samples,
    "expand_copy": _expand_samples,
    "native_layer_norm": _layer_norm_samples,
    "clone": _clone_samples,
    "to_copy": lambda: _to_copy_samples() + _convert_samples(),
    "alias_copy": _alias_copy_samples,
    "div_rounding": _div_mode_samples,
    "pow": _pow_samples,
    "minimum": _seeded(lambda: _minmax_cases(torch.minimum)),
    "maximum": _seeded(lambda: _minmax_cases(torch.maximum)),
    "where": _where_samples,
    "comparison": _seeded(lambda: [case for fn in (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge)
                                   for case in _named(fn, _compare_cases(fn))
                                   if fn in (torch.eq, torch.lt) or "scalar" in case.case_id]),
    "logical": _seeded(lambda: [case for fn in (torch.logical_and, torch.logical_or, torch.logical_xor)
                                for case in _named(fn, _logical_cases(fn))]),
    "logical_not": _not_samples(torch.logical_not, floats=True),
    "bitwise": _seeded(lambda: [case for fn in (torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor)
                                for case in _named(fn, _bitwise_cases(fn))]),
    "bitwise_not": _not_samples(torch.bitwise_not, floats=False),
    "neg": _seeded(lambda: _math_cases(torch.neg) + _int_cases(torch.neg)),
    "abs": _seeded(lambda: _math_cases(torch.abs) + _int_cases(torch.abs)),
    "sign": _seeded(lambda: _math_cases(torch.sign) + _int_cases(torch.sign)),
    "exp": _seeded(lambda: _math_cases(torch.exp)),
    "log": _seeded(lambda: _math_cases(torch.log, _positive)),
    "log10": _seeded(lambda: _math_cases(torch.log10, _positive)),
    "sqrt": _seeded(lambda: _math_cases(torch.sqrt, _positive)),
    "rsqrt": _seeded(lambda: _math_cases(torch.rsqrt, _positive)),
    "reciprocal": _seeded(lambda: _math_cases(torch.reciprocal, _nonzero)),
    "sin": _seeded(lambda: _math_cases(torch.sin)),
    "cos": _seeded(lambda: _math_cases(torch.cos)),
    "round": _seeded(lambda: _math_cases(torch.round) + [
                 SampleCase("halves", _Call(torch.round), (torch.arange(-10, 11) * 0.5,))]),
    "erf": _seeded(lambda: _math_cases(torch.erf)),
    "silu": _seeded(lambda: _math_cases(torch.nn.functional.silu)),
    "hardswish": _seeded(lambda: _math_cases(torch.nn.functional.hardswish)),
    "hardsigmoid": _seeded(lambda: _math_cases(torch.nn.functional.hardsigmoid)),
    "leaky_relu": _seeded(lambda: _math_cases(torch.nn.functional.leaky_relu)
                          + [SampleCase("slope_0.2", _Call(lambda x: torch.nn.functional.leaky_relu(x, 0.2)),
                                        (_values(7, 13),))]),
    "softplus": _seeded(lambda: _math_cases(torch.nn.functional.softplus)
                        + [SampleCase("beta2_threshold5",
                                      _Call(lambda x: torch.nn.functional.softplus(x, 2.0, 5.0)), (_wide(7, 13),))]),
    "elu": _seeded(lambda: _math_cases(torch.nn.functional.elu)
                   + [SampleCase("alpha_scale_input_scale",
                                 _Call(lambda x: torch.ops.aten.elu(x, 0.5, 1.5, 2.0)), (_values(7, 13),))]),
    "sum": _sum_samples,
    "mean": _mean_samples,
    "amax": _minmax_reduce_samples(torch.amax),
    "amin": _minmax_reduce_samples(torch.amin),
    "argmax": _arg_reduce_samples(torch.argmax),
    "argmin": _arg_reduce_samples(torch.argmin),
    "max_dim": _max_dim_samples(torch.max),
    "min_dim": _max_dim_samples(torch.min),
    "var": _var_samples,
    "cat": _cat_samples,
    "convolution": _convolution_samples,
    "conv2d_clamp": _conv2d_clamp_samples,
    "max_pool2d_with_indices": _max_pool2d_samples,
    "avg_pool2d": _avg_pool2d_samples,
    "adaptive_avg_pool2d": _adaptive_avg_pool2d_samples,
    "batch_norm_inference": _batch_norm_samples,
    "native_group_norm": _group_norm_samples,
    "upsample_nearest2d": _upsample_nearest2d_samples,
    "upsample_bilinear2d": _upsample_bilinear2d_samples,
    "pixel_shuffle": _pixel_shuffle_samples,
    "pixel_unshuffle": _pixel_unshuffle_samples,
    "grid_sampler_2d": _grid_sampler_samples,
    "split_with_sizes_copy": _split_samples,
    "repeat": _repeat_samples,
    "flip": _flip_samples,
    "constant_pad_nd": _pad_samples,
    "roll": _roll_samples,
    "unfold_copy": _unfold_samples,
    "sdpa_kv_cache": _sdpa_kv_cache_samples,
    "sdpa_qkv": _sdpa_qkv_samples,
    "sdpa_bthd": _sdpa_bthd_samples,
    "index_select": _index_select_samples,
    "index_put": _index_put_samples,
    "rope": _rope_samples,
    "rope_kv_update": _rope_kv_update_samples,
    "sdpa_rope_kv": _sdpa_rope_kv_samples,
    "gather": _gather_samples,
    "index": _index_tensor_samples,
    "embedding": _embedding_samples,
    "full": _full_samples,
    "full_like": _full_like_samples,
    "arange": _arange_samples,
    "scalar_tensor": _scalar_tensor_samples,
    "scaled_dot_product_attention": _sdpa_samples,
    "rms_norm": _rms_norm_samples,
    "quantize_per_tensor": _quantize_samples,
    "dequantize_per_tensor": _dequantize_samples,
    "dequantize_per_channel": _q8_pattern_samples,
    "vkd_q8ta_conv2d": _q8_conv2d_samples,
    "vkd_q8ta_linear": _q8_linear_samples,
    "vkd_q8ta_add": _q8_add_samples,
    "torchao_dequantize_affine": lambda: (_cases(torchao_samples.linear_flows(False))
                                          + _cases(torchao_samples.embedding_flows())),
    "torchao_quantize_affine": lambda: _cases(torchao_samples.linear_flows(True))[:4],
    "torchao_choose_qparams_affine": lambda: _cases(torchao_samples.linear_flows(True))[4:],
    "vkd_linear_qw": lambda: _fused_op_cases("vkd_linear_qw"),
    "vkd_linear_qw_fused": lambda: [SampleCase(*case) for case in torchao_samples.fused_linears_cases()],
    "vkd_linear_dq8a_qw": lambda: _fused_op_cases("vkd_linear_dq8a_qw"),
    "vkd_embedding_qw": lambda: _fused_op_cases("vkd_embedding_qw"),
    "linear_gguf": _linear_gguf_samples,
    "embedding_gguf": _embedding_gguf_samples,
    "torchao_dequantize_gguf": _wheel_gguf_samples,
}
