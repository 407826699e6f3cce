"""The vkdelegate runtime.

Importing this module loads the Vulkan runtime library, which registers the
``VkDelegateBackend`` with the ExecuTorch runtime of this process; after that,
``executorch.runtime.Runtime`` runs .pte files with vkdelegate partitions.
Without a usable Vulkan device the import still works: ``is_available()`` is
False and ``unavailable_reason()`` says why.
"""
# Our module links the executorch wheel's libexecutorch.so, the same library that
# executorch.runtime's bindings link, so the backend registers where they look,
# whichever is imported first. Importing executorch.runtime here would cost
# seconds (it imports the whole exir compiler, and with it torchao).
import contextlib

from . import _vkdelegate
from ._vkdelegate import (  # noqa: F401
    BACKEND_ID,
    Graph,
    GraphError,
    OutOfMemoryError,
    VulkanError,
    device_info,
    device_memory,
    is_available,
    last_error,
    list_devices,
    loaded_execute_stats,
    loaded_memory_reports,
    loaded_shaders,
    loaded_timings,
    registered_ops,
    set_loaded_profiling,
    settings_table,
    unavailable_reason,
    validation_enabled,
    validation_error_count,
)

__all__ = [
    "BACKEND_ID", "Graph", "GraphError", "OutOfMemoryError", "VulkanError", "device_info", "device_memory",
    "is_available",
    "last_error", "list_devices", "loaded_execute_stats", "loaded_memory_reports", "loaded_shaders", "loaded_timings", "registered_ops",
    "set_loaded_profiling", "unavailable_reason",
    "validation_enabled", "validation_error_count", "runner_path", "settings_table", "overrides",
]


@contextlib.contextmanager
def overrides(**settings):
    """Graph settings for the graphs loaded on this thread inside the block.

    ``with vkdelegate.runtime.overrides(COOPMM_TILE="w", COOPMAT_EMULATE=True):``
    then load a program (``executorch.runtime``'s ``load_method``, or ``Graph(blob)``):
    its delegates choose kernels with these settings over the environment's. Names are
    the settings without ``VKDELEGATE_`` (``settings_table()``, scope ``graph``);
    values are bools, ints or strs, None for the default. Scopes nest, hold for the
    calling thread only (a load on another thread is unaffected) and end with the block;
    graphs keep the settings they were loaded with. An unknown name or a value the
    setting does not accept raises ValueError on entry.
    """
    _vkdelegate._push_overrides(settings)
    try:
        yield
    finally:
        _vkdelegate._pop_overrides()


def runner_path() -> str:
    """Path of the vkdelegate_runner binary built with this package."""
    import os

    return os.path.join(os.path.dirname(__file__), "vkdelegate_runner")
