// The runtime's half of the eager device (compiled into vkdelegate.runtime._vkdelegate, which
// owns the one Vulkan Context): device buffers for the torch extension's tensors, copies
// between them and the host (the C table of device_table.h, in a PyCapsule), and one-op graphs
// run on those buffers (_eager_run).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "../../runtime/graph/compute_graph.h"
#include "../../runtime/vk/context.h"
#include "../../runtime/settings.h"
#include "../../runtime/vk/memory.h"
#include "device_table.h"

namespace py = pybind11;

namespace vkd {
namespace {

thread_local std::string g_last_error;

constexpr VkAccessFlags kAllRW = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                 VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkPipelineStageFlags kComputeTransfer =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;

void barrier(VkCommandBuffer cmd, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = kAllRW;
  b.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cmd, kComputeTransfer, dst_stage, 0, 1, &b, 0, nullptr, 0, nullptr);
}


// Every use of the device by the eager path takes this lock (recursive: a run that goes
// through the host calls the copies).
std::recursive_mutex g_mutex;
// The Vulkan objects below live as long as the process, like the runtime's Context: never
// destroyed by a static destructor, which runs after the driver's own exit handlers (the NVIDIA
// driver then crashes the process at exit). Tensors and graphs Python frees at shutdown still
// release theirs, before the driver goes.
// Copies and staging: one command buffer each, submitted and waited for.
std::unique_ptr<CommandStream>& g_stream = *new std::unique_ptr<CommandStream>;

// Queued ops: one-op graphs recorded into a command buffer (a batch), submitted once it holds
// g_queue_limit ops without waiting (the host records the next batch while the GPU runs it; at
// most kMaxInFlight batches run at once), and waited for, all of them, at the next sync point
// (a read or write by the host, a run through the host, flush()). Buffers released meanwhile
// go back to the pool once the batch that may use them has finished.
struct Batch {
  std::unique_ptr<CommandStream> stream;
  std::vector<ComputeGraph*> graphs;
  std::vector<Buffer*> released;
  std::vector<std::unique_ptr<Buffer>> staging;  // uploads recorded in it
  std::vector<VkDescriptorPool> pools;           // the descriptor sets of graphs bound to tensors
};
struct Queue {
  Batch batch;  // being recorded, if open
  bool open = false;
  size_t ops = 0;
  std::deque<Batch> in_flight;  // submitted, oldest first
  std::vector<std::unique_ptr<CommandStream>> spare;
  std::vector<VkDescriptorPool> spare_pools;
  // Buffers the open and running batches read or write: the host maps one of them only after a flush.
  std::unordered_set<const Buffer*> used;
};
constexpr size_t kMaxInFlight = 2;
Queue& g_queue = *new Queue;
size_t g_queue_limit = 64;  // 0: each op submitted and waited for
uint64_t g_submits = 0;     // batches of queued ops submitted
double g_submit_seconds = 0;  // spent submitting them and waiting for them
uint64_t g_bound_runs = 0, g_copied_runs = 0;  // queued graph runs on the tensors' buffers / with copies


// Freed tensors' buffers, kept for the next tensors of their size class (as PyTorch's CUDA caching
// allocator): creating a Vulkan buffer, binding its memory, and freeing a memory block its last
// buffer leaves, cost more than the small op that asked for it. At most kPoolBytes are kept;
// vkdelegate.eager.empty_cache() and an allocation that finds no memory give them back.
constexpr uint64_t kPoolBytes = 256ull << 20;
struct Pool {
  std::multimap<uint64_t, Buffer*> free;  // by size class
  uint64_t bytes = 0;
};
Pool& g_pool = *new Pool;

// A buffer's size class: at most 1/8 larger than asked (8 classes per power of two), from 256 bytes.
uint64_t size_class(uint64_t nbytes) {
  if (nbytes <= 256) return 256;
  uint64_t top = 1;
  while (top < nbytes) top <<= 1;
  const uint64_t step = std::max<uint64_t>(top / 16, 32);
  return (nbytes + step - 1) / step * step;
}

void pool_put_locked(Buffer* b) {
  if (g_pool.bytes + b->size() > kPoolBytes) {
    delete b;
    return;
  }
  g_pool.free.emplace(b->size(), b);
  g_pool.bytes += b->size();
}

void pool_clear_locked() {
  for (auto& [size, b] : g_pool.free) delete b;
  g_pool.free.clear();
  g_pool.bytes = 0;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Submits the open batch without waiting for it.
void submit_locked() {
  if (!g_queue.open) return;
  g_queue.open = false;
  g_queue.ops = 0;
  Batch batch = std::move(g_queue.batch);
  g_queue.batch = Batch{};
  try {
    // The host reads what the batch wrote once it finishes (and a later batch's first barrier
    // orders it after this one).
    barrier(batch.stream->handle(), kComputeTransfer | VK_PIPELINE_STAGE_HOST_BIT, kAllRW | VK_ACCESS_HOST_READ_BIT);
    batch.stream->end();
    const auto start = std::chrono::steady_clock::now();
    batch.stream->submit();
    g_submit_seconds += seconds_since(start);
    ++g_submits;
  } catch (...) {
    for (Buffer* b : batch.released) delete b;
    throw;
  }
  g_queue.in_flight.push_back(std::move(batch));
}

// Waits for the oldest running batch and frees what it held; the first GPU-side fault of its
// graphs goes to `fault`.
void retire_oldest_locked(std::string& fault) {
  Batch batch = std::move(g_queue.in_flight.front());
  g_queue.in_flight.pop_front();
  try {
    const auto start = std::chrono::steady_clock::now();
    batch.stream->wait();
    g_submit_seconds += seconds_since(start);
  } catch (...) {
    for (Buffer* b : batch.released) delete b;
    throw;
  }
  for (Buffer* b : batch.released) pool_put_locked(b);
  g_queue.spare.push_back(std::move(batch.stream));
  for (VkDescriptorPool pool : batch.pools) {
    VKD_CHECK(vkResetDescriptorPool(Context::get()->device(), pool, 0));
    g_queue.spare_pools.push_back(pool);
  }
  std::sort(batch.graphs.begin(), batch.graphs.end());
  batch.graphs.erase(std::unique(batch.graphs.begin(), batch.graphs.end()), batch.graphs.end());
  for (ComputeGraph* g : batch.graphs) {
    try {
      g->check_faults();
    } catch (const std::exception& e) {
      if (fault.empty()) fault = e.what();
    }
  }
}

// Submits the queued ops and waits for every batch; throws the first GPU-side fault of their graphs.
void flush_locked() {
  submit_locked();
  std::string fault;
  while (!g_queue.in_flight.empty()) retire_oldest_locked(fault);
  g_queue.used.clear();
  if (!fault.empty()) throw ExecuteFault(fault);
}

// One more op in the open batch: at the limit it is submitted, and the oldest batches waited for
// while more than kMaxInFlight run.
void count_op_locked() {
  if (++g_queue.ops < g_queue_limit) return;
  submit_locked();
  std::string fault;
  while (g_queue.in_flight.size() > kMaxInFlight) retire_oldest_locked(fault);
  if (!fault.empty()) throw ExecuteFault(fault);
}

Context& context() {
  Context* ctx = Context::get();
  if (!ctx) throw VulkanError("no Vulkan device is available: " + Context::unavailable_reason());
  return *ctx;
}

bool context_available() { return Context::get() != nullptr; }

// The queue's command buffer, begun if it was not, behind a barrier that orders what is
// recorded next after everything recorded before (g_mutex held); `ordered` false: no barrier
// (the caller records its own first).
VkCommandBuffer queue_commands(bool ordered = true) {
  if (!g_queue.open) {
    if (g_queue.spare.empty()) {
      g_queue.batch.stream = std::make_unique<CommandStream>(context());
    } else {
      g_queue.batch.stream = std::move(g_queue.spare.back());
      g_queue.spare.pop_back();
    }
    g_queue.batch.stream->begin();
    g_queue.open = true;
  }
  const VkCommandBuffer cmd = g_queue.batch.stream->handle();
  if (ordered) barrier(cmd, kComputeTransfer, kAllRW);
  return cmd;
}

// Before the host maps bytes of b: the queued commands that use b must have finished.
void flush_if_used(const Buffer* b) {
  if (g_queue.used.count(b)) flush_locked();
}

// Records fn(cmd) between full barriers and waits for it.
template <typename Fn>
void run_commands(Context& ctx, Fn&& fn) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  flush_locked();
  if (!g_stream) g_stream = std::make_unique<CommandStream>(ctx);
  VkCommandBuffer cmd = g_stream->begin();
  barrier(cmd, kComputeTransfer, kAllRW);
  fn(cmd);
  barrier(cmd, kComputeTransfer | VK_PIPELINE_STAGE_HOST_BIT, kAllRW | VK_ACCESS_HOST_READ_BIT);
  g_stream->end();
  g_stream->submit_and_wait();
}

template <typename Fn>
int guarded(Fn&& fn) {
  try {
    fn();
    return VKD_EAGER_OK;
  } catch (const OutOfMemoryError& e) {
    g_last_error = e.what();
    return VKD_EAGER_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    g_last_error = e.what();
    return VKD_EAGER_ERROR;
  }
}

void check_range(const Buffer* b, uint64_t offset, uint64_t nbytes, const char* what) {
  if (offset > b->size() || nbytes > b->size() - offset) {
    throw VulkanError(std::string(what) + ": bytes [" + std::to_string(offset) + ", " +
                      std::to_string(offset + nbytes) + ") are outside a buffer of " +
                      std::to_string(b->size()));
  }
}

int eager_alloc(uint64_t nbytes, void** out) {
  const uint64_t size = size_class(std::max<uint64_t>(nbytes, 1));
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  auto it = g_pool.free.find(size);
  if (it != g_pool.free.end()) {
    *out = it->second;
    g_pool.bytes -= size;
    g_pool.free.erase(it);
    return VKD_EAGER_OK;
  }
  int rc = guarded([&] { *out = new Buffer(context(), size, MemoryUsage::Device); });
  if (rc != VKD_EAGER_OK && !g_pool.free.empty()) {  // the kept buffers' memory may be what is missing
    pool_clear_locked();
    rc = guarded([&] { *out = new Buffer(context(), size, MemoryUsage::Device); });
  }
  // The driver may refuse a buffer too large for it at vkCreateBuffer, before any memory is
  // asked for: that too is a buffer the device cannot hold.
  return rc == VKD_EAGER_ERROR && context_available() ? VKD_EAGER_OUT_OF_MEMORY : rc;
}

void eager_release(void* buffer) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (g_queue.open) {  // queued ops may use it
    g_queue.batch.released.push_back(static_cast<Buffer*>(buffer));
  } else if (!g_queue.in_flight.empty()) {
    g_queue.in_flight.back().released.push_back(static_cast<Buffer*>(buffer));
  } else {
    pool_put_locked(static_cast<Buffer*>(buffer));
  }
}

