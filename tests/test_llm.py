"""LLM generation on the delegate: a small random Llama with its KV cache inside the
delegate, run by ExecuTorch's own TextLLMRunner and stepped through executorch.runtime,
against eager PyTorch with the same cache semantics (examples/models/llama.py).

The tokenizer is a real one: a byte-level BPE trained at test time with the `tokenizers`
package on a few sentences (its alphabet is their characters, so every token decodes to
ASCII: the runner's Python callback takes UTF-8 strings, and a random model would
otherwise emit half a multi-byte character).
"""
import copy

import pytest
import torch

from vkdelegate.examples import llm

import vkdelegate.runtime as rt

from executorch.runtime import Runtime

MAX_SEQ_LEN = 320  # room for a prompt and 256 decode steps
TEXT = [
    "Once upon a time there was a little robot who liked to paint the sky.",
    "The quick brown fox jumps over the lazy dog, and the dog did not mind.",
    "Vulkan runs compute shaders on every GPU; the cache stays on the device.",
]
PROMPT = "Once upon a time the robot"
BOS, EOS = 1, 2
# One worker: the module's programs are exported once.
pytestmark = pytest.mark.xdist_group("llm")


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"])
    tokenizer.train_from_iterator(TEXT * 4, trainer)
    path = tmp_path_factory.mktemp("tokenizer") / "tokenizer.json"
    tokenizer.save(str(path))
    return str(path), tokenizer


def tiny_model(vocab: int) -> torch.nn.Module:
    return llm.build_model("tiny", MAX_SEQ_LEN, seed=3, vocab=vocab)


@pytest.fixture(scope="module")
def programs(tokenizer_json, tmp_path_factory):
    """{quant: (pte path, eager model with the same weights, ExecutorchProgramManager)}, exported on first use."""
    _, tokenizer = tokenizer_json
    out = tmp_path_factory.mktemp("pte")
    cache = {}

    def get(quant: str):
        if quant not in cache:
            model = tiny_model(tokenizer.get_vocab_size())
            eager = copy.deepcopy(llm.quantize(copy.deepcopy(model), quant))
            path = out / f"tiny_{quant}.pte"
            program = llm.export_llm(model, quant, BOS, [EOS])
            path.write_bytes(program.buffer)
            cache[quant] = (str(path), eager, program)
        return cache[quant][:2]

    get.program = lambda quant: (get(quant), cache[quant][2])[1]

    return get


def eager_step(model, tokens, start: int) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([tokens]), torch.arange(start, start + len(tokens)))


def eager_greedy(model, prompt, steps: int):
    """Greedy tokens after prompt (prefill, then one token per step), stopping at EOS as the runner does."""
    model.reset_cache()
    token = int(eager_step(model, prompt, 0)[0, -1].argmax())
    tokens, position = [token], len(prompt)
    while len(tokens) < steps and token != EOS:
        token = int(eager_step(model, [token], position)[0, -1].argmax())
        tokens.append(token)
        position += 1
    return tokens


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return float((actual.float() - expected.float()).abs().max() / expected.float().abs().max())


def test_runner_generates_eager_tokens_and_decode_replays(tokenizer_json, programs):
    from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner

    path, tokenizer = tokenizer_json
    pte, eager = programs("none")
    expected = eager_greedy(eager, tokenizer.encode(PROMPT).ids, 64)
    assert len(expected) == 64, "the random model stopped early: pick another seed"

    runner = TextLLMRunner(pte, path)
    pieces, stats, records = [], [], []

    def on_token(piece: str) -> None:
        pieces.append(piece)
        records.append(rt.loaded_execute_stats()[0])

    runner.generate(PROMPT, GenerationConfig(max_new_tokens=64, temperature=0.0, echo=False),
                    token_callback=on_token, stats_callback=stats.append)
    assert "".join(pieces) == tokenizer.decode(expected)
    assert len(pieces) == len(expected)
    assert stats[-1].num_prompt_tokens == len(tokenizer.encode(PROMPT).ids)
    # One execute per token; the prefill and the first decode record, every later decode replays.
    assert records[-1]["executes"] - records[1]["executes"] == len(pieces) - 2
    assert records[-1]["records"] == records[1]["records"]

    # A new prompt after reset starts over: the stale cache past the new positions is masked.
    runner.reset()
    again = []
    runner.generate(PROMPT, GenerationConfig(max_new_tokens=64, temperature=0.0, echo=False),
                    token_callback=again.append)
    assert again == pieces


