#include "backend.h"

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/event_tracer_hooks_delegate.h>
#include <executorch/runtime/core/exec_aten/util/tensor_util.h>
#include <executorch/runtime/platform/log.h>
#include <executorch/runtime/platform/platform.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "../graph/compute_graph.h"

namespace vkd {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;

namespace {

std::mutex g_mutex;
std::vector<ComputeGraph*> g_graphs;
std::string g_last_error;
// Graphs whose profiling an event tracer turned on (others may profile for the runner's
// --profile: those are left as they are).
std::set<ComputeGraph*> g_traced;

et::Error report(et::Error code, const std::string& msg) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_last_error = msg;
  }
  ET_LOG(Error, "VkDelegateBackend: %s", msg.c_str());
  return code;
}

// Per-dispatch GPU timestamps for an execute with an event tracer (an ETDump): they
// need a recording with a timestamp after every dispatch and a barrier between
// dispatches, so a graph records again when tracing starts and when it stops; an
// execute without a tracer keeps replaying the recording it has.
bool trace_dispatches(ComputeGraph& graph, bool tracer) {
  if (!tracer && !graph.profiling()) return false;  // the usual execute: nothing to undo
  const bool trace = tracer && graph.context().info().timestamps;
  if (tracer && !trace) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      ET_LOG(Info, "VkDelegateBackend: this device has no timestamp queries: no per-dispatch events");
    });
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (trace && !graph.profiling()) {
    graph.set_profiling(true);
    g_traced.insert(&graph);
  } else if (!trace && g_traced.erase(&graph)) {
    graph.set_profiling(false);
  }
  return trace;
}

// One event per dispatch of the last execute, in dispatch order, named
// "<blob op> (node <chain index>) <shader>": backends/vulkan_preprocess.py maps
// "<blob op> (node <chain index>)" to the op's debug handles, and ExecuTorch's
// Inspector matches an event to the map key its name contains (the parentheses keep
// node 3 from matching node 13). A second dispatch of one node with one shader gets
// " #2", so that no two events of a run share a name (the Inspector rejects that).
// Times are host ticks: the GPU timestamps' offsets from the first one, anchored at
// the host's time of the submit; each event ends where the next starts.
void log_dispatches(ComputeGraph& graph, et::EventTracer* tracer, et_timestamp_t submitted) {
  const et_tick_ratio_t ratio = et_pal_ticks_to_ns_multiplier();
  auto ticks = [&](double ns) {
    return submitted + static_cast<et_timestamp_t>(ns * static_cast<double>(ratio.denominator) /
                                                   static_cast<double>(ratio.numerator));
  };
  const std::vector<NodeTiming>& timings = graph.timings();
  std::map<std::string, int> seen;
  double ns = 0;  // since the first timestamp
  size_t k = 0;
  for (const Node& node : graph.nodes()) {
    if (!node.pipeline) continue;
    if (k >= timings.size()) break;
    const double begin = ns;
    ns += timings[k++].us * 1000.0;
    if (!(node.groups[0] && node.groups[1] && node.groups[2])) continue;  // nothing dispatched
    std::string name = (node.source >= 0 ? graph.blob_ops()[static_cast<size_t>(node.source)].name : node.op) + " (node " +
                       std::to_string(node.source) + ") " + node.pipeline->shader;
    const int count = ++seen[name];
    if (count > 1) name += " #" + std::to_string(count);
    et::event_tracer_log_profiling_delegate(tracer, name.c_str(),
                                            static_cast<et::DebugHandle>(et::kUnsetDelegateDebugIntId),
                                            ticks(begin), ticks(ns));
  }
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

  et::Error execute(et::BackendExecutionContext& context, et::DelegateHandle* handle,
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
      et::EventTracer* tracer = context.event_tracer();
      const bool trace = trace_dispatches(*graph, tracer != nullptr);
      if (trace) graph->prepare();  // a recording of its own, before the anchor of the times
      const et_timestamp_t submitted = trace ? et_pal_current_ticks() : 0;
      graph->execute();
      if (trace) log_dispatches(*graph, tracer, submitted);
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
      g_traced.erase(graph);
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
