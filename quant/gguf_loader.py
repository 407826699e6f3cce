"""Loading GGUF tensors into a torch model: quantized linear and embedding
weights stay in their GGUF blocks (GGUFLinear, GGUFEmbedding; a tensor that is
both, tied embeddings, is stored once), everything else becomes float.

The PyPI `gguf` package comes from pypi_gguf.load() (vkdelegate's own gguf.py
shadows it where the repo root is on sys.path), when a file is read.
"""
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch import nn

from . import pypi_gguf
from .gguf_file import GGUFFile
from .gguf_linear import FORMATS, FORMATS_BY_NAME, GGUFEmbedding, GGUFLinear, dequantize, shape_error

# A name map sends a GGUF tensor name to "module.path.param" of the model, or to
# ("module.path.param", rows) where rows reorders the tensor's rows (output
# features) on the way in, or to a list of those (one tensor, several places),
# or to None to leave the tensor out.
Target = Union[None, str, Tuple[str, torch.Tensor], List[Union[str, Tuple[str, torch.Tensor]]]]
NameMap = Union[Mapping[str, Target], Callable[[str], Target]]

_FLOAT_TYPES = ("F32", "F16", "BF16")


@dataclass
class GGUFLoadReport:
    quantized: Dict[str, str] = field(default_factory=dict)  # module path -> block format
    floats: List[str] = field(default_factory=list)  # parameters loaded as float
    dequantized: List[str] = field(default_factory=list)  # quantized tensors turned into float
    skipped: List[str] = field(default_factory=list)  # GGUF tensors the name map left out


def _reader(gguf_file):
    """A GGUFFile of a path; a GGUFFile or gguf.GGUFReader as it is."""
    gguf = pypi_gguf.load()

    if isinstance(gguf_file, (GGUFFile, gguf.GGUFReader)):
        return gguf_file
    return GGUFFile(gguf_file)


def _type_name(tensor) -> str:
    return tensor.tensor_type.name


def _float_array(tensor) -> np.ndarray:
    """F32 / F16 / BF16 data of a reader tensor as float32, in torch order (shape reversed from ne)."""
    gguf = pypi_gguf.load()

    data = np.asarray(tensor.data)
    shape = tuple(int(size) for size in reversed(tensor.shape))
    if _type_name(tensor) == "BF16":
        data = gguf.quants.dequantize(data, gguf.GGMLQuantizationType.BF16)
    return np.asarray(data, dtype=np.float32).reshape(shape)


def _blocks(tensor) -> Tuple[torch.Tensor, int, int]:
    """(raw blocks [n, row bytes] uint8, n, k) of a quantized 2-D reader tensor."""
    ne = [int(size) for size in tensor.shape]
    if len(ne) != 2:
        raise ValueError(f"GGUF tensor {tensor.name} ({_type_name(tensor)}): quantized tensors must be 2-D, "
                         f"got ne={ne}")
    k, n = ne
    error = shape_error(FORMATS_BY_NAME[_type_name(tensor)].ggml_type, n, k)
    if error:
        raise ValueError(f"GGUF tensor {tensor.name} ({_type_name(tensor)}): {error}")
    data = np.ascontiguousarray(np.asarray(tensor.data, dtype=np.uint8)).reshape(n, -1)
    return torch.from_numpy(data.copy()), n, k


def unsupported_type_error(name: str, type_name: str) -> ValueError:
    supported = ", ".join(list(FORMATS_BY_NAME) + list(_FLOAT_TYPES))
    return ValueError(f"GGUF tensor {name} has type {type_name}, which vkdelegate.gguf does not read "
                      f"(supported: {supported})")


def _targets(name_map: NameMap, name: str) -> List[Tuple[str, Optional[torch.Tensor]]]:
    """(parameter path, rows or None) for each place the tensor `name` goes; [] to leave it out."""
    target = name_map(name) if callable(name_map) else name_map.get(name)
    if target is None:
        return []
    result = []
    for item in target if isinstance(target, list) else [target]:
        if isinstance(item, tuple):
            path, rows = item
            result.append((path, torch.as_tensor(rows, dtype=torch.long)))
        else:
            result.append((item, None))
    return result