def test_logits_match_eager_every_step(tokenizer_json, programs):
    _, tokenizer = tokenizer_json
    pte, eager = programs("none")
    method = Runtime.get().load_program(pte).load_method("forward")
    eager.reset_cache()
    prompt = tokenizer.encode(PROMPT).ids
    tokens, position = prompt, 0
    for _ in range(64):
        expected = eager_step(eager, tokens, position)
        actual = method.execute([torch.tensor([tokens]), torch.arange(position, position + len(tokens))])[0]
        assert relative_error(actual, expected) <= 1e-4, f"position {position}"
        position += len(tokens)
        tokens = [int(expected[0, -1].argmax())]


@pytest.mark.parametrize("length", [1, 7, 100, MAX_SEQ_LEN])
def test_prefill_lengths_give_eager_next_token(programs, length):
    pte, eager = programs("none")
    method = Runtime.get().load_program(pte).load_method("forward")
    vocab = eager.output.weight.shape[0]
    prompt = torch.randint(3, vocab, (length,), generator=torch.Generator().manual_seed(length)).tolist()
    expected = eager_step(eager, prompt, 0)
    actual = method.execute([torch.tensor([prompt]), torch.arange(length)])[0]
    assert actual.shape == (1, 1, vocab)  # the last position's logits only
    assert int(actual[0, -1].argmax()) == int(expected[0, -1].argmax())
    assert relative_error(actual, expected) <= 1e-4


@pytest.mark.parametrize("quant", ["none", "int4"])
def test_cache_lives_inside_one_delegate(programs, quant):
    """The lowered program's outer graph: one delegate call on tokens and positions, one output, no cache."""
    lowered = programs.program(quant).exported_program()
    calls = [n for n in lowered.graph.nodes if n.op == "call_function"
             and n.target is torch.ops.higher_order.executorch_call_delegate]
    assert len(calls) == 1
    assert [arg.name for arg in calls[0].args[1:]] == ["tokens", "input_pos"]
    assert not lowered.graph_signature.buffers_to_mutate
    assert len(lowered.graph_signature.output_specs) == 1
    assert all(spec.kind.name == "USER_INPUT" for spec in lowered.graph_signature.input_specs)


def _decode_dispatches(pte: str) -> int:
    method = Runtime.get().load_program(pte).load_method("forward")
    method.execute([torch.tensor([[5, 6, 7]]), torch.arange(3)])
    method.execute([torch.tensor([[8]]), torch.tensor([3])])
    return rt.loaded_execute_stats()[-1]["dispatches"]


@pytest.mark.parametrize("quant, expected", [("none", 12), ("int4", 6)])
def test_decode_dispatches_per_layer(programs, tmp_path, quant, expected):
    """A layer's decode step, float: 7 matmuls, 2 rms_norm, the attention over the cache with the rope
    of q and k and both cache writes inside its split kernel (et_vk.vkd_sdpa_rope_kv; no head transposes;
    split along the keys, then its reduce: 2; SDPA_KV_ONE_PASS makes it 1), mul; the silu in the w1
    matmul's epilogue and the 2 residual adds in the wo and w2 matmuls' (backends/linear_act_fusion.py):
    12 dispatches. int4: the
    linears fused (backends/linear_fusion.py) into [rms_norm + q/k/v], [wo + residual], [rms_norm +
    w1/w3 + silu * mul], [w2 + residual]: 6."""
    pte, eager = programs(quant)
    one_layer = llm.build_model("tiny", MAX_SEQ_LEN, seed=3, vocab=eager.output.weight.shape[0])
    one_layer.layers = one_layer.layers[:1]
    path = tmp_path / "one_layer.pte"
    path.write_bytes(llm.export_llm(one_layer, quant).buffer)
    layers = len(eager.layers)
    per_layer = (_decode_dispatches(pte) - _decode_dispatches(str(path))) // (layers - 1)
    assert per_layer == expected


