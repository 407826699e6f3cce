from .vulkan_partitioner import VulkanPartitioner

__all__ = ["VulkanPartitioner"]
