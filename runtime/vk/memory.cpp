#include "memory.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>

#include "../settings.h"

namespace vkd {

namespace {
constexpr VkDeviceSize kBlockSize = 64ull << 20;

VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) { return (v + a - 1) / a * a; }
}  // namespace

// One vkAllocateMemory. Free space is a map offset -> size of free ranges,
// merged with its neighbours on free; allocation is first fit.
struct MemoryBlock {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint32_t type = 0;
  VkDeviceSize size = 0;
  VkDeviceSize used = 0;
  uint8_t* mapped = nullptr;
  bool device_local = false;
  std::map<VkDeviceSize, VkDeviceSize> free_ranges;

  bool take(VkDeviceSize size, VkDeviceSize alignment, VkDeviceSize* out) {
    for (auto it = free_ranges.begin(); it != free_ranges.end(); ++it) {
      VkDeviceSize start = align_up(it->first, alignment);
      VkDeviceSize end = it->first + it->second;
      if (start + size > end) continue;
      VkDeviceSize range_start = it->first;
      free_ranges.erase(it);
      if (start > range_start) free_ranges[range_start] = start - range_start;
      if (start + size < end) free_ranges[start + size] = end - (start + size);
      used += size;
      *out = start;
      return true;
    }
    return false;
  }

  void give_back(VkDeviceSize offset, VkDeviceSize size) {
    used -= size;
    auto it = free_ranges.emplace(offset, size).first;
    auto next = std::next(it);
    if (next != free_ranges.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_ranges.erase(next);
    }
    if (it != free_ranges.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_ranges.erase(it);
      }
    }
  }
};

std::string bytes_str(uint64_t bytes) {
  char mib[32];
  std::snprintf(mib, sizeof(mib), "%.1f", static_cast<double>(bytes) / (1 << 20));
  return std::to_string(bytes) + " bytes (" + mib + " MiB)";
}

Allocator::Allocator(Context& ctx) : ctx_(ctx) {
  if (const std::optional<int64_t> mb = process_settings().memory_limit_mb) {
    limit_ = static_cast<VkDeviceSize>(*mb) << 20;
  }
  hide_device_mapping_ = process_settings().discrete_memory;
}

bool Allocator::device_memory_mapped() const {
  return !hide_device_mapping_ && host_coherent(memory_type(MemoryUsage::Device));
}

uint32_t Allocator::heap_of(uint32_t type) const {
  return ctx_.memory_properties().memoryTypes[type].heapIndex;
}

bool Allocator::host_coherent(uint32_t type) const {
  const VkMemoryPropertyFlags coherent =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  return (ctx_.memory_properties().memoryTypes[type].propertyFlags & coherent) == coherent;
}

std::vector<HeapReport> Allocator::heaps_locked() const {
  const auto& mp = ctx_.memory_properties();
  std::vector<HeapReport> out(mp.memoryHeapCount);
  for (uint32_t h = 0; h < mp.memoryHeapCount; ++h) {
    out[h].size = mp.memoryHeaps[h].size;
    out[h].device_local = mp.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
  }
  if (ctx_.info().memory_budget) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 mp2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    mp2.pNext = &budget;
    vkGetPhysicalDeviceMemoryProperties2(ctx_.physical_device(), &mp2);
    for (uint32_t h = 0; h < mp.memoryHeapCount; ++h) {
      out[h].budget = budget.heapBudget[h];
      out[h].usage = budget.heapUsage[h];
    }
  }
  for (const auto& b : blocks_) {
    HeapReport& r = out[heap_of(b->type)];
    r.block_bytes += b->size;
    r.used_bytes += b->used;
  }
  return out;
}

std::vector<HeapReport> Allocator::heaps() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return heaps_locked();
}

VkDeviceSize Allocator::total_block_bytes() const {
  VkDeviceSize total = 0;
  for (const auto& b : blocks_) total += b->size;
  return total;
}

VkDeviceSize Allocator::room_for_blocks(uint32_t heap) const {
  const HeapReport report = heaps_locked()[heap];
  VkDeviceSize room = report.budget > 0
                          ? (report.budget > report.usage ? report.budget - report.usage : 0)
                          : (report.size > report.block_bytes ? report.size - report.block_bytes : 0);
  if (limit_) {
    const VkDeviceSize total = total_block_bytes();
    room = std::min(room, limit_ > total ? limit_ - total : 0);
  }
  return room;
}

VkDeviceSize Allocator::available(uint32_t heap) const {
  std::lock_guard<std::mutex> lock(mutex_);
  VkDeviceSize free_in_blocks = 0;
  for (const auto& b : blocks_) {
    if (heap_of(b->type) == heap) free_in_blocks += b->size - b->used;
  }
  return free_in_blocks + room_for_blocks(heap);
}

Allocator::~Allocator() {
  for (auto& b : blocks_) {
    if (b->mapped) vkUnmapMemory(ctx_.device(), b->memory);
    vkFreeMemory(ctx_.device(), b->memory, nullptr);
  }
}

uint32_t Allocator::choose_type(uint32_t type_bits, MemoryUsage usage) const {
  const auto& mp = ctx_.memory_properties();
  VkMemoryPropertyFlags required = 0, preferred = 0, avoided = 0;
  switch (usage) {
    case MemoryUsage::Device:
      preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
      break;
    case MemoryUsage::Upload:
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
      break;
    case MemoryUsage::Readback:
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      preferred = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
      break;
  }
  avoided = VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT;
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
    if ((f & required) != required || (f & avoided)) continue;
    int score = ((f & preferred) == preferred) ? 2 : 0;
    if (score > best_score) {
      best = static_cast<int>(i);
      best_score = score;
    }
  }
  if (best < 0) {
    throw VulkanError("no Vulkan memory type fits the buffer");
  }
  return static_cast<uint32_t>(best);
}

