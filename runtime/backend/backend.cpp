#include "backend.h"

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/exec_aten/util/tensor_util.h>
#include <executorch/runtime/platform/log.h>

#include <algorithm>
#include <mutex>

#include "../graph/compute_graph.h"

namespace vkd {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;

namespace {

std::mutex g_mutex;
std::vector<ComputeGraph*> g_graphs;
std::string g_last_error;

et::Error report(et::Error code, const std::string& msg) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_last_error = msg;
  }
  ET_LOG(Error, "VkDelegateBackend: %s", msg.c_str());
  return code;
}

ScalarType scalar_type_of(DType t) {
  switch (t) {
    case DType::Float32: return ScalarType::Float;
    case DType::Float16: return ScalarType::Half;
    case DType::Int32: return ScalarType::Int;
    case DType::Int64: return ScalarType::Long;
    case DType::Int8: return ScalarType::Char;
    case DType::UInt8: return ScalarType::Byte;
    case DType::Bool: return ScalarType::Bool;
  }
  return ScalarType::Undefined;
}

class VkDelegateBackend final : public et::BackendInterface {
 public:
  bool is_available() const override {
    if (Context::get()) return true;
    // ExecuTorch does not call init() on an unavailable backend; say why here.
    report(et::Error::NotSupported, "no Vulkan device is available: " + Context::unavailable_reason());
    return false;
  }

  et::Result<et::DelegateHandle*> init(et::BackendInitContext&, et::FreeableBuffer* processed,
                                       et::ArrayRef<et::CompileSpec>) const override {
    if (!Context::get()) {
      return report(et::Error::NotSupported,
                    "no Vulkan device is available: " + Context::unavailable_reason());
    }
    try {
      auto graph = ComputeGraph::load(static_cast<const uint8_t*>(processed->data()),
                                      processed->size());
      processed->Free();
      std::lock_guard<std::mutex> lock(g_mutex);
      g_graphs.push_back(graph.get());
      return graph.release();
    } catch (const std::exception& e) {
      return report(et::Error::InvalidProgram, std::string("cannot load the delegate: ") + e.what());
    }
  }

  et::Error execute(et::BackendExecutionContext&, et::DelegateHandle* handle,
                    et::Span<et::EValue*> args) const override {
    auto* graph = static_cast<ComputeGraph*>(handle);
    std::lock_guard<std::mutex> lock(graph->mutex());
    const size_t n_in = graph->num_inputs(), n_out = graph->num_outputs();
    if (args.size() != n_in + n_out) {
      return report(et::Error::InvalidArgument,
                    "expected " + std::to_string(n_in) + " inputs and " + std::to_string(n_out) +
                        " outputs, got " + std::to_string(args.size()) + " arguments");
    }
    try {
      for (size_t i = 0; i < n_in; ++i) {
        if (!args[i]->isTensor()) {
          return report(et::Error::InvalidArgument, "input " + std::to_string(i) + " is not a tensor");
        }
        const auto& t = args[i]->toTensor();
        const DType want = graph->input(i).dtype;
        if (t.scalar_type() != scalar_type_of(want)) {
          return report(et::Error::InvalidArgument,
                        "input " + std::to_string(i) + " has dtype " +
                            et::toString(t.scalar_type()) + ", expected " + dtype_name(want));
        }
        graph->set_input_sizes(i, Sizes(t.sizes().begin(), t.sizes().end()));
        graph->copy_input(i, t.const_data_ptr(), t.nbytes());
      }
      graph->execute();
      for (size_t i = 0; i < n_out; ++i) {
        if (!args[n_in + i]->isTensor()) {
          return report(et::Error::InvalidArgument, "output " + std::to_string(i) + " is not a tensor");
        }
        auto& t = args[n_in + i]->toTensor();
        const Tensor& o = graph->output(i);
        if (t.scalar_type() != scalar_type_of(o.dtype)) {
          return report(et::Error::InvalidArgument, "output " + std::to_string(i) + " has the wrong dtype");
        }
        std::vector<::executorch::aten::SizesType> sizes(o.sizes.begin(), o.sizes.end());
        if (et::resize_tensor(t, {sizes.data(), sizes.size()}) != et::Error::Ok) {
          return report(et::Error::InvalidArgument,
                        "output " + std::to_string(i) + " cannot be resized to " + sizes_str(o.sizes));
        }
        graph->copy_output(i, t.mutable_data_ptr(), t.nbytes());
      }
    } catch (const std::exception& e) {
      return report(et::Error::InvalidArgument, e.what());
    }
    return et::Error::Ok;
  }

  void destroy(et::DelegateHandle* handle) const override {
    auto* graph = static_cast<ComputeGraph*>(handle);
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_graphs.erase(std::remove(g_graphs.begin(), g_graphs.end(), graph), g_graphs.end());
    }
    delete graph;
  }
};

VkDelegateBackend g_backend;
const et::Backend g_entry{kBackendId, &g_backend};
// Registration at library load is how ExecuTorch finds a backend.
[[maybe_unused]] const et::Error g_registered = et::register_backend(g_entry);

}  // namespace

std::vector<ComputeGraph*> live_graphs() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_graphs;
}

std::string last_error() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_last_error;
}

}  // namespace vkd
