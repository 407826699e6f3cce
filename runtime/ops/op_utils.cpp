#include "op_utils.h"

#include <cstdlib>
#include <cstring>

#include "../vk/pipeline.h"

namespace vkd {

std::string variant(ComputeGraph& g, const std::string& base, int id) {
  const std::string suffix = std::string("_") + storage_suffix(g.tensor(id).dtype);
  const char* off = std::getenv("VKDELEGATE_NO_SUBGROUP_OPS");
  const bool disabled = off != nullptr && *off != 0 && std::strcmp(off, "0") != 0;
  if (!disabled && g.context().info().subgroup_arithmetic) {
    const std::string sg = base + "_sg" + suffix;
    if (find_shader(sg) != nullptr) return sg;
  }
  return base + suffix;
}

std::string coopmat_f16_base(ComputeGraph& g, const std::string& base) {
  const auto on = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != 0 && std::strcmp(v, "0") != 0;
  };
  if (on("VKDELEGATE_NO_COOPMAT")) return "";
  if (on("VKDELEGATE_COOPMAT_EMULATE")) return base + "_emu";
  const DeviceInfo& info = g.context().info();
  if (info.cooperative_matrix && info.subgroup_size == 32 && info.shader_float16 &&
      info.has_cooperative_matrix_shape(16, 16, 16, "f16->f32")) {
    return base;
  }
  return "";
}

}  // namespace vkd
