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
from . import _vkdelegate
from ._vkdelegate import (  # noqa: F401
    BACKEND_ID,
    Graph,
    GraphError,
    VulkanError,
    device_info,
    is_available,
    last_error,
    loaded_memory_reports,
    registered_ops,
    unavailable_reason,
    validation_enabled,
    validation_error_count,
)

__all__ = [
    "BACKEND_ID", "Graph", "GraphError", "VulkanError", "device_info", "is_available",
    "last_error", "loaded_memory_reports", "registered_ops", "unavailable_reason",
    "validation_enabled", "validation_error_count", "runner_path",
]


def runner_path() -> str:
    """Path of the vkdelegate_runner binary built with this package."""
    import os

    return os.path.join(os.path.dirname(__file__), "vkdelegate_runner")
