"""The benchmark cases: what is measured, how big, and how to count its work.

Plain torch only (no executorch): the bundle's PyTorch side imports this on the
GPU machine too. Each case builds a module and inputs; `work` says what one run
moves or computes, so times become GB/s or TFLOP/s.
"""
import torch
from torch import nn


class Add(nn.Module):
    def forward(self, a, b):
        return a + b


class MatMul(nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class LayerNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        torch.manual_seed(0)
        self.norm = nn.LayerNorm(n)

    def forward(self, x):
        return self.norm(x)


class Conv3x3(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(64, 64, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


class ConvF16(nn.Module):
    """A convolution: .half() for the cooperative-matrix kernel, float32 as is for the tiled float32 one."""

    def __init__(self, c, oc, k, stride=1, padding=0):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(c, oc, k, stride=stride, padding=padding)

    def forward(self, x):
        return self.conv(x)


def _f32(*shape):
    torch.manual_seed(1)
    return torch.randn(*shape)


def _f16(*shape):
    return _f32(*shape).half()


M64 = 64 * 1024 * 1024

# name -> (factory returning (module, inputs), unit, amount of work per run)
MICRO = {
    "add_64M_fp32": (lambda: (Add(), (_f32(M64), _f32(M64))), "GB/s", 3 * 4 * M64),
    "mm_fp32_1024": (lambda: (MatMul(), (_f32(1024, 1024), _f32(1024, 1024))), "TFLOP/s", 2 * 1024**3),
    "mm_fp32_4096": (lambda: (MatMul(), (_f32(4096, 4096), _f32(4096, 4096))), "TFLOP/s", 2 * 4096**3),
    # Float32 tiled matmul: where the tiled kernel starts to pay; odd sizes (no multiple of the tile, K and N not of 4: the kernel's scalar path).
    "mm_fp32_2048": (lambda: (MatMul(), (_f32(2048, 2048), _f32(2048, 2048))), "TFLOP/s", 2 * 2048**3),
    "mm_fp32_4095x1023x4097": (lambda: (MatMul(), (_f32(4095, 1023), _f32(1023, 4097))), "TFLOP/s",
                               2 * 4095 * 1023 * 4097),
    # fp16 storage, float accumulation (no cooperative-matrix kernel yet); PyTorch uses tensor cores.
    "mm_fp16_4096": (lambda: (MatMul(), (_f16(4096, 4096), _f16(4096, 4096))), "TFLOP/s", 2 * 4096**3),
    "softmax_4096x4096": (lambda: (Softmax(), (_f32(4096, 4096),)), "GB/s", 2 * 4 * 4096 * 4096),
    "layer_norm_4096x4096": (lambda: (LayerNorm(4096), (_f32(4096, 4096),)), "GB/s", 2 * 4 * 4096 * 4096),
    "conv3x3_64c_56_b1": (lambda: (Conv3x3(), (_f32(1, 64, 56, 56),)), "TFLOP/s", 2 * 64 * 64 * 9 * 56 * 56),
    # Float16 convolutions (cooperative matrices), a ResNet deep layer at batch 1 and odd channels and pixels.
    "conv3x3_fp16_256c_14_b1": (lambda: (ConvF16(256, 256, 3, padding=1).half(), (_f16(1, 256, 14, 14),)),
                                "TFLOP/s", 2 * 256 * 256 * 9 * 14 * 14),
    # ResNet-18's deepest 3x3 layers at batch 1 (few output tiles, long K).
    "conv3x3_fp16_512c_7_b1": (lambda: (ConvF16(512, 512, 3, padding=1).half(), (_f16(1, 512, 7, 7),)),
                               "TFLOP/s", 2 * 512 * 512 * 9 * 7 * 7),
    "conv3x3_fp16_128c_28_b1": (lambda: (ConvF16(128, 128, 3, padding=1).half(), (_f16(1, 128, 28, 28),)),
                                "TFLOP/s", 2 * 128 * 128 * 9 * 28 * 28),
    "conv3x3_fp16_odd_s2_b2": (lambda: (ConvF16(45, 83, 3, stride=2, padding=1).half(), (_f16(2, 45, 31, 29),)),
                               "TFLOP/s", 2 * 2 * 83 * 45 * 9 * 16 * 15),
    "conv1x1_fp16_1024to256_14_b1": (lambda: (ConvF16(1024, 256, 1).half(), (_f16(1, 1024, 14, 14),)),
                                     "TFLOP/s", 2 * 1024 * 256 * 14 * 14),
    "conv3x3_64c_56_b32": (lambda: (Conv3x3(), (_f32(32, 64, 56, 56),)), "TFLOP/s", 32 * 2 * 64 * 64 * 9 * 56 * 56),
    # Float32 convolutions (tiled kernel) at batch 32 (ResNet's deeper 3x3 layers) and odd
    # channels and pixels with stride 2 (the tiled kernel's edges, for max_rel_err).
    "conv3x3_128c_28_b32": (lambda: (ConvF16(128, 128, 3, padding=1), (_f32(32, 128, 28, 28),)), "TFLOP/s",
                            32 * 2 * 128 * 128 * 9 * 28 * 28),
    "conv3x3_128c_28_b8": (lambda: (ConvF16(128, 128, 3, padding=1), (_f32(8, 128, 28, 28),)), "TFLOP/s",
                           8 * 2 * 128 * 128 * 9 * 28 * 28),
    "conv3x3_256c_14_b32": (lambda: (ConvF16(256, 256, 3, padding=1), (_f32(32, 256, 14, 14),)), "TFLOP/s",
                            32 * 2 * 256 * 256 * 9 * 14 * 14),
    "conv3x3_fp32_odd_s2_b64": (lambda: (ConvF16(45, 83, 3, stride=2, padding=1), (_f32(64, 45, 63, 61),)),
                                "TFLOP/s", 64 * 2 * 83 * 45 * 9 * 32 * 31),
}


# Cooperative-matrix matmul: odd-shape fp16 products (not multiples of 16 or of any tile), for max_rel_err
# of a cooperative-matrix matmul against PyTorch CUDA fp16 (edges, odd K, bias, batch).
class BatchMatMul(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


class LinearBias(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(k, n)

    def forward(self, x):
        return self.linear(x)


def _linear_bias_f16(k, n):
    return LinearBias(k, n).half()


MICRO.update({
    "mm_fp16_1000x777x1500": (lambda: (MatMul(), (_f16(1000, 777), _f16(777, 1500))), "TFLOP/s",
                              2 * 1000 * 777 * 1500),
    "linear_fp16_3x77x1000_1234": (lambda: (_linear_bias_f16(1000, 1234), (_f16(3, 77, 1000),)), "TFLOP/s",
                                   2 * 3 * 77 * 1000 * 1234),
    "bmm_fp16_3x129x65x257": (lambda: (BatchMatMul(), (_f16(3, 129, 65), _f16(3, 65, 257))), "TFLOP/s",
                              2 * 3 * 129 * 65 * 257),
    # K and N multiples of 8 (the cooperative-matrix-2 kernel's condition), M = 231 odd, bias.
    "linear_fp16_3x77x1024_1232": (lambda: (_linear_bias_f16(1024, 1232), (_f16(3, 77, 1024),)), "TFLOP/s",
                                   2 * 3 * 77 * 1024 * 1232),
    "bmm_fp16_3x1000x1024x1032": (lambda: (BatchMatMul(), (_f16(3, 1000, 1024), _f16(3, 1024, 1032))), "TFLOP/s",
                                  2 * 3 * 1000 * 1024 * 1032),
})


# Split-K float32 matmul: mid-size float32 products that fill the GPU only with split-K or smaller
# tiles (sweep_splitk.sh): BERT-base-like feed-forward linears with bias (768 tokens,
# 768 -> 3072 and 3072 -> 768), a CLIP-text-like batch-1 projection (77 tokens, 1024 -> 1024).
MICRO.update({
    "linear_fp32_768x768_3072": (lambda: (LinearBias(768, 3072), (_f32(768, 768),)), "TFLOP/s",
                                 2 * 768 * 768 * 3072),
    "linear_fp32_768x3072_768": (lambda: (LinearBias(3072, 768), (_f32(768, 3072),)), "TFLOP/s",
                                 2 * 768 * 3072 * 768),
    "linear_fp32_77x1024_1024": (lambda: (LinearBias(1024, 1024), (_f32(77, 1024),)), "TFLOP/s",
                                 2 * 77 * 1024 * 1024),
})


class PeriodicLinear(nn.Module):
    """A linear without bias whose weight rows repeat every `period` rows (random within a
    period): its quantized .pte compresses (xz) about period/n-fold, so an 8192 -> 28672
    4-bit linear (146 MB as stored) travels in a bundle under 64 MiB. The GEMV's speed does
    not depend on the values; the period (96, not a power of two) keeps row-offset errors visible."""

    def __init__(self, k, n, period=96):
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(k, n, bias=False)
        with torch.no_grad():
            block = self.linear.weight[:period].clone()
            self.linear.weight.copy_(block.repeat((n + period - 1) // period, 1)[:n])

    def forward(self, x):
        return self.linear(x)


# Quantized-weight linears (4 bits, groups of 32, symmetric: no zero points). make_bundle.py
# quantizes the float module with torchao (flow "weight_only": IntxWeightOnlyConfig; "8da":
# Int8DynamicActivationIntxWeightConfig) for our side, and stores torchao's eager output (PyTorch
# on the dequantized weights, float32 on the CPU) as the reference of the error check.
# PyTorch CUDA's timing runs the float module in fp16 (cuBLAS; the values do not change its speed).
# name -> (factory of the float module and inputs, flow, bits, group size)
QUANT = {
    "linear_int4_g32_4096x4096_m1": (lambda: (PeriodicLinear(4096, 4096), (_f32(1, 4096),)), "weight_only", 4, 32),
    "linear_8da4w_g32_4096x4096_m1": (lambda: (PeriodicLinear(4096, 4096), (_f32(1, 4096),)), "8da", 4, 32),
    # Decode shapes of a Llama MLP (up and down projections) and a 4-token step.
    "linear_int4_g32_4096x11008_m1": (lambda: (PeriodicLinear(4096, 11008), (_f32(1, 4096),)), "weight_only", 4, 32),
    "linear_int4_g32_11008x4096_m1": (lambda: (PeriodicLinear(11008, 4096), (_f32(1, 11008),)), "weight_only", 4, 32),
    "linear_int4_g32_4096x4096_m4": (lambda: (PeriodicLinear(4096, 4096), (_f32(4, 4096),)), "weight_only", 4, 32),
    "linear_8da4w_g32_4096x4096_m4": (lambda: (PeriodicLinear(4096, 4096), (_f32(4, 4096),)), "8da", 4, 32),
    # The TinyLlama-shape decode products (q/k/v and w1/w3 each as one weight: the fused ops' N),
    # to time the one-row kernel alone on them (sweep_gemv.sh).
    "linear_int4_g32_2048x2560_m1": (lambda: (PeriodicLinear(2048, 2560), (_f32(1, 2048),)), "weight_only", 4, 32),
    "linear_int4_g32_2048x2048_m1": (lambda: (PeriodicLinear(2048, 2048), (_f32(1, 2048),)), "weight_only", 4, 32),
    "linear_int4_g32_2048x11264_m1": (lambda: (PeriodicLinear(2048, 11264), (_f32(1, 2048),)), "weight_only", 4, 32),
    "linear_int4_g32_5632x2048_m1": (lambda: (PeriodicLinear(5632, 2048), (_f32(1, 5632),)), "weight_only", 4, 32),
    # The 4-bit GEMV bar of issue 16: weights far larger than the H100's 50 MB L2 (117 MB of
    # 4-bit values), M = 1, timed with the L2 flushed: GB/s of weights against HBM3's ~3350.
    "linear_int4_g32_8192x28672_m1": (lambda: (PeriodicLinear(8192, 28672), (_f32(1, 8192),)), "weight_only", 4, 32),
}
GEMV_BAR_CASE = "linear_int4_g32_8192x28672_m1"
GEMV_BAR_GBS = 2000


def work_rate(unit, work, seconds):
    return work / seconds / (1e9 if unit == "GB/s" else 1e12)


def round_weights_bf16(module):
    """Rounds every float parameter and buffer to a bfloat16-representable float32
    (the low 16 bits zero), in place. The model still runs in float32 with the
    same cost; its .pte then compresses to about half (xz), which lets ResNet-50
    (a 102 MB .pte) travel in a bundle under 64 MiB. Both sides of the comparison
    use the rounded weights."""
    import torch
    with torch.no_grad():
        for t in list(module.parameters()) + list(module.buffers()):
            if t.is_floating_point():
                t.copy_(t.to(torch.bfloat16).to(t.dtype))
    return module


def make_periodic(module, period=96):
    """Makes every linear's and embedding's weight rows repeat every `period` rows, in place
    (random within a period, as PeriodicLinear): a whole Llama's quantized .pte then compresses
    (xz) to a bundle's size. Decode speed does not depend on the values."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                w = m.weight
                w.copy_(w[:period].repeat((w.shape[0] + period - 1) // period, 1)[: w.shape[0]])
    return module


# The per-execute floor (issue 19): a one-op program, add of two 16-element tensors, timed
# whole-call from the host (ours: inputs in, execute, output out), against PyTorch's same add.
FLOOR_CASE = "add16"
FLOOR = {FLOOR_CASE: lambda: (Add(), tuple(_f32(2, 16)))}  # two different rows: a swapped input shows

# The full table (make_bundle.py --full-table): every micro case, the quantized linears of the
# 4-bit bars, every model fp32 and fp16, and the floor.
FULL_TABLE_QUANT = ["linear_int4_g32_4096x4096_m1", "linear_8da4w_g32_4096x4096_m1", "linear_int4_g32_4096x4096_m4",
                    "linear_8da4w_g32_4096x4096_m4", "linear_int4_g32_4096x11008_m1", "linear_int4_g32_11008x4096_m1",
                    GEMV_BAR_CASE]
BAR_MODELS = ["mlp", "transformer_block", "llama", "mobilenet_v2", "resnet18", "resnet50", "vit_tiny", "unet"]

# Issue 19's bars. Models: ours / best of (CUDA graph, torch.compile) at most MODEL_BAR, for each
# of BAR_MODELS fp32 and fp16. Floor: at most FLOOR_BAR_US. Kernels: PyTorch time / ours (warm;
# flushed shown beside) at least the bar: (case, bar, PyTorch's library).
MODEL_BAR = 1.0
FLOOR_BAR_US = 15.0
KERNEL_BARS = [("mm_fp16_4096", 0.5, "cuBLAS"), ("bmm_fp16_3x1000x1024x1032", 0.8, "cuBLAS"),
               ("linear_fp16_3x77x1000_1234", 0.8, "cuBLAS"), ("conv3x3_128c_28_b32", 0.8, "cuDNN")]
