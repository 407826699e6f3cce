#!/usr/bin/env python3
"""LLM generation on vkdelegate: export a Llama with its KV cache on the GPU, then
generate with ExecuTorch's own runner (TextLLMRunner), which runs our delegate.

    python examples/llm.py export --config tinyllama-shape --quant int4 --max-seq-len 1024 --out llama.pte
    python examples/llm.py generate --model llama.pte --tokenizer tokenizer.json --prompt "Once upon a time" \\
        --max-new-tokens 128

The .pte has `forward(tokens [1, T] int64, input_pos [T] int64) -> logits [1, 1, vocab]`, the last
position's (`--full-logits`: [1, T, vocab]), T from 1 to --max-seq-len: one program for prefill and
decode. It also has the metadata methods the runner reads (get_max_seq_len, get_max_context_len,
use_kv_cache, enable_dynamic_shape, get_bos_id, get_eos_ids, get_vocab_size, use_sdpa_with_kv_cache).
The KV cache is state inside the delegate: updated in place on the GPU each step, never copied to
the host.
"""
import argparse
import json
import os
import time
from typing import Dict, List, Optional, Sequence

import torch

# vkdelegate before executorch: importing vkdelegate filters the messages that executorch's
# import of torchao prints (vkdelegate/third_party_noise.py says which).
from vkdelegate.examples.models.llama import Llama
from vkdelegate.partitioner import VulkanPartitioner

# Llama shapes (random seeded weights): a tiny one for tests, TinyLlama-1.1B's for benchmarks.
CONFIGS: Dict[str, Dict[str, int]] = {
    "tiny": dict(vocab=320, dim=64, layers=2, heads=4, kv_heads=2, hidden=160),
    "tinyllama-shape": dict(vocab=32000, dim=2048, layers=22, heads=32, kv_heads=4, hidden=5632),
}
QUANTS = ("none", "fp16", "int4", "8da4w")
GROUP_SIZE = 32


def build_model(config: str, max_seq_len: int, seed: int = 0, vocab: Optional[int] = None,
                full_logits: bool = False) -> Llama:
    """The Llama of a named config with a KV cache for max_seq_len positions, random seeded weights;
    it returns the last position's logits unless full_logits."""
    if config not in CONFIGS:
        raise ValueError(f"unknown config {config!r}; known: {', '.join(CONFIGS)}")
    shape = dict(CONFIGS[config])
    if vocab is not None:
        shape["vocab"] = vocab
    return Llama(**shape, max_seq_len=max_seq_len, seed=seed, kv_cache=True, full_logits=full_logits).eval()


def quantize(model: torch.nn.Module, quant: str) -> torch.nn.Module:
    """model with its linears quantized for our torchao kernels (int4: weight-only, 8da4w: int8
    dynamic activations), group size 32; none and fp16 leave it as it is (fp16 is a lowering option)."""
    if quant not in QUANTS:
        raise ValueError(f"unknown quantization {quant!r}; known: {', '.join(QUANTS)}")
    if quant in ("none", "fp16"):
        return model
    from vkdelegate.quant import torchao_configs

    config = (torchao_configs.weight_only_config(4, GROUP_SIZE) if quant == "int4"
              else torchao_configs.dynamic_activation_config(4, GROUP_SIZE))
    return torchao_configs.quantized(model, config)


def metadata(model: Llama, bos_id: int, eos_ids: Sequence[int]) -> Dict[str, object]:
    """The constant methods ExecuTorch's LLM runner reads (extension/llm/runner/constants.h)."""
    return {
        "get_max_seq_len": model.max_seq_len,
        "get_max_context_len": model.max_seq_len,
        "get_vocab_size": model.output.weight.shape[0],
        "use_kv_cache": True,
        "enable_dynamic_shape": True,  # prefill runs the whole prompt in one execute
        "use_sdpa_with_kv_cache": False,
        "get_bos_id": bos_id,
        "get_eos_ids": list(eos_ids),
    }


def export_llm(model: Llama, quant: str = "none", bos_id: int = 1, eos_ids: Sequence[int] = (2,),
               options: Optional[Dict] = None):
    """The lowered program (ExecutorchProgramManager) of a Llama built with kv_cache=True; `options`:
    VulkanPartitioner's compile options over the quantization's own."""
    if not model.kv_cache:
        raise ValueError("export_llm needs a Llama built with kv_cache=True")
    model = quantize(model, quant)
    seq = torch.export.Dim("seq", min=1, max=model.max_seq_len)
    # Two example positions, so that export keeps the length symbolic (it specializes 1).
    example = (torch.zeros(1, 2, dtype=torch.long), torch.arange(2))
    with torch.no_grad():
        ep = torch.export.export(model, example, dynamic_shapes=({1: seq}, {0: seq}))
    from executorch.exir import to_edge_transform_and_lower

    options = {**({"force_fp16": True} if quant == "fp16" else {}), **(options or {})}
    lowered = to_edge_transform_and_lower(
        ep, partitioner=[VulkanPartitioner(options)], constant_methods=metadata(model, bos_id, eos_ids)
    )
    return lowered.to_executorch()


