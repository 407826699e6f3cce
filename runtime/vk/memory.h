// Device memory: a sub-allocator that carves buffers out of large blocks (one
// vkAllocateMemory per block, not per tensor), and a Buffer that owns a VkBuffer
// bound to one sub-allocation.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "context.h"

namespace vkd {

enum class MemoryUsage {
  Device,   // GPU only; device-local preferred
  Upload,   // host writes, GPU reads: host-visible, coherent; device-local preferred
  Readback, // GPU writes, host reads: host-visible, coherent; cached preferred
};

struct MemoryBlock;

struct Allocation {
  MemoryBlock* block = nullptr;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
  uint8_t* mapped = nullptr;  // non-null when the memory is host-visible
  bool device_local = false;
};

struct AllocatorStats {
  uint64_t blocks = 0;
  uint64_t block_bytes = 0;
  uint64_t used_bytes = 0;
};

class Allocator {
 public:
  explicit Allocator(Context& ctx);
  ~Allocator();

  Allocation allocate(const VkMemoryRequirements& req, MemoryUsage usage);
  void free(Allocation& a);
  AllocatorStats stats() const;

 private:
  uint32_t choose_type(uint32_t type_bits, MemoryUsage usage) const;
  MemoryBlock* new_block(uint32_t type, VkDeviceSize size);

  Context& ctx_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<MemoryBlock>> blocks_;
};

class Buffer {
 public:
  Buffer(Context& ctx, VkDeviceSize size, MemoryUsage usage,
         VkBufferUsageFlags flags = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_DST_BIT);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  uint8_t* mapped() const { return alloc_.mapped; }
  bool device_local() const { return alloc_.device_local; }

 private:
  Context& ctx_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceSize size_ = 0;
  Allocation alloc_;
};

} // namespace vkd
