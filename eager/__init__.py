"""An eager PyTorch device on vkdelegate's Vulkan kernels (preview; docs/eager.md).

Importing this module registers PyTorch's PrivateUse1 backend under the name "vulkan":
tensors live in the runtime's Vulkan memory (one context with the delegate), ops the op
registry supports run through the delegate's kernels as cached one-op graphs
(dispatch.py), and every other op runs on the CPU with one warning per op.

    import torch, vkdelegate.eager
    x = torch.randn(8, 64, device="vulkan")
    with torch.no_grad():
        y = model.to("vulkan")(x)
    y.cpu(); vkdelegate.eager.cache_stats()
"""

import types

import torch

from ..runtime import _vkdelegate

DEVICE = "vulkan"

try:
    from . import _C
except ImportError as error:  # built by setup.py against the installed torch
    raise ImportError(
        f"vkdelegate.eager._C is missing ({error}): build the package with torch installed "
        "(python3 setup.py build_ext --inplace, or pip install --no-build-isolation .)"
    ) from None


def is_available() -> bool:
    """Whether a Vulkan device can be used."""
    return bool(_vkdelegate.is_available())


def device_name() -> str:
    """The Vulkan device the eager tensors live on (the delegate's device)."""
    return _vkdelegate.device_info()["name"]


def device_count() -> int:
    return 1 if is_available() else 0


def current_device() -> int:
    return 0


def synchronize(device=None) -> None:
    """Submits the queued ops and waits for them; a GPU-side fault of one (an index out of
    range, an integer division by zero) is raised here."""
    _vkdelegate._eager_flush()


def queue_limit(ops: int) -> int:
    """Ops the device records into one command buffer before it submits them (default 64; 0:
    each op is submitted and waited for as it is called, so an op's GPU-side fault is raised by
    that op). Any read of device memory by the host (.cpu(), .item(), printing, a CPU fallback)
    submits them first. Returns the previous limit."""
    return _vkdelegate._eager_queue(ops)


def empty_cache() -> None:
    """Gives back to the device the memory of freed tensors that the device keeps for new
    tensors (up to 256 MiB), as torch.cuda.empty_cache() does."""
    _vkdelegate._eager_empty_cache()


def _device_module() -> types.ModuleType:
    """What torch._register_device_module wants: torch.vulkan.is_available() and the rest."""
    module = types.ModuleType(f"torch.{DEVICE}")
    module.__doc__ = "vkdelegate's eager Vulkan device (vkdelegate.eager)"
    module.is_available = is_available
    module.device_count = device_count
    module.current_device = current_device
    module.synchronize = synchronize
    module.empty_cache = empty_cache
    module._is_in_bad_fork = lambda: False
    module.manual_seed_all = lambda seed: None  # random factories draw on the CPU generator
    return module


def _tensor_to_vulkan(self, device=None, non_blocking=False, **kwargs):
    return self.to(torch.device(DEVICE, 0 if device is None else device), non_blocking=non_blocking, **kwargs)


def _module_to_vulkan(self, device=None):
    return self._apply(lambda t: _tensor_to_vulkan(t, device))


def _register() -> None:
    if torch._C._get_privateuse1_backend_name() != DEVICE:
        torch.utils.rename_privateuse1_backend(DEVICE)
    _C.install(_vkdelegate._eager_device_table)
    torch._register_device_module(DEVICE, _device_module())
    # torch.utils.generate_methods_for_privateuse1_backend() stops at Tensor.is_vulkan, which
    # PyTorch already defines for its own (mobile) Vulkan backend: that backend is not built
    # into PyTorch's desktop wheels, and once "vulkan" names this device torch.device("vulkan")
    # means ours, so is_vulkan is redefined to say whether a tensor is on this device.
    torch.Tensor.vulkan = _tensor_to_vulkan
    torch.Tensor.is_vulkan = property(lambda self: self.device.type == DEVICE)
    torch.nn.Module.vulkan = _module_to_vulkan
    _print_through_cpu()


def _print_through_cpu() -> None:
    """Printing a device tensor formats its CPU copy (PyTorch's formatting would otherwise run
    a dozen small ops on the device, each a fallback)."""
    from torch import _tensor_str

    format_values = _tensor_str._tensor_str
    if getattr(format_values, "_vkdelegate_eager", False):
        return

    def _tensor_str_via_cpu(self, indent):
        if self.device.type == DEVICE:
            self = self.cpu()
        return format_values(self, indent)

    _tensor_str_via_cpu._vkdelegate_eager = True
    _tensor_str._tensor_str = _tensor_str_via_cpu


_register()

from .dispatch import cache_stats, clear_cache  # noqa: E402  (registers the op kernels)

__all__ = ["DEVICE", "is_available", "device_name", "device_count", "current_device", "synchronize", "queue_limit",
           "empty_cache", "cache_stats", "clear_cache"]