def load_gguf(path: str, max_seq_len: int, tokenizer_dir: str):
    """(Llama with a KV cache for max_seq_len positions, its BOS id, its EOS ids) from a llama.cpp
    .gguf file; the tokenizer.json built from the file's metadata goes to tokenizer_dir."""
    from vkdelegate.quant.gguf_file import GGUFFile
    from vkdelegate.quant.gguf_llama import llama_from_gguf

    reader = GGUFFile(path)
    model, _, tokenizer_json = llama_from_gguf(reader, max_seq_len=max_seq_len, tokenizer_dir=tokenizer_dir,
                                               kv_cache=True)
    print(f"tokenizer: {tokenizer_json}")

    def token_id(key: str, default: int) -> int:
        field = reader.get_field(key)
        return default if field is None else int(field.contents())

    return model.eval(), token_id("tokenizer.ggml.bos_token_id", 1), [token_id("tokenizer.ggml.eos_token_id", 2)]


def _export(args) -> None:
    bos_id, eos_ids = args.bos_id, args.eos_id
    if args.gguf:
        if args.quant not in ("none", "fp16"):
            raise SystemExit(f"--quant {args.quant}: a .gguf file's weights are already quantized (none or fp16 only)")
        tokenizer_dir = os.path.splitext(args.out)[0] + "_tokenizer"
        model, bos_id, eos_ids = load_gguf(args.gguf, args.max_seq_len, tokenizer_dir)
        model.full_logits = args.full_logits
    else:
        model = build_model(args.config, args.max_seq_len, args.seed, full_logits=args.full_logits)
    t0 = time.perf_counter()
    program = export_llm(model, args.quant, bos_id, eos_ids)
    with open(args.out, "wb") as f:
        program.write_to_file(f)
    print(f"wrote {args.out} ({len(program.buffer) / 2**20:.1f} MiB) in {time.perf_counter() - t0:.1f} s")


def generate(model_path: str, tokenizer_path: str, prompt: str, max_new_tokens: int,
             temperature: float = 0.0, on_token=None):
    """Runs TextLLMRunner on our delegate; returns (the generated pieces, the runner's Stats)."""
    import vkdelegate.runtime  # noqa: F401  (registers the backend in ExecuTorch's runtime)
    from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner

    runner = TextLLMRunner(model_path, tokenizer_path)
    pieces: List[str] = []
    stats = []

    def token(piece: str) -> None:
        pieces.append(piece)
        if on_token is not None:
            on_token(piece)

    config = GenerationConfig(max_new_tokens=max_new_tokens, temperature=temperature, echo=False)
    runner.generate(prompt, config, token_callback=token, stats_callback=stats.append)
    return pieces, stats[-1] if stats else None


def chat_prompt(tokenizer_path: str, user_text: str) -> str:
    """user_text as one user turn of the chat template in the tokenizer_config.json beside tokenizer_path."""
    from vkdelegate.quant.gguf_tokenizer import apply_chat_template

    directory = tokenizer_path if os.path.isdir(tokenizer_path) else os.path.dirname(tokenizer_path)
    config_path = os.path.join(directory, "tokenizer_config.json")
    template = None
    if os.path.exists(config_path):
        with open(config_path) as f:
            template = json.load(f).get("chat_template")
    if not template:
        raise SystemExit(f"--chat: no chat_template in {config_path}")
    return apply_chat_template(template, [{"role": "user", "content": user_text}])


def _generate(args) -> None:
    # The runner itself prints each piece as it comes.
    prompt = chat_prompt(args.tokenizer, args.prompt) if args.chat else args.prompt
    _, stats = generate(args.model, args.tokenizer, prompt, args.max_new_tokens, args.temperature)
    print()
    if stats is not None:
        prefill_s = (stats.prompt_eval_end_ms - stats.inference_start_ms) / 1000
        decode_s = (stats.inference_end_ms - stats.prompt_eval_end_ms) / 1000
        decoded = max(stats.num_generated_tokens - 1, 0)  # the first comes from prefill
        print(f"prompt {stats.num_prompt_tokens} tokens: {stats.num_prompt_tokens / max(prefill_s, 1e-9):.1f} tok/s "
              f"prefill; {decoded} decode steps: {decoded / max(decode_s, 1e-9):.1f} tok/s")


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export", help="write a .pte with the KV cache on the GPU")
    export.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    export.add_argument("--gguf", help="weights and tokenizer from a llama.cpp .gguf file (instead of --config); "
                        "the tokenizer.json goes to OUT's name + _tokenizer/, BOS/EOS ids come from the file")
    export.add_argument("--quant", default="none", choices=QUANTS)
    export.add_argument("--max-seq-len", type=int, default=128)
    export.add_argument("--seed", type=int, default=0)
    export.add_argument("--full-logits", action="store_true",
                        help="return every position's logits [1, T, vocab] (default: the last position's, [1, 1, vocab])")
    export.add_argument("--bos-id", type=int, default=1, help="with --config (default: 1)")
    export.add_argument("--eos-id", type=int, action="append", help="with --config; repeatable (default: 2)")
    export.add_argument("--out", required=True)
    gen = commands.add_parser("generate", help="generate with ExecuTorch's TextLLMRunner")
    gen.add_argument("--model", required=True)
    gen.add_argument("--tokenizer", required=True, help="tokenizer.json (or another format pytorch_tokenizers reads)")
    gen.add_argument("--prompt", required=True)
    gen.add_argument("--max-new-tokens", type=int, default=64)
    gen.add_argument("--temperature", type=float, default=0.0)
    gen.add_argument("--chat", action="store_true",
                     help="wrap the prompt as a user turn of the chat template in tokenizer_config.json")
    args = parser.parse_args(argv)
    if args.command == "export":
        args.eos_id = args.eos_id or [2]
        _export(args)
    else:
        _generate(args)


if __name__ == "__main__":
    main()
