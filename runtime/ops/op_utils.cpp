#include "op_utils.h"

#include "../vk/pipeline.h"

namespace vkd {

namespace {
bool subgroup_ops(ComputeGraph& g) {
  return !g.settings().no_subgroup_ops && g.context().info().subgroup_arithmetic;
}
}  // namespace

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
  if (g.settings().no_coopmat) return "";
  if (g.settings().coopmat_emulate) return base + "_emu";
  const DeviceInfo& info = g.context().info();
  if (info.cooperative_matrix && info.subgroup_size == 32 && info.shader_float16 &&
      info.has_cooperative_matrix_shape(16, 16, 16, "f16->f32")) {
    return base;
  }
  return "";
}

}  // namespace vkd
