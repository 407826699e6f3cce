"""vkdelegate_runner --tokenizer tokenizer.json --prompt TEXT --generate M: the C++ runner
encodes the prompt with pytorch_tokenizers' HF tokenizer (the program's BOS first), runs
prefill and greedy decode, prints each token's text as it comes and stops at the program's
EOS ids. Checked against eager PyTorch and the `tokenizers` package on a small random Llama
and a byte-level BPE trained at test time (a real tokenizer; its text has multi-byte
characters, so some tokens hold part of a UTF-8 character).
"""
import copy
import json
import subprocess
from pathlib import Path

import pytest

import vkdelegate

from vkdelegate.examples import llm

import vkdelegate.runtime as rt

from test_llm import eager_step

MAX_SEQ_LEN = 48
TEXT = [
    "Once upon a time there was a little robot who liked to paint the sky.",
    "Le café était très agréable, naïve élève; 日本語のテキスト 🙂 and 🚀 too.",
    "Vulkan runs compute shaders on every GPU; the cache stays on the device.",
]
PROMPT = "Once upon a time the café"
BOS = 1
STEPS = 24  # decode steps asked for; the program's EOS ends generation before


def _tokenizer_sources() -> bool:
    """scripts/fetch_tokenizers.sh fetched them (scripts/setup.sh does): the runner must have --tokenizer."""
    return (Path(vkdelegate.__file__).parent / ".pytorch_tokenizers" / "src" / "hf_tokenizer.cpp").exists()


pytestmark = [
    pytest.mark.xdist_group("runner_tokenizer"),  # one worker: the program is exported once
    pytest.mark.skipif(not rt.is_available(), reason="no Vulkan device"),
]


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    # The byte alphabet: every byte has a token, so a multi-byte character that is not merged
    # comes out as several tokens.
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(TEXT * 4, trainer)
    path = tmp_path_factory.mktemp("tokenizer") / "tokenizer.json"
    tokenizer.save(str(path))
    return str(path), tokenizer


@pytest.fixture(scope="module")
def program(tokenizer_json, tmp_path_factory):
    """(pte, eager greedy tokens until its EOS, that EOS id). The EOS is a token eager greedy
    decoding reaches after some steps, so that the runner must stop there."""
    _, tokenizer = tokenizer_json
    model = llm.build_model("tiny", MAX_SEQ_LEN, seed=5, vocab=tokenizer.get_vocab_size())
    eager = copy.deepcopy(model)
    prompt = [BOS] + tokenizer.encode(PROMPT).ids
    eager.reset_cache()
    tokens = [int(eager_step(eager, prompt, 0)[0, -1].argmax())]
    for s in range(STEPS):
        tokens.append(int(eager_step(eager, [tokens[-1]], len(prompt) + s)[0, -1].argmax()))
    stop = next((k for k in range(8, len(tokens)) if tokens[k] not in tokens[:k]), None)
    assert stop is not None, "the random model repeats itself: pick another seed"
    pte = tmp_path_factory.mktemp("pte") / "tiny.pte"
    pte.write_bytes(llm.export_llm(model, "none", BOS, [2, tokens[stop]]).buffer)
    return str(pte), tokens[:stop + 1], tokens[stop]


def run(*args, timeout=300):
    return subprocess.run([rt.runner_path(), *map(str, args)], capture_output=True, timeout=timeout)


def generated_text(stdout: bytes) -> bytes:
    """What the runner printed between its prompt line and its summary."""
    start = stdout.index(b"prompt: ")
    start = stdout.index(b"\n", start) + 1
    return stdout[start:stdout.rindex(b"\nmodel: ")]


needs_tokenizer = pytest.mark.skipif(not _tokenizer_sources(),
                                     reason="no pytorch_tokenizers sources (scripts/fetch_tokenizers.sh)")


@needs_tokenizer
def test_runner_prints_eager_text_and_stops_at_eos(tokenizer_json, program, tmp_path):
    path, tokenizer = tokenizer_json
    pte, expected, eos = program
    report = tmp_path / "gen.json"
    r = run("--model", pte, "--tokenizer", path, "--prompt", PROMPT, "--generate", STEPS, "--warmup", 0,
            "--json", report)
    assert r.returncode == 0, r.stderr.decode()
    result = json.loads(report.read_text())
    # The C++ tokenizer encodes as the `tokenizers` package does, with the program's BOS first.
    assert result["prompt"] == [BOS] + tokenizer.encode(PROMPT).ids
    assert result["tokens"] == expected  # eager's, up to and with the EOS
    assert len(result["decode_step_ms"]) == len(expected) - 1 < STEPS
    # The text of every token but the EOS, its bytes as they came (some tokens are part of a
    # character: the test text makes sure of it).
    assert any("\ufffd" in tokenizer.decode([t]) for t in expected[:-1]), "no split character: pick another seed"
    printed = generated_text(r.stdout)
    assert printed.decode("utf-8", "replace") == tokenizer.decode(expected[:-1], skip_special_tokens=False)
    assert expected[-1] == eos and f"decode: {len(expected) - 1} steps".encode() in r.stdout
    assert b"prefill: " in r.stdout and b"tok/s" in r.stdout


