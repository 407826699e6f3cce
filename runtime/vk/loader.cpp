#include "loader.h"

#include <dlfcn.h>

namespace vkd {

#define VKD_DEFINE(name) PFN_##name name = nullptr;
VKD_GLOBAL_FUNCTIONS(VKD_DEFINE)
VKD_INSTANCE_FUNCTIONS(VKD_DEFINE)
VKD_DEBUG_FUNCTIONS(VKD_DEFINE)
VKD_DEVICE_FUNCTIONS(VKD_DEFINE)
#undef VKD_DEFINE

namespace {
PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
}

bool load_vulkan_library(const char** why) {
  if (get_instance_proc_addr) {
    return true;
  }
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib) {
    *why = "the Vulkan loader (libvulkan.so.1) is not installed";
    return false;
  }
  get_instance_proc_addr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      dlsym(lib, "vkGetInstanceProcAddr"));
  if (!get_instance_proc_addr) {
    *why = "libvulkan.so.1 has no vkGetInstanceProcAddr";
    return false;
  }
#define VKD_LOAD(name) \
  name = reinterpret_cast<PFN_##name>(get_instance_proc_addr(nullptr, #name));
  VKD_GLOBAL_FUNCTIONS(VKD_LOAD)
#undef VKD_LOAD
  if (!vkCreateInstance || !vkEnumerateInstanceExtensionProperties) {
    *why = "the Vulkan loader lacks vkCreateInstance";
    return false;
  }
  return true;
}

void load_instance_functions(VkInstance instance) {
#define VKD_LOAD(name) \
  name = reinterpret_cast<PFN_##name>(get_instance_proc_addr(instance, #name));
  VKD_INSTANCE_FUNCTIONS(VKD_LOAD)
  VKD_DEBUG_FUNCTIONS(VKD_LOAD)
#undef VKD_LOAD
}

void load_device_functions(VkDevice device) {
#define VKD_LOAD(name) \
  name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));
  VKD_DEVICE_FUNCTIONS(VKD_LOAD)
#undef VKD_LOAD
}

} // namespace vkd
