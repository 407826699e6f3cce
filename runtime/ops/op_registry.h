// Build functions of the operators, by op name ("aten.add.Tensor"). Each op
// family file registers its ops with VKD_REGISTER_OPS; op_registry.py is the
// ahead-of-time twin of this table.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../graph/compute_graph.h"

namespace vkd {

// An op's arguments: value ids, the op's schema arguments in order, then its
// outputs. Every access is checked (std::out_of_range, which build_ops turns into an
// error naming the op): a corrupted blob can give an op fewer arguments than its
// schema has, and the build functions index them freely.
class OpArgs {
 public:
  OpArgs(std::vector<int> ids) : ids_(std::move(ids)) {}  // implicit: build_ops passes its list
  int operator[](size_t i) const { return ids_.at(i); }
  int at(size_t i) const { return ids_.at(i); }
  int back() const {
    if (ids_.empty()) throw std::out_of_range("the op has no arguments");
    return ids_.back();
  }
  size_t size() const { return ids_.size(); }
  std::vector<int>::const_iterator begin() const { return ids_.begin(); }
  std::vector<int>::const_iterator end() const { return ids_.end(); }

 private:
  std::vector<int> ids_;
};

using OpBuildFn = std::function<void(ComputeGraph&, const OpArgs& args)>;

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
