"""Filters for three messages that a float model's export and lowering prints through no
fault of the model; installed once when `vkdelegate` is imported.

- torchao's "Failed to load .../torchao/_C_mxfp8... / _C_cutlass_90a..." log records: executorch
  imports torchao whenever its compiler is imported (exir/operator/util.py lists torchao's quant
  ops), and torchao tries to load its CUDA-only extensions, which cannot load under a CPU build
  of torch. Dropped only when torch has no CUDA.
- torch's "<enum ...> is an Enum subclass ... register_constant() ... deprecated" log record, for
  the Enums torchao registers at import (KernelPreference). Dropped only for torchao's classes.
- the FutureWarning "`isinstance(treespec, LeafSpec)` is deprecated" raised from copyreg when
  torch.export's run_decompositions (called by executorch's to_edge_transform_and_lower)
  deep-copies its own module call graph. Dropped only where copyreg raises it; the same
  warning from any other module, the user's code included, still shows.

torchao's messages can only be filtered if `vkdelegate` is imported before executorch's
compiler or runtime (as examples/export_and_run.py does): they are printed at torchao's import.
"""
import logging
import re
import sys
import warnings

_CUDA_ONLY_EXTENSION = re.compile(r"^Failed to load \S*torchao/_C_(mxfp8|cutlass_\w+)\S*\.so")


def _torch_has_cuda() -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and getattr(torch.version, "cuda", None) is not None


def _drop_torchao_cuda_extension_failures(record: logging.LogRecord) -> bool:
    return not (_CUDA_ONLY_EXTENSION.match(record.getMessage()) and not _torch_has_cuda())


def _drop_torchao_enum_constant_deprecation(record: logging.LogRecord) -> bool:
    if "is an Enum subclass" not in str(record.msg) or not record.args:
        return True
    cls = record.args[0] if isinstance(record.args, tuple) else None
    return not (isinstance(cls, type) and cls.__module__.startswith("torchao."))


def install() -> None:
    """Idempotent: each filter is added once per process."""
    for name, fn in (("torchao", _drop_torchao_cuda_extension_failures),
                     ("torch.utils._pytree", _drop_torchao_enum_constant_deprecation)):
        logger = logging.getLogger(name)
        if fn not in logger.filters:
            logger.addFilter(fn)
    warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
                            category=FutureWarning, module="copyreg")