int eager_write(void* buffer, uint64_t offset, const void* src, uint64_t nbytes) {
  return guarded([&] {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    auto* b = static_cast<Buffer*>(buffer);
    check_range(b, offset, nbytes, "write");
    if (nbytes == 0) return;
    if (b->mapped()) {
      flush_if_used(b);
      std::memcpy(b->mapped() + offset, src, nbytes);
      return;
    }
    Context& ctx = context();
    // A small buffer kept for good keeps the upload memory block that staging buffers share
    // (otherwise each flush frees the block with its last staging buffer and the next upload maps
    // a new one).
    static Buffer* const upload_anchor = new Buffer(ctx, 4, MemoryUsage::Upload, VK_BUFFER_USAGE_TRANSFER_SRC_BIT);
    (void)upload_anchor;
    auto staging = std::make_unique<Buffer>(ctx, nbytes, MemoryUsage::Upload, VK_BUFFER_USAGE_TRANSFER_SRC_BIT);
    std::memcpy(staging->mapped(), src, nbytes);
    const VkBufferCopy region{0, offset, nbytes};
    if (g_queue_limit > 0) {  // an upload in order with the queued ops: no wait
      vkCmdCopyBuffer(queue_commands(), staging->handle(), b->handle(), 1, &region);
      g_queue.used.insert(b);
      g_queue.batch.staging.push_back(std::move(staging));
      return;
    }
    run_commands(ctx, [&](VkCommandBuffer cmd) { vkCmdCopyBuffer(cmd, staging->handle(), b->handle(), 1, &region); });
  });
}

