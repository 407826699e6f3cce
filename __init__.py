"""vkdelegate: an ExecuTorch delegate that runs PyTorch models on GPUs through Vulkan compute."""
# Absolute: pytest also imports this file on its own, as the package of the repository root.
from vkdelegate import third_party_noise as _third_party_noise

_third_party_noise.install()
