// The ExecuTorch side of the runtime: the backend registers itself as
// "VkDelegateBackend" when the library loads. Also the few hooks that tools
// (the runner, the Python module) use to look at live graphs.
#pragma once

#include <string>
#include <vector>

namespace vkd {

class ComputeGraph;

constexpr const char* kBackendId = "VkDelegateBackend";

// The graphs of every delegate currently loaded, in load order.
std::vector<ComputeGraph*> live_graphs();
// The message of the last error the backend reported (empty if none).
std::string last_error();

}  // namespace vkd
