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

// One memory heap of the device, as the runtime sees it.
struct HeapReport {
  VkDeviceSize size = 0;
  bool device_local = false;
  // VK_EXT_memory_budget's budget and usage of the whole process (0 without it).
  VkDeviceSize budget = 0;
  VkDeviceSize usage = 0;
  VkDeviceSize block_bytes = 0;  // our blocks in this heap
  VkDeviceSize used_bytes = 0;   // of which buffers hold this much
};

class Allocator {
 public:
  explicit Allocator(Context& ctx);
  ~Allocator();

  // Throws OutOfMemoryError when the memory cannot be had (the device's or
  // VKDELEGATE_MEMORY_LIMIT_MB's).
  Allocation allocate(const VkMemoryRequirements& req, MemoryUsage usage);
  void free(Allocation& a);
  AllocatorStats stats() const;
  std::vector<HeapReport> heaps() const;

  // The memory type a buffer of `usage` takes (any buffer's), and its heap.
  uint32_t memory_type(MemoryUsage usage) const { return choose_type(~0u, usage); }
  uint32_t heap_of(uint32_t type) const;
  bool host_coherent(uint32_t type) const;
  // Whether buffers of MemoryUsage::Device come mapped for the host (one memory for host
  // and GPU, as lavapipe's and phones'), unless DISCRETE_MEMORY hides it.
  bool device_memory_mapped() const;
  // Bytes that new buffers in `heap` can still get: free space in our blocks
  // there, and what the heap can still give (VK_EXT_memory_budget's budget less
  // its usage, else its size less our blocks), within VKDELEGATE_MEMORY_LIMIT_MB.
  VkDeviceSize available(uint32_t heap) const;

 private:
  uint32_t choose_type(uint32_t type_bits, MemoryUsage usage) const;
  MemoryBlock* new_block(uint32_t type, VkDeviceSize request);
  // With mutex_ held:
  std::vector<HeapReport> heaps_locked() const;
  VkDeviceSize room_for_blocks(uint32_t heap) const;
  VkDeviceSize total_block_bytes() const;

  Context& ctx_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<MemoryBlock>> blocks_;
  VkDeviceSize limit_ = 0;  // VKDELEGATE_MEMORY_LIMIT_MB in bytes; 0: none
  bool hide_device_mapping_ = false;  // VKDELEGATE_DISCRETE_MEMORY
};

// "123456789 bytes (117.7 MiB)"
std::string bytes_str(uint64_t bytes);

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
