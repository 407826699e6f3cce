"""GGUF weights for vkdelegate: run a model from a llama.cpp `.gguf` file's
Q4_0, Q4_1, Q8_0, Q4_K and Q6_K weights without re-quantizing them.

    from vkdelegate.gguf import load_gguf_linears, llama_config
    model = Llama(**llama_config("model.gguf"))
    load_gguf_linears(model, "model.gguf")   # linears -> et_vk.vkd_linear_gguf, embedding -> vkd_embedding_gguf

    from vkdelegate.gguf import llama_from_gguf   # the same, plus the tokenizer.json from the metadata
    model, config, tokenizer_json = llama_from_gguf("model.gguf", max_seq_len=512)

The implementation lives in quant/gguf_linear.py (the ops and their block
decoders), quant/gguf_loader.py (reading files, name maps), quant/gguf_tokenizer.py
(the tokenizer) and quant/gguf_llama.py (the examples' Llama from a file).

This file is `vkdelegate.gguf`. When the vkdelegate repo root itself is on
sys.path (a script run from the checkout), a plain `import gguf` finds this
file before the PyPI `gguf` package; imported under that top-level name, it
hands the name to the PyPI package (quant/pypi_gguf.py), so `import gguf`
means the PyPI package everywhere. Our own code asks quant/pypi_gguf.py for
the package and never imports `gguf` by name.
"""
if __name__ == "gguf":
    # Imported under the top-level name: hand it to the PyPI package (quant/pypi_gguf.py,
    # run by path: the vkdelegate package may not be importable from here).
    import importlib.util as _util
    import os as _os

    _spec = _util.spec_from_file_location(
        "vkdelegate_pypi_gguf", _os.path.join(_os.path.dirname(_os.path.realpath(__file__)), "quant", "pypi_gguf.py"))
    _module = _util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    _module.load()
else:
    from .quant.gguf_linear import (  # noqa: F401
        FORMATS,
        FORMATS_BY_NAME,
        BlockFormat,
        GGUFEmbedding,
        GGUFLinear,
        dequantize,
        embedding_gguf,
        linear_gguf,
    )
    from .quant.gguf_llama import dequantized_copy, llama_from_gguf  # noqa: F401
    from .quant.gguf_tokenizer import apply_chat_template, gguf_tokenizer, write_tokenizer_files  # noqa: F401
    from .quant.gguf_loader import (  # noqa: F401
        GGUFLoadReport,
        llama_config,
        llama_cpp_names,
        load_gguf_linears,
        rope_rows,
    )