def test_state_bytes_are_the_caches(programs):
    pte, eager = programs("none")
    method = Runtime.get().load_program(pte).load_method("forward")  # noqa: F841 (kept loaded for the report)
    caches = sum(layer.attention.k_cache.numel() * 2 * 4 for layer in eager.layers)  # k and v, float32
    assert rt.loaded_memory_reports()[-1]["state_bytes"] == caches


@pytest.mark.parametrize("quant", ["fp16", "int4"])
def test_quantized_top1_agrees_with_eager(tokenizer_json, programs, quant):
    """Teacher-forced (eager's tokens fed to both), against eager on the same (dequantized) weights."""
    _, tokenizer = tokenizer_json
    pte, eager = programs(quant)
    method = Runtime.get().load_program(pte).load_method("forward")
    eager.reset_cache()
    tokens, position, agree, steps = tokenizer.encode(PROMPT).ids, 0, 0, 256
    for _ in range(steps):
        expected = eager_step(eager, tokens, position)
        actual = method.execute([torch.tensor([tokens]), torch.arange(position, position + len(tokens))])[0]
        agree += int(actual[0, -1].argmax()) == int(expected[0, -1].argmax())
        position += len(tokens)
        tokens = [int(expected[0, -1].argmax())]
    assert agree / steps >= 0.99, f"{agree} of {steps}"


def test_position_past_the_cache_is_an_error(programs):
    pte, _ = programs("none")
    method = Runtime.get().load_program(pte).load_method("forward")
    with pytest.raises(RuntimeError):
        method.execute([torch.tensor([[5]]), torch.tensor([MAX_SEQ_LEN + 3])])
    assert f"index {MAX_SEQ_LEN + 3} is out of range for dimension 0 of size {MAX_SEQ_LEN}" in rt.last_error()
    # The program still runs.
    method.execute([torch.tensor([[5]]), torch.tensor([0])])


def test_prompt_longer_than_the_cache_is_an_error(tokenizer_json, programs):
    from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner

    path, _ = tokenizer_json
    pte, _ = programs("none")
    runner = TextLLMRunner(pte, path)
    with pytest.raises(RuntimeError):
        runner.generate(" ".join(TEXT * 16), GenerationConfig(max_new_tokens=4, echo=False))
    method = Runtime.get().load_program(pte).load_method("forward")
    with pytest.raises(RuntimeError):
        method.execute([torch.zeros(1, MAX_SEQ_LEN + 1, dtype=torch.long), torch.arange(MAX_SEQ_LEN + 1)])


def _index_put_graph(state: bool):
    """index_put(x, [index], values) -> x * 1 as a blob; x a state tensor or a graph input."""
    from vkdelegate.serialization.blob import serialize_graph
    from vkdelegate.serialization.graph_ir import (
        BoolValue, DType, GraphIR, IntValue, OpCall, TensorValue, ValueListValue)

    g = GraphIR()
    x = g.add_value(TensorValue(DType.float32, (4, 3), state=state))
    index = g.add_value(TensorValue(DType.int64, (2,)))
    values = g.add_value(TensorValue(DType.float32, (2, 3)))
    g.input_ids = [index, values] + ([] if state else [x])
    indices = g.add_value(ValueListValue((index,)))
    updated = g.add_value(TensorValue(DType.float32, (4, 3)))
    g.chain.append(OpCall("aten.index_put.default", (x, indices, values, g.add_value(BoolValue(False)), updated)))
    out = g.add_value(TensorValue(DType.float32, (4, 3)))
    g.chain.append(OpCall("aten.mul.Scalar", (updated, g.add_value(IntValue(2)), out)))
    g.output_ids = [out]
    return serialize_graph(g)


def test_state_persists_across_executes_and_only_state_updates_in_place():
    import numpy as np

    graph = rt.Graph(_index_put_graph(state=True))
    values = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    (first,) = graph.run([np.array([3, 0]), values])
    expected = np.zeros((4, 3), np.float32)
    expected[[3, 0]] = values
    np.testing.assert_array_equal(first, expected * 2)
    (second,) = graph.run([np.array([1, 1]), values * 10])
    expected[1] = values[1] * 10  # the state kept rows 0 and 3
    np.testing.assert_array_equal(second, expected * 2)
    with pytest.raises(rt.GraphError, match=r"index 7 is out of range for dimension 0 of size 4"):
        graph.run([np.array([7, 0]), values])
    assert graph.execute_stats()["records"] == 1

    with pytest.raises(rt.GraphError, match="must be a state tensor"):
        rt.Graph(_index_put_graph(state=False))