// Reads of memory the host cannot map go through a host-visible buffer kept for the next read
// (up to kKeptReadback bytes; a larger read takes one of its own, in `temporary`): a new one
// each time would create a buffer and, on a discrete GPU, allocate and map a memory block.
constexpr uint64_t kKeptReadback = 16ull << 20;
std::unique_ptr<Buffer>& g_readback = *new std::unique_ptr<Buffer>;

Buffer& readback_staging(Context& ctx, uint64_t nbytes, std::unique_ptr<Buffer>& temporary) {
  if (nbytes > kKeptReadback) {
    temporary = std::make_unique<Buffer>(ctx, nbytes, MemoryUsage::Readback, VK_BUFFER_USAGE_TRANSFER_DST_BIT);
    return *temporary;
  }
  if (!g_readback || g_readback->size() < nbytes) {
    uint64_t size = 64 << 10;
    while (size < nbytes) size <<= 1;
    g_readback.reset();
    g_readback = std::make_unique<Buffer>(ctx, size, MemoryUsage::Readback, VK_BUFFER_USAGE_TRANSFER_DST_BIT);
  }
  return *g_readback;
}

int eager_read(const void* buffer, uint64_t offset, void* dst, uint64_t nbytes) {
  return guarded([&] {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    const auto* b = static_cast<const Buffer*>(buffer);
    check_range(b, offset, nbytes, "read");
    if (nbytes == 0) return;
    if (b->mapped()) {
      flush_if_used(b);
      std::memcpy(dst, b->mapped() + offset, nbytes);
      return;
    }
    Context& ctx = context();
    std::unique_ptr<Buffer> temporary;
    Buffer& staging = readback_staging(ctx, nbytes, temporary);
    const VkBufferCopy region{offset, 0, nbytes};
    if (g_queue.open || !g_queue.in_flight.empty()) {
      // After queued ops (the usual .cpu() of a result): the read-back joins their last batch, so one
      // submit and wait serves both (submit_locked's last barrier makes it visible to the host).
      vkCmdCopyBuffer(queue_commands(), b->handle(), staging.handle(), 1, &region);
      flush_locked();
    } else {
      run_commands(ctx, [&](VkCommandBuffer cmd) { vkCmdCopyBuffer(cmd, b->handle(), staging.handle(), 1, &region); });
    }
    std::memcpy(dst, staging.mapped(), nbytes);
  });
}

