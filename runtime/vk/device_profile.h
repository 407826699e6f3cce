// VKDELEGATE_DEVICE_PROFILE: make the runtime see a phone GPU's smaller limits and
// missing features on any device, so that the suite checks that every kernel choice
// respects them. A named profile (mali-g7x, adreno-6xx, adreno-7xx), explicit
// key=value limits, or a name followed by keys that change it
// ("adreno-6xx,fp16=0"). Limits and features are only ever lowered: an explicit value
// above the real device's is an error; a named profile's value above it keeps the
// device's. docs/device-profiles.md lists the keys, the profiles and their sources.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vkd {

struct DeviceProfile {
  struct Value {
    uint64_t value = 0;
    bool set = false;       // the profile gives this limit or feature
    bool explicit_ = false; // given as key=value (not by a profile's name): raising it is an error
  };
  std::string text;  // the setting as given; empty: no profile
  Value shared;       // maxComputeSharedMemorySize, bytes
  Value invocations;  // maxComputeWorkGroupInvocations
  Value size[3];      // maxComputeWorkGroupSize
  Value binding;      // maxStorageBufferRange, bytes (as VKDELEGATE_MAX_BINDING_BYTES)
  // Features, 0 or 1: 16-bit storage and float16 arithmetic (as VKDELEGATE_DISABLE_FP16),
  // shaderInt64 (int64 tensors then live as int32, as VKDELEGATE_INT64_STORAGE=32),
  // the packed integer dot product, cooperative matrices (KHR and NV2).
  Value fp16, int64, intdot, coopmat;
};

// Parses the setting's text; throws VulkanError naming the bad part.
DeviceProfile parse_device_profile(const std::string& text);

// The named profiles, for the error of an unknown name and for tests.
std::vector<std::string> device_profile_names();

// The limit to use: the device's, lowered to the profile's value where set. Throws
// VulkanError when an explicit value would raise it (key and vk_name name it).
uint64_t lowered_limit(const DeviceProfile& p, const DeviceProfile::Value& v, uint64_t device,
                       const char* key, const char* vk_name);

}  // namespace vkd
