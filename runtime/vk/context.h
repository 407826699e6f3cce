// The one Vulkan context of the process: instance, chosen physical device,
// logical device with one compute queue, memory allocator and pipeline cache.
// Shared by every loaded program; queue submissions are serialized.
#pragma once

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "loader.h"

namespace vkd {

// Every Vulkan failure inside the runtime becomes this exception; the backend
// boundary turns it into an ExecuTorch Error with the message logged.
class VulkanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

const char* result_name(VkResult r);

// A program or buffer that does not fit in the device's memory (or in
// VKDELEGATE_MEMORY_LIMIT_MB); the message gives the bytes needed and available.
class OutOfMemoryError : public VulkanError {
 public:
  using VulkanError::VulkanError;
};

#define VKD_CHECK(expr)                                                     \
  do {                                                                      \
    VkResult vkd_result_ = (expr);                                          \
    if (vkd_result_ != VK_SUCCESS) {                                        \
      throw ::vkd::VulkanError(std::string(#expr " failed: ") +             \
                               ::vkd::result_name(vkd_result_));            \
    }                                                                       \
  } while (0)

class Allocator;
class PipelineCache;

struct DeviceInfo {
  std::string name;
  std::string type;  // "discrete", "integrated", "virtual", "cpu", "other"
  uint32_t api_version = 0;
  uint32_t vendor_id = 0;
  uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false;  // subgroupAdd/Max/... in compute shaders
  uint32_t max_shared_memory = 0;
  VkDeviceSize max_storage_buffer_range = 0;
  VkDeviceSize min_uniform_offset_alignment = 0;
  VkDeviceSize min_storage_offset_alignment = 0;
  uint32_t driver_id = 0;  // VkDriverId; 0 where the device has no Vulkan 1.2
  std::string driver;      // the driver's name and version text (empty without Vulkan 1.2)
  // Parameter blocks are bound as storage buffers, not uniform buffers, for the
  // shaders spirv_uniform_blocks_as_storage can rewrite (pipeline.h).
  bool params_in_storage = false;
  bool memory_budget = false;  // VK_EXT_memory_budget, enabled: the heaps' budget and usage
  uint32_t max_workgroup_count[3] = {0, 0, 0};
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_workgroup_size[3] = {0, 0, 0};
  // VKDELEGATE_DEVICE_PROFILE as given (empty: none): the limits and features above
  // are the real device's lowered to it (device_profile.h).
  std::string profile;
  float timestamp_period_ns = 0.f;
  bool timestamps = false;
  bool shader_float16 = false;
  bool shader_int8 = false;  // 8-bit integer arithmetic in shaders (shaderInt8), enabled
  bool storage_16bit = false;
  bool shader_int64 = false;
  bool integer_dot_product = false;  // shaderIntegerDotProduct, enabled
  bool maintenance4 = false;         // enabled (core in 1.3): the Vulkan 1.3 shaders' LocalSizeId needs it
  VkDeviceSize max_buffer_size = 0;  // with maintenance4: the largest buffer the device makes (0: no bound known)
  bool cooperative_matrix = false;   // VK_KHR_cooperative_matrix, enabled (with maintenance4)
  // VK_NV_cooperative_matrix2 with workgroup scope, flexible dimensions, tensor
  // addressing and per-element operations, enabled (coopmm's matmul_coop2).
  bool cooperative_matrix2 = false;
  // VK_KHR_pipeline_executable_properties, enabled only when VKDELEGATE_PIPELINE_STATS=1
  // (the runner's --pipeline-stats): the driver's statistics of each compiled kernel
  // (registers, spills, shared memory, ...), recorded in Pipeline::statistics.
  bool pipeline_statistics = false;
  // With VKDELEGATE_PIPELINE_IR=1 as well (the runner's --pipeline-ir): the driver's
  // internal representations too, in Pipeline::internal_representations.
  bool pipeline_internal_representations = false;
  // Subgroup-scope cooperative matrix shapes the device offers, "MxNxK A->C"
  // with component types as in GLSL (e.g. "16x16x16 f16->f32").
  std::vector<std::string> cooperative_matrix_shapes;
  bool has_cooperative_matrix_shape(uint32_t m, uint32_t n, uint32_t k, const char* a_to_c) const;
  // A workgroup of x * y * z invocations is within maxComputeWorkGroupInvocations and
  // maxComputeWorkGroupSize (pipeline creation refuses one that is not).
  bool workgroup_fits(uint32_t x, uint32_t y, uint32_t z) const {
    return uint64_t{x} * y * z <= max_workgroup_invocations && x <= max_workgroup_size[0] &&
           y <= max_workgroup_size[1] && z <= max_workgroup_size[2];
  }
};

// One Vulkan device of the instance as the runtime would describe it were it chosen
// (`vkdelegate devices`); error: why it cannot be described (its info is then partial).
struct DeviceListing {
  DeviceInfo info;
  bool chosen = false;
  std::string error;
};

class Context {
 public:
  struct DeviceFeatures;  // the optional features the device has (context.cpp)

  // The process-wide context, created on first use. Returns nullptr when no
  // Vulkan device can be used; unavailable_reason() then says why.
  static Context* get();
  static const std::string& unavailable_reason();

  // Number of validation-layer errors reported so far (validation is on when
  // VKDELEGATE_VALIDATION=1 or the layer is enabled through VK_INSTANCE_LAYERS).
  static uint64_t validation_error_count();
  static bool validation_enabled();

  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  VkDevice device() const { return device_; }
  VkPhysicalDevice physical_device() const { return physical_device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const DeviceInfo& info() const { return info_; }
  // Every device of the instance, in the loader's order (VKDELEGATE_DEVICE's indices).
  std::vector<DeviceListing> list_devices() const;
  // Why the device was chosen: VKDELEGATE_DEVICE, or the preference by device type.
  const std::string& choice_reason() const { return choice_reason_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const {
    return memory_properties_;
  }
  Allocator& allocator() { return *allocator_; }
  PipelineCache& pipelines() { return *pipelines_; }

  // Submits one command buffer and waits for it to finish.
  void submit_and_wait(VkCommandBuffer cmd, VkFence fence);
  // The two halves of submit_and_wait: submit (resets the fence), and wait for the fence.
  void submit(VkCommandBuffer cmd, VkFence fence);
  void wait(VkFence fence);

 private:
  Context() = default;
  // create() runs the steps in order: instance, device choice, features, queue, device.
  void create();
  void create_instance();
  void create_device(const DeviceFeatures& features);

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  DeviceInfo info_;
  std::string choice_reason_;
  VkPhysicalDeviceMemoryProperties memory_properties_{};
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<PipelineCache> pipelines_;
  std::mutex queue_mutex_;
};

// A command pool with one primary command buffer and a fence, for one graph
// (or one upload). Not thread-safe; each user owns its own.
class CommandStream {
 public:
  explicit CommandStream(Context& ctx);
  ~CommandStream();
  CommandStream(const CommandStream&) = delete;
  CommandStream& operator=(const CommandStream&) = delete;

  VkCommandBuffer begin();  // resets and begins recording
  void end();
  void submit_and_wait();
  void submit();  // without waiting: wait() before the next begin()
  void wait();
  VkCommandBuffer handle() const { return cmd_; }

 private:
  Context& ctx_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
};

} // namespace vkd