def load_gguf_linears(model: nn.Module, gguf_file, name_map: Optional[NameMap] = None,
                      strict: bool = True, quantized_embeddings: bool = True) -> GGUFLoadReport:
    """Puts the tensors of a GGUF file (a path, a GGUFFile or a gguf.GGUFReader) into `model`, in place.

    A quantized (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K) weight of an nn.Linear replaces that
    linear with a GGUFLinear holding the raw blocks (its forward is
    et_vk.vkd_linear_gguf; K must be a multiple of 32, or of 256 for the
    K-quants). The linear's bias comes from its own GGUF tensor if the map names one.
    A quantized weight of an nn.Embedding replaces it with a GGUFEmbedding
    (et_vk.vkd_embedding_gguf; quantized_embeddings=False dequantizes it into the
    nn.Embedding instead). One tensor mapped to an embedding and a linear (tied
    embeddings) keeps one copy of its blocks, shared by both modules.
    Other tensors (norms; F32, F16, BF16, or quantized ones, then dequantized)
    are copied into the model's parameters as float. Any other GGUF type (Q5_1,
    IQ*, ...), or a quantized tensor of a shape its blocks cannot tile, raises,
    naming the tensor and its type.

    name_map: GGUF tensor name -> target (see NameMap); default
    `llama_cpp_names(model, gguf_file)`, for examples.models.llama.Llama.
    strict: raise if a parameter of the model gets nothing from the file.
    """
    reader = _reader(gguf_file)
    if name_map is None:
        name_map = llama_cpp_names(model, reader)
    expected = [name for name, _ in model.named_parameters()]
    loaded = set()
    report = GGUFLoadReport()
    # Biases arrive as tensors of their own: load floats after the linears are replaced.
    pending: List[Tuple[str, object, Optional[torch.Tensor]]] = []
    for tensor in reader.tensors:
        targets = _targets(name_map, tensor.name)
        if not targets:
            report.skipped.append(tensor.name)
            continue
        type_name = _type_name(tensor)
        if type_name not in FORMATS_BY_NAME and type_name not in _FLOAT_TYPES:
            raise unsupported_type_error(tensor.name, type_name)
        words = None  # the tensor's packed blocks, once for every place it goes unpermuted
        for path, rows in targets:
            module_path, _, param = path.rpartition(".")
            module = model.get_submodule(module_path) if module_path else model
            quantized = type_name in FORMATS_BY_NAME and module_path and param == "weight"
            if quantized and isinstance(module, nn.Linear):
                linear = _quantized_linear(tensor, module_path, module, rows)
                if rows is None:
                    if words is None:
                        words = linear.weight
                    linear.weight = words
                model.set_submodule(module_path, linear)
                report.quantized[module_path] = type_name
            elif quantized and quantized_embeddings and isinstance(module, nn.Embedding) and rows is None:
                embedding = _quantized_embedding(tensor, module_path, module, words)
                words = embedding.weight
                model.set_submodule(module_path, embedding)
                report.quantized[module_path] = type_name
            else:
                pending.append((path, tensor, rows))
            loaded.add(path)
    for path, tensor, rows in pending:
        _load_float(model, path, tensor, rows, report)
    _tie_embeddings(model)
    missing = [name for name in expected if name not in loaded]
    if strict and missing:
        raise ValueError(f"the GGUF file gives nothing for {', '.join(missing)} (wrong name map? "
                         "pass strict=False to keep their current values)")
    return report


def _quantized_linear(tensor, module_path: str, module: nn.Linear, rows: Optional[torch.Tensor]) -> GGUFLinear:
    blocks, n, k = _blocks(tensor)
    if (n, k) != (module.out_features, module.in_features):
        raise ValueError(f"GGUF tensor {tensor.name} ({_type_name(tensor)}) is [{n}, {k}] (out, in); {module_path} is "
                         f"[{module.out_features}, {module.in_features}]")
    if rows is not None:
        blocks = blocks[rows]  # whole rows of blocks: nothing re-quantized
    bias = None if module.bias is None else module.bias.detach()
    try:
        return GGUFLinear(blocks, FORMATS_BY_NAME[_type_name(tensor)].ggml_type, n, k, bias)
    except ValueError as error:
        raise ValueError(f"GGUF tensor {tensor.name} ({module_path}): {error}") from None


def _tie_embeddings(model: nn.Module) -> None:
    """A GGUFEmbedding whose words are a GGUFLinear's reads them from it (one tensor of state)."""
    linears = {id(m.weight): m for m in model.modules() if isinstance(m, GGUFLinear)}
    for module in model.modules():
        if isinstance(module, GGUFEmbedding) and module._tied is None and id(module.weight) in linears:
            module.tie_to(linears[id(module.weight)])


def _quantized_embedding(tensor, module_path: str, module: nn.Embedding, words) -> GGUFEmbedding:
    """A GGUFEmbedding of the tensor's blocks, or of `words` (the same blocks, already packed)."""
    ggml_type = FORMATS_BY_NAME[_type_name(tensor)].ggml_type
    if words is None:
        blocks, n, k = _blocks(tensor)
    else:
        k, n = (int(size) for size in tensor.shape)
    if (n, k) != (module.num_embeddings, module.embedding_dim):
        raise ValueError(f"GGUF tensor {tensor.name} ({_type_name(tensor)}) is [{n}, {k}]; {module_path} is "
                         f"[{module.num_embeddings}, {module.embedding_dim}]")
    if words is not None:
        return GGUFEmbedding(words, ggml_type, n, k)
    return GGUFEmbedding.from_blocks(blocks, ggml_type, n, k)


