#include "op_utils.h"

#include <cstdlib>
#include <cstring>

#include "../vk/pipeline.h"

namespace vkd {

namespace {
bool subgroup_ops(ComputeGraph& g) {
  return !env_on("VKDELEGATE_NO_SUBGROUP_OPS") && g.context().info().subgroup_arithmetic;
}
}  // namespace

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 && std::strcmp(v, "0") != 0;
}

std::string variant(ComputeGraph& g, const std::string& base, int id) {
  const std::string suffix = std::string("_") + storage_suffix(g.tensor(id).dtype);
  if (subgroup_ops(g)) {
    const std::string sg = base + "_sg" + suffix;
    if (find_shader(sg) != nullptr) return sg;
  }
  return base + suffix;
}

std::string subgroup_variant(ComputeGraph& g, const std::string& name) {
  if (subgroup_ops(g) && find_shader(name + "_sg") != nullptr) return name + "_sg";
  return name;
}

std::string coopmat_f16_base(ComputeGraph& g, const std::string& base) {
  if (env_on("VKDELEGATE_NO_COOPMAT")) return "";
  if (env_on("VKDELEGATE_COOPMAT_EMULATE")) return base + "_emu";
  const DeviceInfo& info = g.context().info();
  if (info.cooperative_matrix && info.subgroup_size == 32 && info.shader_float16 &&
      info.has_cooperative_matrix_shape(16, 16, 16, "f16->f32")) {
    return base;
  }
  return "";
}

}  // namespace vkd