def test_cpp_runner_generation_loop_gives_eager_tokens(tmp_path, tokenizer_json, programs):
    """vkdelegate_runner --generate (the C++ loop: the prompt in one execute, then greedy decode
    steps of one token, argmax on the host) gives eager PyTorch's tokens; its memory report
    counts the caches, its profile covers prefill and decode."""
    import json
    import subprocess

    _, tokenizer = tokenizer_json
    pte, eager = programs("none")
    prompt, steps = tokenizer.encode(PROMPT).ids, 12
    eager.reset_cache()
    expected = [int(eager_step(eager, prompt, 0)[0, -1].argmax())]
    for s in range(steps):
        expected.append(int(eager_step(eager, [expected[-1]], len(prompt) + s)[0, -1].argmax()))
    assert len(set(expected)) > 2, "the random model repeats one token: pick another seed"
    report = tmp_path / "gen.json"

    def runner(*args):
        return subprocess.run([rt.runner_path(), "--model", pte, *args], capture_output=True, text=True, timeout=300)

    r = runner("--prompt-ids", ",".join(map(str, prompt)), "--generate", str(steps), "--warmup", "1",
               "--iters", "2", "--profile", "--json", str(report))
    assert r.returncode == 0, r.stderr
    result = json.loads(report.read_text())
    assert result["tokens"] == expected
    assert result["prompt_tokens"] == len(prompt) and len(result["decode_step_ms"]) == 2 * steps
    assert result["prefill_tok_s"] > 0 and result["decode_tok_s"] > 0
    model = llm.build_model("tiny", MAX_SEQ_LEN)
    kv_width = model.layers[0].attention.kv_heads * model.layers[0].attention.head_dim
    assert result["memory"]["state_bytes"] == len(model.layers) * 2 * MAX_SEQ_LEN * kv_width * 4  # fp32 k and v
    assert "prefill GPU time by op" in r.stdout and "decode GPU time by op" in r.stdout
    assert result["decode_by_op"] and result["prefill_by_op"]
    # A made-up prompt of N ids; a prompt and steps past the cache: a clear error.
    r = runner("--prompt-tokens", "20", "--generate", "3", "--warmup", "0")
    assert r.returncode == 0, r.stderr
    assert "prefill: 20 tokens" in r.stdout and "decode: 3 steps at context 21..23" in r.stdout
    r = runner("--prompt-tokens", str(MAX_SEQ_LEN - 6), "--generate", "7")
    assert r.returncode == 1 and f"need {MAX_SEQ_LEN + 1} positions" in r.stderr and f"holds {MAX_SEQ_LEN}" in r.stderr


def test_int4_prefill_takes_the_coop_kernel(programs):
    """A 40-token prompt: the int4 linears (40 rows) take the emulated cooperative-matrix
    kernel (qlinear_coop.glsl rounds x and the dequantized weights to half), and the
    logits agree with eager on the same dequantized weights within that rounding."""
    pte, eager = programs("int4")
    with rt.overrides(COOPMAT_EMULATE=True):
        method = Runtime.get().load_program(pte).load_method("forward")
    assert any(s.startswith("qlinear_coop_emu_") for s in rt.loaded_shaders()[-1]), rt.loaded_shaders()[-1]
    vocab = eager.output.weight.shape[0]
    prompt = torch.randint(3, vocab, (40,), generator=torch.Generator().manual_seed(40)).tolist()
    eager.reset_cache()
    expected = eager_step(eager, prompt, 0)
    actual = method.execute([torch.tensor([prompt]), torch.arange(40)])[0]
    assert int(actual[0, -1].argmax()) == int(expected[0, -1].argmax())
    assert 1e-5 < relative_error(actual, expected) <= 1e-2  # the half rounding shows: the coop kernel ran
