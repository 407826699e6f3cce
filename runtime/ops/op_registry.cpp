#include "op_registry.h"

#include <algorithm>
#include <map>

namespace vkd {

namespace {
std::map<std::string, OpBuildFn>& table() {
  static std::map<std::string, OpBuildFn> t;
  return t;
}
}  // namespace

void register_op(const std::string& name, OpBuildFn fn) { table()[name] = std::move(fn); }

const OpBuildFn* find_op(const std::string& name) {
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> registered_ops() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : table()) names.push_back(name);
  return names;
}

}  // namespace vkd