int eager_copy(const void* src, uint64_t src_offset, void* dst, uint64_t dst_offset, uint64_t nbytes) {
  return guarded([&] {
    const auto* s = static_cast<const Buffer*>(src);
    auto* d = static_cast<Buffer*>(dst);
    check_range(s, src_offset, nbytes, "copy source");
    check_range(d, dst_offset, nbytes, "copy destination");
    if (nbytes == 0) return;
    if (s == d && src_offset < dst_offset + nbytes && dst_offset < src_offset + nbytes) {
      throw VulkanError("copy: overlapping source and destination");
    }
    const VkBufferCopy region{src_offset, dst_offset, nbytes};
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    if (g_queue_limit > 0) {  // in order with the queued ops
      vkCmdCopyBuffer(queue_commands(), s->handle(), d->handle(), 1, &region);
      g_queue.used.insert(s);
      g_queue.used.insert(d);
      count_op_locked();
      return;
    }
    run_commands(context(), [&](VkCommandBuffer cmd) { vkCmdCopyBuffer(cmd, s->handle(), d->handle(), 1, &region); });
  });
}

const char* eager_last_error() { return g_last_error.c_str(); }

// One graph input or output on a device tensor's buffer: the buffer handle (the torch
// tensor's storage data pointer), the byte offset of its first element, and (inputs) its sizes.
struct Binding {
  Buffer* buffer;
  uint64_t offset;
  Sizes sizes;
};

// A descriptor set for a graph bound to tensors' buffers (record_bound), from the open batch's
// pools (reset when the batch has finished).
VkDescriptorSet allocate_set(VkDescriptorSetLayout layout) {
  Batch& batch = g_queue.batch;
  VkDevice device = context().device();
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt > 0 || batch.pools.empty()) {
      VkDescriptorPool pool = VK_NULL_HANDLE;
      if (!g_queue.spare_pools.empty()) {
        pool = g_queue.spare_pools.back();
        g_queue.spare_pools.pop_back();
      } else {
        constexpr uint32_t kSets = 256;
        const VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSets * 12},
                                               {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, kSets}};
        VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        pci.maxSets = kSets;
        pci.poolSizeCount = 2;
        pci.pPoolSizes = sizes;
        VKD_CHECK(vkCreateDescriptorPool(device, &pci, nullptr, &pool));
      }
      batch.pools.push_back(pool);
    }
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = batch.pools.back();
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    const VkResult r = vkAllocateDescriptorSets(device, &ai, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) VKD_CHECK(r);
  }
  throw VulkanError("eager run: a fresh descriptor pool cannot hold a graph's descriptor set");
}