// A block of at least `request` bytes: kBlockSize, or the request rounded up to
// 1 MiB, whichever is larger, if there is room for it; else the request alone.
MemoryBlock* Allocator::new_block(uint32_t type, VkDeviceSize request) {
  const uint32_t heap = heap_of(type);
  const VkDeviceSize room = room_for_blocks(heap);
  const auto out_of_memory = [&](const std::string& why) {
    return OutOfMemoryError("out of GPU memory: a buffer needs " + bytes_str(request) +
                            " of memory heap " + std::to_string(heap) + ", " + bytes_str(room) +
                            " available" + why);
  };
  if (limit_ && request > room) throw out_of_memory(" (VKDELEGATE_MEMORY_LIMIT_MB)");
  const VkDeviceSize preferred = std::max(kBlockSize, align_up(request, 1ull << 20));
  auto block = std::make_unique<MemoryBlock>();
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.memoryTypeIndex = type;
  VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  VkDeviceSize size = 0;
  for (VkDeviceSize s : {preferred, request}) {
    if (s > room && s != request) continue;  // over the budget: try the request alone
    ai.allocationSize = size = s;
    r = vkAllocateMemory(ctx_.device(), &ai, nullptr, &block->memory);
    if (r == VK_SUCCESS || s == request) break;
  }
  if (r != VK_SUCCESS) {
    throw out_of_memory(std::string(" (vkAllocateMemory: ") + result_name(r) + ")");
  }
  const VkMemoryPropertyFlags f = ctx_.memory_properties().memoryTypes[type].propertyFlags;
  // Only coherent memory is mapped, so no flushes are ever needed.
  const VkMemoryPropertyFlags coherent =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if ((f & coherent) == coherent) {
    void* p = nullptr;
    r = vkMapMemory(ctx_.device(), block->memory, 0, VK_WHOLE_SIZE, 0, &p);
    if (r != VK_SUCCESS) {
      vkFreeMemory(ctx_.device(), block->memory, nullptr);
      throw out_of_memory(std::string(" (vkMapMemory: ") + result_name(r) + ")");
    }
    block->mapped = static_cast<uint8_t*>(p);
  }
  block->device_local = f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  block->type = type;
  block->size = size;
  block->free_ranges[0] = size;
  blocks_.push_back(std::move(block));
  return blocks_.back().get();
}

Allocation Allocator::allocate(const VkMemoryRequirements& req, MemoryUsage usage) {
  const uint32_t type = choose_type(req.memoryTypeBits, usage);
  std::lock_guard<std::mutex> lock(mutex_);
  VkDeviceSize offset = 0;
  MemoryBlock* block = nullptr;
  for (auto& b : blocks_) {
    if (b->type == type && b->take(req.size, req.alignment, &offset)) {
      block = b.get();
      break;
    }
  }
  if (!block) {
    block = new_block(type, req.size);
    if (!block->take(req.size, req.alignment, &offset)) {
      throw VulkanError("allocator: fresh block too small");
    }
  }
  Allocation a;
  a.block = block;
  a.memory = block->memory;
  a.offset = offset;
  a.size = req.size;
  const bool hidden = hide_device_mapping_ && usage == MemoryUsage::Device;
  a.mapped = block->mapped && !hidden ? block->mapped + offset : nullptr;
  a.device_local = block->device_local;
  return a;
}

void Allocator::free(Allocation& a) {
  if (!a.block) return;
  std::lock_guard<std::mutex> lock(mutex_);
  a.block->give_back(a.offset, a.size);
  if (a.block->used == 0) {
    auto it = std::find_if(blocks_.begin(), blocks_.end(),
                           [&](const auto& b) { return b.get() == a.block; });
    if ((*it)->mapped) vkUnmapMemory(ctx_.device(), (*it)->memory);
    vkFreeMemory(ctx_.device(), (*it)->memory, nullptr);
    blocks_.erase(it);
  }
  a = Allocation{};
}

AllocatorStats Allocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  AllocatorStats s;
  for (const auto& b : blocks_) {
    s.blocks += 1;
    s.block_bytes += b->size;
    s.used_bytes += b->used;
  }
  return s;
}

Buffer::Buffer(Context& ctx, VkDeviceSize size, MemoryUsage usage,
               VkBufferUsageFlags flags)
    : ctx_(ctx), size_(std::max<VkDeviceSize>(size, 4)) {
  // Above maintenance4's maxBufferSize vkCreateBuffer's behaviour is undefined (VUID-VkBufferCreateInfo-size-06409).
  const VkDeviceSize max_size = ctx.info().max_buffer_size;
  if (max_size > 0 && size_ > max_size) {
    throw OutOfMemoryError("a buffer of " + std::to_string(size_) + " bytes is larger than the " +
                           std::to_string(max_size) + " bytes the device makes (maxBufferSize)");
  }
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = size_;
  bci.usage = flags;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VKD_CHECK(vkCreateBuffer(ctx.device(), &bci, nullptr, &buffer_));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(ctx.device(), buffer_, &req);
  try {
    alloc_ = ctx.allocator().allocate(req, usage);
    VKD_CHECK(vkBindBufferMemory(ctx.device(), buffer_, alloc_.memory, alloc_.offset));
  } catch (...) {
    ctx.allocator().free(alloc_);
    vkDestroyBuffer(ctx.device(), buffer_, nullptr);
    throw;
  }
}

Buffer::~Buffer() {
  vkDestroyBuffer(ctx_.device(), buffer_, nullptr);
  ctx_.allocator().free(alloc_);
}

}  // namespace vkd
