#include "op_utils.h"

#include "../vk/pipeline.h"
#include "matmul_choice.h"

namespace vkd {

namespace {
bool subgroup_ops(ComputeGraph& g) {
  return !g.settings().no_subgroup_ops && g.context().info().subgroup_arithmetic;
}
}  // namespace

std::string variant(ComputeGraph& g, const std::string& base, int id) {
  const std::string suffix = std::string("_") + storage_suffix(g.tensor(id).storage_type);
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
  return coopmat_f16_base(g.context().info(), g.settings(), base);
}

}  // namespace vkd
