"""A Hugging Face tokenizer.json (and tokenizer_config.json) built from the
tokenizer a llama.cpp GGUF file carries in its metadata, with the `tokenizers`
package: what ExecuTorch's TextLLMRunner (pytorch_tokenizers' HFTokenizer) and
`tokenizers.Tokenizer.from_file` load.

Only GPT-2-style byte-level BPE files (tokenizer.ggml.model = "gpt2") are
read; the pre-tokenizer comes from tokenizer.ggml.pre (llama.cpp's name for
the split before BPE). Anything else is an error naming the key and its value.
"""
import json
import os
from typing import Dict, List, Optional

from .gguf_loader import _reader

# ggml token types (llama.cpp's llama_token_type)
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6

# tokenizer.ggml.pre -> whether digits are split one by one before the GPT-2 split
# (llama.cpp's pre-tokenizer regexes: "smollm" and its kin put \p{N} first).
_PRE_TOKENIZERS = {
    "default": False,
    "gpt-2": False,
    "smollm": True,
    "starcoder": True,
    "refact": True,
    "codeshell": True,
}




def _field(reader, key, default=None, required=True):
    field = reader.get_field(key)
    if field is None:
        if required:
            raise ValueError(f"GGUF file has no {key}: it carries no tokenizer vocabulary")
        return default
    return field.contents()


def gguf_tokenizer(gguf_file):
    """The file's tokenizer as a `tokenizers.Tokenizer` (byte-level BPE)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    reader = _reader(gguf_file)
    model = _field(reader, "tokenizer.ggml.model")
    if model != "gpt2":
        raise ValueError(f"tokenizer.ggml.model is {model!r}; only 'gpt2' (byte-level BPE) tokenizers are built")
    pre = _field(reader, "tokenizer.ggml.pre", "default", required=False)
    if pre not in _PRE_TOKENIZERS:
        raise ValueError(f"tokenizer.ggml.pre is {pre!r}, a pre-tokenizer not built here "
                         f"(known: {', '.join(sorted(_PRE_TOKENIZERS))})")
    tokens: List[str] = list(_field(reader, "tokenizer.ggml.tokens"))
    merges = [tuple(merge.split(" ", 1)) for merge in _field(reader, "tokenizer.ggml.merges")]
    types = list(_field(reader, "tokenizer.ggml.token_type", [_NORMAL] * len(tokens), required=False))
    if len(types) != len(tokens):
        raise ValueError(f"tokenizer.ggml.token_type has {len(types)} entries for {len(tokens)} tokens")
    vocab: Dict[str, int] = {}
    for index, token in enumerate(tokens):
        vocab.setdefault(token, index)
    if len(vocab) != len(tokens):
        raise ValueError(f"tokenizer.ggml.tokens repeats {len(tokens) - len(vocab)} tokens")

    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    if _PRE_TOKENIZERS[pre]:
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        tokenizer.pre_tokenizer = byte_level
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    # Control tokens (<|im_start|>, ...) are special: matched whole, never split.
    added = [AddedToken(tokens[i], special=types[i] == _CONTROL, normalized=False)
             for i in range(len(tokens)) if types[i] in (_CONTROL, _USER_DEFINED)]
    tokenizer.add_tokens(added)
    return tokenizer


def special_tokens(gguf_file) -> Dict[str, Optional[str]]:
    """bos/eos/pad/unk tokens (as text) named by the file's tokenizer.ggml.*_token_id."""
    reader = _reader(gguf_file)
    tokens = _field(reader, "tokenizer.ggml.tokens")
    result: Dict[str, Optional[str]] = {}
    for name, key in (("bos", "bos_token_id"), ("eos", "eos_token_id"), ("pad", "padding_token_id"),
                      ("unk", "unknown_token_id")):
        index = _field(reader, f"tokenizer.ggml.{key}", None, required=False)
        if index is not None and not 0 <= int(index) < len(tokens):
            raise ValueError(f"tokenizer.ggml.{key} is {index}, outside the {len(tokens)} tokens")
        result[name] = None if index is None else tokens[int(index)]
    return result


def chat_template(gguf_file) -> Optional[str]:
    return _field(_reader(gguf_file), "tokenizer.chat_template", None, required=False)


def write_tokenizer_files(gguf_file, directory) -> str:
    """Writes tokenizer.json and tokenizer_config.json (bos/eos/pad tokens, the chat
    template, whether to add BOS) into `directory`; returns the tokenizer.json path.
    pytorch_tokenizers' HFTokenizer reads the config beside the tokenizer.json."""
    reader = _reader(gguf_file)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(str(directory), "tokenizer.json")
    gguf_tokenizer(reader).save(path)
    special = special_tokens(reader)
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": special["bos"],
        "eos_token": special["eos"],
        "pad_token": special["pad"],
        "unk_token": special["unk"],
        "add_bos_token": bool(_field(reader, "tokenizer.ggml.add_bos_token", False, required=False)),
        "add_eos_token": bool(_field(reader, "tokenizer.ggml.add_eos_token", False, required=False)),
        "chat_template": chat_template(reader),
    }
    turn = chat_turn(config["chat_template"]) if config["chat_template"] else None
    if turn is not None:
        config["vkdelegate_chat_turn"] = turn
    with open(os.path.join(str(directory), "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=1, ensure_ascii=False)
    return path


def chat_turn(template: str):
    """{"prefix", "suffix"}: the text around one user message when `template` renders it with the
    assistant's generation prompt, for runners without a template engine (vkdelegate_runner --chat);
    None where the message does not come out once and unchanged (a template that edits it)."""
    marker = "\x00vkdelegate-message\x00"
    try:
        text = apply_chat_template(template, [{"role": "user", "content": marker}])
    except Exception:  # a template that needs more than messages (jinja2's errors, a raise_exception)
        return None
    if text.count(marker) != 1:
        return None
    prefix, suffix = text.split(marker)
    return {"prefix": prefix, "suffix": suffix}


def apply_chat_template(template: str, messages, add_generation_prompt: bool = True, **extra) -> str:
    """The prompt text of `messages` ([{"role", "content"}, ...]) under a GGUF/HF chat template."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    # As transformers renders chat templates: a sandbox (the template is the file's
    # text), blocks trimmed.
    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return environment.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                                    **extra)
