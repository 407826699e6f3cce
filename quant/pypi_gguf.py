"""The PyPI `gguf` package (GGUFReader, GGUFWriter, the block types), found past the
vkdelegate checkout.

The repository root is the vkdelegate package, and its `gguf.py` (`vkdelegate.gguf`)
shadows the PyPI package wherever the root itself is on sys.path (a script or an
interpreter started in the checkout). `load()` looks the package up on sys.path without
the root and registers it as `gguf`, so that `import gguf` means the PyPI package in the
whole process afterwards. Standard library only: `gguf.py` runs it by path when it is
imported under the top-level name.
"""
import importlib.machinery
import importlib.util
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def load():
    module = sys.modules.get("gguf")
    if module is not None and hasattr(module, "GGUFReader"):
        return module
    path = [entry for entry in sys.path if os.path.realpath(entry or os.curdir) != _ROOT]
    spec = importlib.machinery.PathFinder.find_spec("gguf", path)
    if spec is None or spec.loader is None:
        raise ImportError("the gguf package (pip install gguf) is not installed; "
                          f"found only vkdelegate's own {os.path.join(_ROOT, 'gguf.py')}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gguf"] = module  # the import system returns this module for `import gguf`
    spec.loader.exec_module(module)
    return module
