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

}  // namespace vkd
