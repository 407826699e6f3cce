// Build functions of the operators, by op name ("aten.add.Tensor"). Each op
// family file registers its ops with VKD_REGISTER_OPS; op_registry.py is the
// ahead-of-time twin of this table.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "../graph/compute_graph.h"

namespace vkd {

// `args` are value ids: the op's schema arguments in order, then its outputs.
using OpBuildFn = std::function<void(ComputeGraph&, const std::vector<int>& args)>;

void register_op(const std::string& name, OpBuildFn fn);
const OpBuildFn* find_op(const std::string& name);
std::vector<std::string> registered_ops();

} // namespace vkd

#define VKD_REGISTER_OPS(fn)                            \
  static void fn();                                     \
  namespace {                                           \
  [[maybe_unused]] const bool fn##_registered = (fn(), true); \
  }                                                     \
  static void fn()
