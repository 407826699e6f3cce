#include "device_profile.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "context.h"

namespace vkd {

namespace {

// The named profiles. The values are what the vendors' Android drivers report
// (vulkan.gpuinfo.org reports; docs/device-profiles.md gives each value's source and
// how sure it is). Subgroup sizes are not here: the runtime keeps the real device's
// (a kernel's subgroup width cannot be changed by claiming another one).
struct NamedProfile {
  const char* name;
  const char* keys;
};
constexpr NamedProfile kNamedProfiles[] = {
    // Arm Mali Valhall (G77, G78, G710, G610; Arm's driver): 32 KiB shared memory,
    // 512 invocations in 512x512x512, a 128 MiB storage binding; 16-bit storage and
    // shaderInt64 present; no integer dot product before the Vulkan 1.3 drivers; no
    // cooperative matrices. Subgroups of 16.
    {"mali-g7x", "shared=32768,invocations=512,size=512x512x512,binding=134217728,"
                 "fp16=1,int64=1,intdot=0,coopmat=0"},
    // Qualcomm Adreno 6xx (610 to 660): 16 KiB shared memory on the 610/612 (32 KiB
    // on the larger ones: the family's floor is taken), 512 invocations in
    // 1024x1024x64, a 128 MiB binding, no shaderInt64, no integer dot product, no
    // cooperative matrices. Subgroups of 64 (128 with subgroup size control).
    {"adreno-6xx", "shared=16384,invocations=512,size=1024x1024x64,binding=134217728,"
                   "fp16=1,int64=0,intdot=0,coopmat=0"},
    // Qualcomm Adreno 7xx (730, 740, 750): 32 KiB shared memory, 1024 invocations in
    // 1024x1024x64, a 128 MiB binding, no shaderInt64, the integer dot product, no
    // cooperative matrices. Subgroups of 64 (128 with subgroup size control).
    {"adreno-7xx", "shared=32768,invocations=1024,size=1024x1024x64,binding=134217728,"
                   "fp16=1,int64=0,intdot=1,coopmat=0"},
    // The Vulkan specification's required minimums (its "Required Limits" table:
    // maxComputeSharedMemorySize 16384, maxComputeWorkGroupInvocations 128,
    // maxComputeWorkGroupSize 128x128x64, maxStorageBufferRange 2^27) with none of
    // the optional features: what every conformant device offers.
    {"vulkan-min", "shared=16384,invocations=128,size=128x128x64,binding=134217728,"
                   "fp16=0,int64=0,intdot=0,coopmat=0"},
};

[[noreturn]] void fail(const std::string& text, const std::string& why) {
  throw VulkanError("VKDELEGATE_DEVICE_PROFILE='" + text + "': " + why);
}

uint64_t parse_number(const std::string& text, const std::string& key, const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 12) {
    fail(text, key + "=" + s + " is not a whole number");
  }
  return std::strtoull(s.c_str(), nullptr, 10);
}

void apply(DeviceProfile& p, const std::string& text, const std::string& item, bool explicit_) {
  const size_t eq = item.find('=');
  const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
  auto set = [&](DeviceProfile::Value& v, uint64_t x) {
    v.value = x;
    v.set = true;
    v.explicit_ = explicit_;
  };
  auto positive = [&](const std::string& s) {
    const uint64_t x = parse_number(text, key, s);
    if (x == 0) fail(text, key + " must be at least 1");
    return x;
  };
  auto flag = [&]() {
    if (value != "0" && value != "1") fail(text, key + "=" + value + ": expected 0 or 1");
    return static_cast<uint64_t>(value == "1");
  };
  if (key == "shared") set(p.shared, positive(value));
  else if (key == "invocations") set(p.invocations, positive(value));
  else if (key == "binding") set(p.binding, positive(value));
  else if (key == "size") {
    size_t at = 0;
    for (int i = 0; i < 3; ++i) {
      const size_t x = value.find('x', at);
      if ((i < 2) == (x == std::string::npos)) fail(text, "size=" + value + ": expected XxYxZ, e.g. 512x512x64");
      set(p.size[i], positive(value.substr(at, i < 2 ? x - at : std::string::npos)));
      at = x + 1;
    }
  }
  else if (key == "fp16") set(p.fp16, flag());
  else if (key == "int64") set(p.int64, flag());
  else if (key == "intdot") set(p.intdot, flag());
  else if (key == "coopmat") set(p.coopmat, flag());
  else if (key == "subgroup") {
    fail(text, "the subgroup size cannot be set: kernels keep the real device's (docs/device-profiles.md)");
  } else {
    fail(text, "unknown key '" + key + "' (keys: shared, invocations, size, binding, fp16, int64, intdot, coopmat)");
  }
}

}  // namespace

std::vector<std::string> device_profile_names() {
  std::vector<std::string> names;
  for (const auto& n : kNamedProfiles) names.push_back(n.name);
  return names;
}

DeviceProfile parse_device_profile(const std::string& text) {
  DeviceProfile p;
  p.text = text;
  if (text.empty()) return p;
  std::vector<std::string> items;
  for (size_t at = 0;;) {
    const size_t comma = text.find(',', at);
    items.push_back(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string& item = items[i];
    if (item.find('=') != std::string::npos) {
      apply(p, text, item, true);
      continue;
    }
    const NamedProfile* named = nullptr;
    for (const auto& n : kNamedProfiles) {
      if (item == n.name) named = &n;
    }
    if (!named || i != 0) {
      std::string names;
      for (const auto& n : kNamedProfiles) names += std::string(names.empty() ? "" : ", ") + n.name;
      fail(text, "'" + item + "' is not key=value, nor a profile name first (profiles: " + names + ")");
    }
    const std::string keys = named->keys;
    for (size_t at = 0;;) {
      const size_t comma = keys.find(',', at);
      apply(p, text, keys.substr(at, comma == std::string::npos ? std::string::npos : comma - at), false);
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
  }
  return p;
}

uint64_t lowered_limit(const DeviceProfile& p, const DeviceProfile::Value& v, uint64_t device,
                       const char* key, const char* vk_name) {
  if (!v.set) return device;
  if (v.value > device && v.explicit_) {
    fail(p.text, std::string(key) + "=" + std::to_string(v.value) + " would raise the device's " + vk_name +
                     " (" + std::to_string(device) + "): a profile can only lower limits");
  }
  return std::min<uint64_t>(v.value, device);
}

}  // namespace vkd
