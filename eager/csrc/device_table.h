// The eager device's access to the runtime's one Vulkan context: a table of C functions that
// the runtime module (vkdelegate.runtime._vkdelegate) exports in a PyCapsule. The torch
// extension (vkdelegate.eager._C) links libtorch and the runtime links ExecuTorch (each
// brings its own c10): neither links the other, and both reach the same Context.
#pragma once

#include <stdint.h>

#define VKD_EAGER_TABLE_VERSION 1
#define VKD_EAGER_TABLE_CAPSULE "vkdelegate.eager_device_table"

// Return codes of the table's functions; last_error() says what failed.
enum { VKD_EAGER_OK = 0, VKD_EAGER_ERROR = 1, VKD_EAGER_OUT_OF_MEMORY = 2 };

struct VkdEagerTable {
  uint32_t version;
  // A device buffer of at least nbytes (> 0) bytes; *buffer is its opaque handle.
  int (*alloc)(uint64_t nbytes, void** buffer);
  void (*release)(void* buffer);
  // Host <-> device and device -> device copies; each returns once the copy is done.
  int (*write)(void* buffer, uint64_t offset, const void* src, uint64_t nbytes);
  int (*read)(const void* buffer, uint64_t offset, void* dst, uint64_t nbytes);
  int (*copy)(const void* src, uint64_t src_offset, void* dst, uint64_t dst_offset, uint64_t nbytes);
  // The calling thread's last error message.
  const char* (*last_error)(void);
};