bool same_bytes(const Tensor& t) { return storage_size(t.storage_type) == dtype_size(t.dtype); }

// Runs a one-op graph on device tensors. Where the graph stores a tensor as its dtype's bytes
// (float32, float16, int32; int64 where the device has int64), the input and output copies are
// device-to-device copies recorded in the graph's own command buffer (its prologue and
// epilogue); bool and 8-bit tensors (int32 on the GPU), and int64 stored as int32, go through
// the host, converted as a delegate's inputs and outputs are.
// Copies from the inputs' buffers into the graph's input storage, and from its output storage
// into the outputs' buffers, for the tensors stored as their dtype's bytes.
// A state an op updates in place (index_put, vkd_rope_kv_update into a KV cache): the device
// tensor it starts from, copied into the state's storage before the dispatches. That storage is
// the graph's output `output` (ComputeGraph::alias_state), which the op then writes in place and
// copies_out copies into its own tensor: the op stays functional, its input tensor untouched.
struct StateBinding {
  Buffer* buffer;
  uint64_t offset;
  size_t output;
};

std::function<void(VkCommandBuffer)> copies_in(ComputeGraph& g, const std::vector<Binding>& inputs,
                                               const std::vector<StateBinding>& states) {
  return [&g, inputs, states](VkCommandBuffer cmd) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = g.input(i);
      if (!same_bytes(t) || t.storage_nbytes() == 0) continue;
      VkBufferCopy region{inputs[i].offset, 0, t.storage_nbytes()};
      vkCmdCopyBuffer(cmd, inputs[i].buffer->handle(), g.input_buffer(i), 1, &region);
    }
    for (const StateBinding& s : states) {
      VkBufferCopy region{s.offset, 0, g.output(s.output).storage_nbytes()};
      vkCmdCopyBuffer(cmd, s.buffer->handle(), g.output_buffer(s.output), 1, &region);
    }
  };
}

std::function<void(VkCommandBuffer)> copies_out(ComputeGraph& g, const std::vector<Binding>& outputs) {
  return [&g, outputs](VkCommandBuffer cmd) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& t = g.output(i);
      if (!same_bytes(t) || t.storage_nbytes() == 0) continue;
      VkBufferCopy region{0, outputs[i].offset, t.storage_nbytes()};
      vkCmdCopyBuffer(cmd, g.output_buffer(i), outputs[i].buffer->handle(), 1, &region);
    }
  };
}

// Whether the graph can read its inputs and write its outputs in the tensors' own buffers (no
// copies): no states, outputs that overlap no other operand's buffer, and ComputeGraph::bindable.
bool bound_in_place(const ComputeGraph& g, const std::vector<Binding>& inputs, const std::vector<Binding>& outputs,
                    const std::vector<StateBinding>& states) {
  if (!states.empty() || process_settings().eager_copies) return false;
  std::vector<std::pair<VkDeviceSize, VkDeviceSize>> where;
  for (const Binding& b : inputs) where.emplace_back(b.offset, b.buffer->size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (const Binding& b : inputs) if (b.buffer == outputs[i].buffer) return false;
    for (size_t j = 0; j < outputs.size(); ++j) if (j != i && outputs[j].buffer == outputs[i].buffer) return false;
    where.emplace_back(outputs[i].offset, outputs[i].buffer->size());
  }
  return g.bindable(where);
}

