// The eager device's access to the runtime's one Vulkan context: a table of C functions that
// the runtime module (vkdelegate.runtime._vkdelegate) exports in a PyCapsule. The torch
// extension (vkdelegate.eager._C) links libtorch and the runtime links ExecuTorch (each
// brings its own c10): neither links the other, and both reach the same Context.
#pragma once

#include <stdint.h>

#define VKD_EAGER_TABLE_VERSION 2
#define VKD_EAGER_TABLE_CAPSULE "vkdelegate.eager_device_table"

// Return codes of the table's functions; last_error() says what failed.
enum { VKD_EAGER_OK = 0, VKD_EAGER_ERROR = 1, VKD_EAGER_OUT_OF_MEMORY = 2 };

// A graph input or output on a device buffer: the buffer, the byte offset of its first element,
// and (inputs) its sizes.
struct VkdEagerBinding {
  void* buffer;
  uint64_t offset;
  const int64_t* sizes;
  uint32_t ndim;
};

// A state an op updates in place (a KV cache): the device tensor it starts from, copied into the
// storage of the graph's output `output`, which aliases the state.
struct VkdEagerState {
  void* buffer;
  uint64_t offset;
  uint32_t output;
};

struct VkdEagerTable {
  uint32_t version;
  // A device buffer of at least nbytes (> 0) bytes; *buffer is its opaque handle.
  int (*alloc)(uint64_t nbytes, void** buffer);
  void (*release)(void* buffer);
  // Host <-> device and device -> device copies; each returns once the copy is done.
  int (*write)(void* buffer, uint64_t offset, const void* src, uint64_t nbytes);
  int (*read)(const void* buffer, uint64_t offset, void* dst, uint64_t nbytes);
  int (*copy)(const void* src, uint64_t src_offset, void* dst, uint64_t dst_offset, uint64_t nbytes);
  // Runs a loaded one-op graph (the runtime's graph: vkdelegate.runtime._vkdelegate._eager_graph_address)
  // on device buffers, queued as _eager_run does.
  int (*run)(void* graph, const VkdEagerBinding* inputs, uint32_t num_inputs, const VkdEagerBinding* outputs,
             uint32_t num_outputs, const VkdEagerState* states, uint32_t num_states);
  // The calling thread's last error message.
  const char* (*last_error)(void);
};