@needs_tokenizer
def test_add_bos_token_false_beside_the_tokenizer(tokenizer_json, program, tmp_path):
    path, tokenizer = tokenizer_json
    pte, _, _ = program
    (tmp_path / "tokenizer.json").write_bytes(open(path, "rb").read())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": False}))
    report = tmp_path / "gen.json"
    # The directory works as well as the file.
    r = run("--model", pte, "--tokenizer", tmp_path, "--prompt", PROMPT, "--generate", 1, "--warmup", 0,
            "--json", report)
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(report.read_text())["prompt"] == tokenizer.encode(PROMPT).ids
    assert b"no BOS" in r.stdout


# A ChatML template, as SmolLM2's GGUF file carries (quant/gguf_tokenizer.py writes the turn it renders).
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


@needs_tokenizer
def test_chat_wraps_the_prompt_in_the_chat_turn(tokenizer_json, program, tmp_path):
    from vkdelegate.quant.gguf_tokenizer import apply_chat_template, chat_turn

    path, tokenizer = tokenizer_json
    pte, _, _ = program
    turn = chat_turn(CHATML)
    text = "Hi"  # short: the template adds ~30 byte-level tokens, the cache holds 48
    templated = apply_chat_template(CHATML, [{"role": "user", "content": text}])
    assert turn["prefix"] + text + turn["suffix"] == templated == (
        "<|im_start|>user\n" + text + "<|im_end|>\n<|im_start|>assistant\n")
    (tmp_path / "tokenizer.json").write_bytes(open(path, "rb").read())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": CHATML,
                                                                "vkdelegate_chat_turn": turn}))
    report = tmp_path / "gen.json"
    r = run("--model", pte, "--tokenizer", tmp_path, "--prompt", text, "--chat", "--generate", 1, "--warmup", 0,
            "--json", report)
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(report.read_text())["prompt"] == [BOS] + tokenizer.encode(templated).ids
    # Without the turn beside the tokenizer (a config of other tools), --chat says what to do.
    r = run("--model", pte, "--tokenizer", path, "--prompt", text, "--chat", "--generate", 1)
    assert r.returncode == 1 and b"no vkdelegate_chat_turn" in r.stderr
    r = run("--model", pte, "--prompt-tokens", 3, "--chat", "--generate", 1)
    assert r.returncode == 2 and b"--chat wraps --prompt" in r.stderr


def test_chat_turn_of_templates_that_edit_the_message():
    """None where the message does not come out once, unchanged: the runner then refuses --chat."""
    from vkdelegate.quant.gguf_tokenizer import chat_turn

    assert chat_turn("{{ messages[0]['content'] | upper }}") is None
    assert chat_turn("{{ messages[0]['content'] }}{{ messages[0]['content'] }}") is None
    assert chat_turn("{{ raise_exception('no system turn') }}") is None
    assert chat_turn("[{{ messages[0]['content'] }}]") == {"prefix": "[", "suffix": "]"}


@needs_tokenizer
def test_bad_tokenizer_and_too_long_prompt_are_clear_errors(tokenizer_json, program, tmp_path):
    path, _ = tokenizer_json
    pte, _, _ = program
    r = run("--model", pte, "--tokenizer", tmp_path / "missing.json", "--prompt", PROMPT, "--generate", 4)
    assert r.returncode == 1 and b"missing.json: no such file" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{\"model\": 3}")
    r = run("--model", pte, "--tokenizer", bad, "--prompt", PROMPT, "--generate", 4)
    assert r.returncode == 1 and b"bad.json: not a tokenizer.json" in r.stderr
    r = run("--model", pte, "--tokenizer", path, "--prompt", " ".join(["the robot"] * MAX_SEQ_LEN), "--generate", 4)
    assert r.returncode == 1 and b"positions; the program's cache holds 48" in r.stderr
    r = run("--model", pte, "--prompt", PROMPT, "--generate", 4)
    assert r.returncode == 2 and b"--prompt TEXT and --tokenizer FILE go together" in r.stderr