// Runs a one-op graph on device tensors (g_mutex and the graph's lock held). Where the graph
// stores every operand as its dtype's bytes (float32, float16, int32; int64 where the device
// has int64), the op joins the queue: bound to the tensors' buffers (record_bound) or with
// device-to-device copies around its dispatches (record_into); with a queue limit of 0 the
// queue is submitted and waited for at once. bool and 8-bit tensors (int32 on the GPU), and
// int64 stored as int32, go through the host, converted as a delegate's inputs and outputs are,
// in the graph's own command buffer (copies in its prologue and epilogue): such a run waits for
// the queue and for itself.
void run_on_buffers(ComputeGraph& g, const std::vector<Binding>& inputs, const std::vector<Binding>& outputs,
                    const std::vector<StateBinding>& states) {
  if (inputs.size() != g.num_inputs() || outputs.size() != g.num_outputs()) {
    throw GraphError("eager run: the graph has " + std::to_string(g.num_inputs()) + " inputs and " +
                     std::to_string(g.num_outputs()) + " outputs; got " + std::to_string(inputs.size()) +
                     " and " + std::to_string(outputs.size()));
  }
  bool direct = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    g.set_input_sizes(i, inputs[i].sizes);
    check_range(inputs[i].buffer, inputs[i].offset, g.input(i).nbytes(), "graph input");
    direct = direct && same_bytes(g.input(i));
  }
  g.update_sizes();
  for (size_t i = 0; i < outputs.size(); ++i) {
    check_range(outputs[i].buffer, outputs[i].offset, g.output(i).nbytes(), "graph output");
    direct = direct && same_bytes(g.output(i));
  }
  for (const StateBinding& st : states) {
    if (st.output >= outputs.size()) throw GraphError("eager run: a state's output index is out of range");
    const Tensor& t = g.output(st.output);
    if (!same_bytes(t)) {
      throw GraphError("eager run: a state stored in another dtype on the GPU (bool, 8-bit, int64 as int32) "
                       "cannot start from a device tensor");
    }
    check_range(st.buffer, st.offset, t.nbytes(), "graph state");
  }
  if (direct) {
    // record_into's and record_bound's first barrier orders the graph after everything recorded before it.
    const VkCommandBuffer cmd = queue_commands(false);
    if (bound_in_place(g, inputs, outputs, states)) {
      std::vector<ComputeGraph::ExternalTensor> external;
      for (size_t i = 0; i < inputs.size(); ++i) {
        external.push_back({g.input_id(i), inputs[i].buffer->handle(), inputs[i].offset});
      }
      for (size_t i = 0; i < outputs.size(); ++i) {
        external.push_back({g.output_id(i), outputs[i].buffer->handle(), outputs[i].offset});
      }
      g.record_bound(cmd, external, allocate_set);
      ++g_bound_runs;
    } else {
      g.record_into(cmd, copies_in(g, inputs, states), copies_out(g, outputs));
      ++g_copied_runs;
    }
    g_queue.batch.graphs.push_back(&g);
    for (const StateBinding& b : states) g_queue.used.insert(b.buffer);
    for (const Binding& b : inputs) g_queue.used.insert(b.buffer);
    for (const Binding& b : outputs) g_queue.used.insert(b.buffer);
    if (g_queue_limit == 0) {
      flush_locked();  // each op submitted and waited for: its GPU-side fault raised by the op
    } else {
      count_op_locked();
    }
    return;
  }
  flush_locked();
  std::vector<uint8_t> host;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = g.input(i);
    if (same_bytes(t)) continue;
    host.resize(t.nbytes());
    if (eager_read(inputs[i].buffer, inputs[i].offset, host.data(), host.size()) != VKD_EAGER_OK) {
      throw VulkanError(g_last_error);
    }
    g.copy_input(i, host.data(), host.size());
  }
  g.set_prologue(copies_in(g, inputs, states));
  g.set_epilogue(copies_out(g, outputs));
  try {
    g.execute();
  } catch (...) {
    g.set_prologue(nullptr);
    g.set_epilogue(nullptr);
    throw;
  }
  // The next run binds other buffers: keep no handles to these.
  g.set_prologue(nullptr);
  g.set_epilogue(nullptr);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = g.output(i);
    if (same_bytes(t)) continue;
    host.resize(t.nbytes());
    g.copy_output(i, host.data(), host.size());
    if (eager_write(outputs[i].buffer, outputs[i].offset, host.data(), host.size()) != VKD_EAGER_OK) {
      throw VulkanError(g_last_error);
    }
  }
}

int eager_run(void* graph, const VkdEagerBinding* inputs, uint32_t num_inputs, const VkdEagerBinding* outputs,
              uint32_t num_outputs, const VkdEagerState* states, uint32_t num_states) {
  return guarded([&] {
    auto* g = static_cast<ComputeGraph*>(graph);
    if (g == nullptr) throw GraphError("eager run: no graph");
    const auto buffer = [](void* b) {
      if (b == nullptr) throw GraphError("eager run: a tensor without device memory");
      return static_cast<Buffer*>(b);
    };
    std::vector<Binding> in(num_inputs), out(num_outputs);
    std::vector<StateBinding> st(num_states);
    for (uint32_t i = 0; i < num_inputs; ++i) {
      in[i] = {buffer(inputs[i].buffer), inputs[i].offset, Sizes(inputs[i].sizes, inputs[i].sizes + inputs[i].ndim)};
    }
    for (uint32_t i = 0; i < num_outputs; ++i) out[i] = {buffer(outputs[i].buffer), outputs[i].offset, {}};
    for (uint32_t i = 0; i < num_states; ++i) st[i] = {buffer(states[i].buffer), states[i].offset, states[i].output};
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    std::lock_guard<std::mutex> graph_lock(g->mutex());
    run_on_buffers(*g, in, out, st);
  });
}

