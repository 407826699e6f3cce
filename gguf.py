"""GGUF weights for vkdelegate: run a model from a llama.cpp `.gguf` file's
Q4_0, Q8_0, Q4_K and Q6_K weights without re-quantizing them.

    from vkdelegate.gguf import load_gguf_linears, llama_config
    model = Llama(**llama_config("model.gguf"))
    load_gguf_linears(model, "model.gguf")   # linears -> et_vk.vkd_linear_gguf

The implementation lives in quant/gguf_linear.py (the op and its block
decoders) and quant/gguf_loader.py (reading files, name maps).

This file is `vkdelegate.gguf`. When the vkdelegate repo root itself is on
sys.path (a script or `python -m pytest` run from the checkout), a plain
`import gguf` finds this file before the PyPI `gguf` package; imported under
that top-level name, it loads the PyPI package in its own place, so
`import gguf` means the PyPI package everywhere.
"""
if __name__ == "gguf":
    import importlib.machinery
    import importlib.util
    import os
    import sys

    _here = os.path.dirname(os.path.realpath(__file__))
    _path = [entry for entry in sys.path if os.path.realpath(entry or os.curdir) != _here]
    _spec = importlib.machinery.PathFinder.find_spec("gguf", _path)
    if _spec is None or _spec.loader is None:
        raise ImportError("the gguf package (pip install gguf) is not installed; "
                          f"found only vkdelegate's own {__file__}")
    _package = importlib.util.module_from_spec(_spec)
    sys.modules["gguf"] = _package  # the import system returns this module for `import gguf`
    _spec.loader.exec_module(_package)
else:
    from .quant.gguf_linear import (  # noqa: F401
        FORMATS,
        FORMATS_BY_NAME,
        BlockFormat,
        GGUFLinear,
        dequantize,
        linear_gguf,
    )
    from .quant.gguf_loader import (  # noqa: F401
        GGUFLoadReport,
        llama_config,
        llama_cpp_names,
        load_gguf_linears,
        rope_rows,
    )