def _load_float(model: nn.Module, path: str, tensor, rows: Optional[torch.Tensor], report: GGUFLoadReport) -> None:
    type_name = _type_name(tensor)
    if type_name in FORMATS_BY_NAME:
        blocks, n, k = _blocks(tensor)
        values = dequantize(blocks, FORMATS_BY_NAME[type_name].ggml_type, n, k)
        report.dequantized.append(path)
    else:
        values = torch.from_numpy(_float_array(tensor).copy())
        report.floats.append(path)
    if rows is not None:
        values = values[rows]
    module_path, _, param = path.rpartition(".")
    module = model.get_submodule(module_path) if module_path else model
    current = getattr(module, param, None)
    if isinstance(module, GGUFLinear) and param == "bias":
        if values.shape != (module.out_features,):
            raise ValueError(f"GGUF tensor {tensor.name} has shape {tuple(values.shape)}; {path} needs "
                             f"({module.out_features},)")
        module.bias = values.to(torch.float32)
        return
    if not isinstance(current, torch.Tensor):
        raise ValueError(f"GGUF tensor {tensor.name} maps to {path}, which is not a parameter or buffer of the model")
    if tuple(current.shape) != tuple(values.shape):
        raise ValueError(f"GGUF tensor {tensor.name} has shape {tuple(values.shape)}; {path} is {tuple(current.shape)}")
    with torch.no_grad():
        current.copy_(values.to(current.dtype))


# ----------------------------------------------------------------------------
# llama.cpp's tensor names for examples.models.llama.Llama


def rope_rows(heads: int, head_dim: int) -> torch.Tensor:
    """Rows that undo llama.cpp's Q/K permutation: convert_hf_to_gguf.py interleaves
    each head's two rotary halves (GGML's adjacent-pair rope); our Llama rotates halves."""
    half = head_dim // 2
    rows = []
    for head in range(heads):
        for s in range(2):
            for i in range(half):
                rows.append(head * head_dim + 2 * i + s)
    return torch.tensor(rows, dtype=torch.long)


_LLAMA_LAYER_NAMES = {
    "attn_norm.weight": "attention_norm.weight",
    "attn_q.weight": "attention.wq.weight",
    "attn_k.weight": "attention.wk.weight",
    "attn_v.weight": "attention.wv.weight",
    "attn_output.weight": "attention.wo.weight",
    "ffn_norm.weight": "ffn_norm.weight",
    "ffn_gate.weight": "feed_forward.w1.weight",
    "ffn_down.weight": "feed_forward.w2.weight",
    "ffn_up.weight": "feed_forward.w3.weight",
}


def llama_cpp_names(model: nn.Module, gguf_file=None, permuted_qk: bool = True) -> Dict[str, Target]:
    """The name map from llama.cpp's GGUF names (`blk.N.attn_q.weight`, ...) to
    examples.models.llama.Llama (`layers.N.attention.wq.weight`, ...).

    permuted_qk: the file's attn_q / attn_k rows are in llama.cpp's rope order
    (as convert_hf_to_gguf.py writes LLaMA-architecture files); their rows are
    put back in rotate-half order. `rope_freqs.weight` is left out (the model
    makes its own rotary tables). gguf_file: if given and it has no
    output.weight (tied embeddings), token_embd.weight goes to the LM head too.
    """
    names: Dict[str, Target] = {
        "token_embd.weight": "tok_embeddings.weight",
        "output_norm.weight": "norm.weight",
        "output.weight": "output.weight",
    }
    for index, layer in enumerate(model.layers):
        for gguf_name, ours in _LLAMA_LAYER_NAMES.items():
            names[f"blk.{index}.{gguf_name}"] = f"layers.{index}.{ours}"
        if permuted_qk:
            attention = layer.attention
            names[f"blk.{index}.attn_q.weight"] = (
                f"layers.{index}.attention.wq.weight", rope_rows(attention.heads, attention.head_dim))
            names[f"blk.{index}.attn_k.weight"] = (
                f"layers.{index}.attention.wk.weight", rope_rows(attention.kv_heads, attention.head_dim))
    if gguf_file is not None:
        tensor_names = {tensor.name for tensor in _reader(gguf_file).tensors}
        if "output.weight" not in tensor_names:
            names["token_embd.weight"] = ["tok_embeddings.weight", "output.weight"]
    return names


def llama_config(gguf_file) -> Dict[str, object]:
    """examples.models.llama.Llama's constructor arguments from a llama.cpp GGUF's metadata."""
    reader = _reader(gguf_file)

    def value(key):
        field_ = reader.get_field(key)
        if field_ is None:
            raise ValueError(f"GGUF file has no {key}")
        return field_.contents()

    def float32(key) -> float:
        # The shortest decimal that is the file's float32 (1e-05, not 9.99999974e-06).
        return float(str(np.float32(value(key))))

    arch = value("general.architecture")
    embedding = next(t for t in reader.tensors if t.name == "token_embd.weight")
    config = dict(
        vocab=int(embedding.shape[1]),
        dim=int(value(f"{arch}.embedding_length")),
        layers=int(value(f"{arch}.block_count")),
        heads=int(value(f"{arch}.attention.head_count")),
        kv_heads=int(value(f"{arch}.attention.head_count_kv")),
        hidden=int(value(f"{arch}.feed_forward_length")),
        max_seq_len=int(value(f"{arch}.context_length")),
        eps=float32(f"{arch}.attention.layer_norm_rms_epsilon"),
    )
    if reader.get_field(f"{arch}.rope.freq_base") is not None:
        config["rope_theta"] = float32(f"{arch}.rope.freq_base")
    return config