const VkdEagerTable kTable = {
    VKD_EAGER_TABLE_VERSION, &eager_alloc, &eager_release, &eager_write, &eager_read,
    &eager_copy,             &eager_run,   &eager_last_error,
};

std::vector<Binding> bindings(const py::list& items, bool with_sizes) {
  std::vector<Binding> out;
  for (const py::handle& item : items) {
    const auto t = item.cast<py::tuple>();
    Binding b{reinterpret_cast<Buffer*>(t[0].cast<uintptr_t>()), t[1].cast<uint64_t>(), {}};
    if (b.buffer == nullptr) throw GraphError("eager run: a tensor without device memory");
    if (with_sizes) b.sizes = t[2].cast<Sizes>();
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace

void register_eager(py::module_& m) {
  m.attr("_eager_device_table") =
      py::capsule(const_cast<VkdEagerTable*>(&kTable), VKD_EAGER_TABLE_CAPSULE);
  m.def("_eager_run", [](ComputeGraph& g, const py::list& inputs, const py::list& outputs, const py::list& states) {
    const std::vector<Binding> in = bindings(inputs, true), out = bindings(outputs, false);
    std::vector<StateBinding> st;
    for (const py::handle& item : states) {
      const auto t = item.cast<py::tuple>();
      StateBinding b{reinterpret_cast<Buffer*>(t[0].cast<uintptr_t>()), t[1].cast<uint64_t>(), t[2].cast<size_t>()};
      if (b.buffer == nullptr) throw GraphError("eager run: a tensor without device memory");
      st.push_back(b);
    }
    py::gil_scoped_release release;
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    std::lock_guard<std::mutex> graph_lock(g.mutex());
    run_on_buffers(g, in, out, st);
  }, py::arg("graph"), py::arg("inputs"), py::arg("outputs"), py::arg("states") = py::list(),
     "Runs a graph on the eager device's buffers: inputs [(buffer, byte offset, sizes)], outputs "
     "[(buffer, byte offset)], states [(buffer, byte offset, output index)]: the tensors the states an op "
     "updates in place start from, copied into the storage of the output that aliases each "
     "(vkdelegate.eager; buffers are its tensors' storage data pointers).");
  m.def("_eager_flush", [] {
    py::gil_scoped_release release;
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    flush_locked();
  }, "Submits the eager device's queued ops and waits for them (raises their GPU-side faults).");
  m.def("_eager_queue", [](int64_t limit) {
    if (limit < 0) throw std::invalid_argument("the queue limit is a count of ops, >= 0");
    py::gil_scoped_release release;
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    flush_locked();
    const size_t previous = g_queue_limit;
    g_queue_limit = static_cast<size_t>(limit);
    return previous;
  }, py::arg("limit"), "Ops the eager device queues before it submits them (0: each op at once); returns "
     "the previous limit.");
  m.def("_eager_submits", [] { return std::make_pair(g_submits, g_submit_seconds); },
        "(command buffers of queued ops submitted so far, seconds spent submitting them and waiting for them).");
  m.def("_eager_runs", [] {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    return std::make_pair(g_bound_runs, g_copied_runs);
  }, "(queued graph runs bound to the tensors' buffers, queued runs that copied their operands) so far.");
  m.def("_eager_graph_address", [](ComputeGraph& g) { return reinterpret_cast<uintptr_t>(&g); }, py::arg("graph"),
        "The graph's address, for the device table's run (the caller keeps the Graph alive).");
  m.def("_eager_pool", [] {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    return std::make_pair(g_pool.free.size(), g_pool.bytes);
  }, "(buffers, bytes) of freed tensors' buffers kept for new tensors.");
  m.def("_eager_empty_cache", [] {
    py::gil_scoped_release release;
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    flush_locked();
    pool_clear_locked();
    g_readback.reset();
  }, "Gives back the freed tensors' buffers kept for new tensors, and the read-back staging buffer.");
}

}  // namespace vkd
