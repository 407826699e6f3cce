from .vulkan_preprocess import VkDelegateBackend

__all__ = ["VkDelegateBackend"]
