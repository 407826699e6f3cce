"""The examples' Llama (examples/models/llama.py) built from a llama.cpp GGUF
file: its config from the metadata, quantized linears and the token embedding
as GGUF blocks (GGUFLinear, GGUFEmbedding; a tied LM head shares the
embedding's blocks), norms as float, and the tokenizer.json from the metadata.

    model, config, tokenizer_json = llama_from_gguf("SmolLM2-135M-Instruct.Q4_1.gguf", max_seq_len=256)

Also an eager greedy loop (full recompute per token, no cache) for checking text.
"""
import tempfile
from typing import Callable, List, Optional, Sequence, Tuple

import torch
from torch import nn

from .gguf_linear import GGUFEmbedding, GGUFLinear
from .gguf_loader import _reader, llama_config, load_gguf_linears
from .gguf_tokenizer import write_tokenizer_files


def llama_from_gguf(gguf_file, max_seq_len: Optional[int] = None, tokenizer_dir: Optional[str] = None,
                    **model_kwargs) -> Tuple[nn.Module, dict, str]:
    """(model, config, tokenizer_json_path) of a llama.cpp GGUF file (a path or a gguf.GGUFReader).

    max_seq_len: the rotary tables' length (default: the file's context length);
    model_kwargs override other Llama constructor arguments. The tokenizer.json and
    its tokenizer_config.json go to tokenizer_dir (default: a new temporary directory).
    """
    from ..examples.models.llama import Llama

    reader = _reader(gguf_file)
    arch = reader.get_field("general.architecture").contents()
    if arch != "llama":
        raise ValueError(f"general.architecture is {arch!r}; llama_from_gguf builds 'llama' models only")
    config = llama_config(reader)
    head_dim = config["dim"] // config["heads"]
    rope_dims = reader.get_field("llama.rope.dimension_count")
    if rope_dims is not None and int(rope_dims.contents()) != head_dim:
        raise ValueError(f"llama.rope.dimension_count is {rope_dims.contents()}, not the head dim {head_dim}: "
                         "partial rotary embeddings are not supported")
    if max_seq_len is not None:
        config["max_seq_len"] = int(max_seq_len)
    config.update(model_kwargs)
    model = Llama(**config).eval()
    load_gguf_linears(model, reader)
    tokenizer_json = write_tokenizer_files(reader, tokenizer_dir or tempfile.mkdtemp(prefix="gguf_tokenizer_"))
    return model, config, tokenizer_json


def dequantized_copy(model: nn.Module) -> nn.Module:
    """A copy of `model` with every GGUFLinear / GGUFEmbedding turned into a float
    nn.Linear / nn.Embedding holding its dequantized weight: the eager reference
    the delegate's output is compared against, and fast eager generation (the GGUF
    modules' eager forwards dequantize their blocks on every call)."""
    replacements = {}
    dequantized = {}  # id of the words -> their float weight, once per tensor (tied embeddings)

    def weight_of(words, module):
        if id(words) not in dequantized:
            dequantized[id(words)] = nn.Parameter(module.dequantized_weight(), requires_grad=False)
        return dequantized[id(words)]

    for name, module in model.named_modules():
        if isinstance(module, GGUFLinear):
            linear = nn.Linear(module.in_features, module.out_features, bias=module.bias is not None,
                               device="meta")
            linear.weight = weight_of(module.weight, module)
            if module.bias is not None:
                linear.bias = nn.Parameter(module.bias.clone(), requires_grad=False)
            replacements[name] = linear
        elif isinstance(module, GGUFEmbedding):
            embedding = nn.Embedding(module.num_embeddings, module.embedding_dim, device="meta")
            embedding.weight = weight_of(module.words(), module)
            replacements[name] = embedding
    # Copy the rest without the blocks (shallow copies of the modules on the way down).
    copy = _copy_without(model, set(replacements))
    for name, module in replacements.items():
        parent, _, child = name.rpartition(".")
        (copy.get_submodule(parent) if parent else copy)._modules[child] = module
    return copy.eval()


def _copy_without(model: nn.Module, skip: set, prefix: str = "") -> nn.Module:
    import copy as copy_module

    clone = copy_module.copy(model)
    clone._modules = {}
    for name, child in model._modules.items():
        path = f"{prefix}{name}"
        clone._modules[name] = None if child is None or path in skip else _copy_without(child, skip, path + ".")
    clone._parameters = {k: (None if v is None else nn.Parameter(v.detach().clone(), v.requires_grad))
                         for k, v in model._parameters.items()}
    clone._buffers = {k: (None if v is None else v.clone()) for k, v in model._buffers.items()}
    return clone


@torch.no_grad()
def greedy_generate(logits_of: Callable[[torch.Tensor], torch.Tensor], prompt_ids: Sequence[int],
                    max_new_tokens: int, stop_ids: Sequence[int] = ()) -> List[int]:
    """New token ids by greedy decoding; logits_of(tokens [1, T]) -> logits [1, T, vocab]
    (a full forward each step: no cache). Stops after a token in stop_ids (kept)."""
    ids = list(prompt_ids)
    new: List[int] = []
    for _ in range(max_new_tokens):
        logits = logits_of(torch.tensor([ids], dtype=torch.long))
        token = int(logits[0, -1].argmax())
        new.append(token)
        ids.append(token)
        if token in stop_ids:
            break
    return new
