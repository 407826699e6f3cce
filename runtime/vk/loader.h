// Vulkan entry points, loaded at run time from libvulkan.so.1.
//
// We do not link the Vulkan loader: a machine with no Vulkan at all must still be
// able to import vkdelegate (and be told that no device is available). Every
// function we call is listed once in the X-macro lists below.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

// VK_KHR_cooperative_matrix arrived in headers 1.3.255; Debian 12 ships 1.3.239.
// The few declarations we use, as the specification defines them.
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VKD_OWN_COOPMAT_DECLARATIONS 1
constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR =
    static_cast<VkStructureType>(1000506000);
constexpr VkStructureType VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR =
    static_cast<VkStructureType>(1000506001);
typedef enum VkComponentTypeKHR {
  VK_COMPONENT_TYPE_FLOAT16_KHR = 0,
  VK_COMPONENT_TYPE_FLOAT32_KHR = 1,
  VK_COMPONENT_TYPE_SINT8_KHR = 3,
  VK_COMPONENT_TYPE_SINT32_KHR = 5,
  VK_COMPONENT_TYPE_MAX_ENUM_KHR = 0x7FFFFFFF
} VkComponentTypeKHR;
typedef enum VkScopeKHR {
  VK_SCOPE_SUBGROUP_KHR = 3,
  VK_SCOPE_MAX_ENUM_KHR = 0x7FFFFFFF
} VkScopeKHR;
typedef struct VkCooperativeMatrixPropertiesKHR {
  VkStructureType sType;
  void* pNext;
  uint32_t MSize;
  uint32_t NSize;
  uint32_t KSize;
  VkComponentTypeKHR AType;
  VkComponentTypeKHR BType;
  VkComponentTypeKHR CType;
  VkComponentTypeKHR ResultType;
  VkBool32 saturatingAccumulation;
  VkScopeKHR scope;
} VkCooperativeMatrixPropertiesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef VkResult(VKAPI_PTR* PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice physicalDevice, uint32_t* pPropertyCount,
    VkCooperativeMatrixPropertiesKHR* pProperties);
#endif

// VK_NV_cooperative_matrix2 (headers 1.3.300 on): the feature structure, as the
// specification defines it.
#ifndef VK_NV_cooperative_matrix2
#define VK_NV_cooperative_matrix2 1
constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV =
    static_cast<VkStructureType>(1000593000);
typedef struct VkPhysicalDeviceCooperativeMatrix2FeaturesNV {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrixWorkgroupScope;
  VkBool32 cooperativeMatrixFlexibleDimensions;
  VkBool32 cooperativeMatrixReductions;
  VkBool32 cooperativeMatrixConversions;
  VkBool32 cooperativeMatrixPerElementOperations;
  VkBool32 cooperativeMatrixTensorAddressing;
  VkBool32 cooperativeMatrixBlockLoads;
} VkPhysicalDeviceCooperativeMatrix2FeaturesNV;
#endif

#define VKD_GLOBAL_FUNCTIONS(X)              \
  X(vkCreateInstance)                        \
  X(vkEnumerateInstanceExtensionProperties)  \
  X(vkEnumerateInstanceLayerProperties)      \
  X(vkEnumerateInstanceVersion)

#define VKD_INSTANCE_FUNCTIONS(X)                \
  X(vkDestroyInstance)                           \
  X(vkEnumeratePhysicalDevices)                  \
  X(vkGetPhysicalDeviceProperties)               \
  X(vkGetPhysicalDeviceProperties2)              \
  X(vkGetPhysicalDeviceFeatures2)                \
  X(vkGetPhysicalDeviceQueueFamilyProperties)    \
  X(vkGetPhysicalDeviceMemoryProperties)         \
  X(vkGetPhysicalDeviceMemoryProperties2)        \
  X(vkEnumerateDeviceExtensionProperties)        \
  X(vkCreateDevice)                              \
  X(vkGetDeviceProcAddr)                         \
  X(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)

#define VKD_DEBUG_FUNCTIONS(X)        \
  X(vkCreateDebugUtilsMessengerEXT)   \
  X(vkDestroyDebugUtilsMessengerEXT)

#define VKD_DEVICE_FUNCTIONS(X)         \
  X(vkDestroyDevice)                    \
  X(vkGetDeviceQueue)                   \
  X(vkAllocateMemory)                   \
  X(vkFreeMemory)                       \
  X(vkMapMemory)                        \
  X(vkUnmapMemory)                      \
  X(vkFlushMappedMemoryRanges)          \
  X(vkInvalidateMappedMemoryRanges)     \
  X(vkCreateBuffer)                     \
  X(vkDestroyBuffer)                    \
  X(vkGetBufferMemoryRequirements)      \
  X(vkBindBufferMemory)                 \
  X(vkCreateShaderModule)               \
  X(vkDestroyShaderModule)              \
  X(vkCreateDescriptorSetLayout)        \
  X(vkDestroyDescriptorSetLayout)       \
  X(vkCreatePipelineLayout)             \
  X(vkDestroyPipelineLayout)            \
  X(vkCreatePipelineCache)              \
  X(vkDestroyPipelineCache)             \
  X(vkCreateComputePipelines)           \
  X(vkDestroyPipeline)                  \
  X(vkCreateDescriptorPool)             \
  X(vkDestroyDescriptorPool)            \
  X(vkAllocateDescriptorSets)           \
  X(vkResetDescriptorPool)              \
  X(vkUpdateDescriptorSets)             \
  X(vkCreateCommandPool)                \
  X(vkDestroyCommandPool)               \
  X(vkAllocateCommandBuffers)           \
  X(vkFreeCommandBuffers)               \
  X(vkBeginCommandBuffer)               \
  X(vkEndCommandBuffer)                 \
  X(vkCmdBindPipeline)                  \
  X(vkCmdBindDescriptorSets)            \
  X(vkCmdDispatch)                      \
  X(vkCmdPipelineBarrier)               \
  X(vkCmdCopyBuffer)                    \
  X(vkCmdFillBuffer)                    \
  X(vkCmdResetQueryPool)                \
  X(vkCmdWriteTimestamp)                \
  X(vkCreateQueryPool)                  \
  X(vkDestroyQueryPool)                 \
  X(vkGetQueryPoolResults)              \
  X(vkCreateFence)                      \
  X(vkDestroyFence)                     \
  X(vkResetFences)                      \
  X(vkWaitForFences)                    \
  X(vkGetFenceStatus)                   \
  X(vkCreateEvent)                      \
  X(vkDestroyEvent)                     \
  X(vkCmdSetEvent)                      \
  X(vkGetEventStatus)                   \
  X(vkResetEvent)                       \
  X(vkQueueSubmit)                      \
  X(vkDeviceWaitIdle)                   \
  X(vkGetPipelineExecutablePropertiesKHR) \
  X(vkGetPipelineExecutableStatisticsKHR) \
  X(vkGetPipelineExecutableInternalRepresentationsKHR)

namespace vkd {

#define VKD_DECLARE(name) extern PFN_##name name;
VKD_GLOBAL_FUNCTIONS(VKD_DECLARE)
VKD_INSTANCE_FUNCTIONS(VKD_DECLARE)
VKD_DEBUG_FUNCTIONS(VKD_DECLARE)
VKD_DEVICE_FUNCTIONS(VKD_DECLARE)
#undef VKD_DECLARE

// Opens the Vulkan loader library. Returns false (and a reason) if there is none.
bool load_vulkan_library(const char** why);
void load_instance_functions(VkInstance instance);
void load_device_functions(VkDevice device);

} // namespace vkd
