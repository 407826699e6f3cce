// vkdelegate.runtime._vkdelegate: loading it registers the backend with the
// ExecuTorch runtime of the process; it also runs blobs directly (tests, tools)
// and reports on the device.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../backend/backend.h"
#include "../graph/compute_graph.h"
#include "../ops/conv_choice.h"
#include "../ops/matmul_choice.h"
#include "../ops/op_registry.h"
#include "../settings.h"
#include "../vk/device_profile.h"
#include "../vk/pipeline.h"

namespace py = pybind11;
using namespace vkd;

namespace vkd {
// eager/csrc/runtime_table.cpp: the eager device's buffers, copies and one-op graph runs.
void register_eager(py::module_& m);
}  // namespace vkd

namespace {

const char* numpy_name(DType t) {
  return t == DType::Bool ? "bool" : dtype_name(t);
}

py::dict info_dict(const DeviceInfo& i) {
  py::dict d;
  d["name"] = i.name;
  d["type"] = i.type;
  d["driver"] = i.driver;
  d["api_version"] = std::to_string(VK_API_VERSION_MAJOR(i.api_version)) + "." +
                     std::to_string(VK_API_VERSION_MINOR(i.api_version)) + "." +
                     std::to_string(VK_API_VERSION_PATCH(i.api_version));
  d["subgroup_size"] = i.subgroup_size;
  d["subgroup_arithmetic"] = i.subgroup_arithmetic;
  d["max_shared_memory"] = i.max_shared_memory;
  d["max_storage_buffer_range"] = i.max_storage_buffer_range;
  d["max_workgroup_invocations"] = i.max_workgroup_invocations;
  d["max_workgroup_size"] = std::vector<uint32_t>(i.max_workgroup_size, i.max_workgroup_size + 3);
  d["profile"] = i.profile;
  d["timestamps"] = i.timestamps;
  d["shader_float16"] = i.shader_float16;
  d["shader_int8"] = i.shader_int8;
  d["storage_16bit"] = i.storage_16bit;
  d["shader_int64"] = i.shader_int64;
  d["integer_dot_product"] = i.integer_dot_product;
  d["cooperative_matrix"] = i.cooperative_matrix;
  d["cooperative_matrix_shapes"] = i.cooperative_matrix_shapes;
  d["cooperative_matrix2"] = i.cooperative_matrix2;
  d["params_binding"] = i.params_in_storage ? "storage" : "uniform";
  return d;
}

py::dict device_info() {
  Context* ctx = Context::get();
  if (!ctx) throw std::runtime_error("no Vulkan device is available: " + Context::unavailable_reason());
  py::dict d = info_dict(ctx->info());
  d["choice"] = ctx->choice_reason();
  return d;
}

py::list list_devices() {
  Context* ctx = Context::get();
  if (!ctx) throw std::runtime_error("no Vulkan device is available: " + Context::unavailable_reason());
  py::list l;
  int index = 0;
  for (const DeviceListing& dev : ctx->list_devices()) {
    py::dict d = info_dict(dev.info);
    d["index"] = index++;
    d["chosen"] = dev.chosen;
    d["error"] = dev.error;
    l.append(d);
  }
  return l;
}

// The runtime's device memory: its blocks, and per heap the driver's budget and
// usage where VK_EXT_memory_budget (budget 0 without it).
py::dict device_memory() {
  Context* ctx = Context::get();
  if (!ctx) throw std::runtime_error("no Vulkan device is available: " + Context::unavailable_reason());
  const AllocatorStats s = ctx->allocator().stats();
  py::dict d;
  d["blocks"] = s.blocks;
  d["block_bytes"] = s.block_bytes;
  d["used_bytes"] = s.used_bytes;
  py::list heaps;
  for (const HeapReport& h : ctx->allocator().heaps()) {
    py::dict hd;
    hd["size"] = h.size;
    hd["device_local"] = h.device_local;
    hd["budget"] = h.budget;
    hd["usage"] = h.usage;
    hd["block_bytes"] = h.block_bytes;
    hd["used_bytes"] = h.used_bytes;
    heaps.append(hd);
  }
  d["heaps"] = heaps;
  return d;
}

py::dict execute_stats(const ComputeGraph& g) {
  py::dict d;
  d["executes"] = g.num_executes();
  d["records"] = g.num_records();
  d["dispatches"] = g.num_dispatches();
  return d;
}

py::dict memory_report(const ComputeGraph& g) {
  const MemoryReport r = g.memory_report();
  py::dict d;
  d["intermediate_bytes"] = r.intermediate_bytes;
  d["planned_bytes"] = r.planned_bytes;
  d["unshared_bytes"] = r.unshared_bytes;
  d["constant_bytes"] = r.constant_bytes;
  d["state_bytes"] = r.state_bytes;
  d["staging_bytes"] = r.staging_bytes;
  d["params_bytes"] = r.params_bytes;
  d["num_storages"] = r.num_storages;
  d["num_shared_objects"] = r.num_shared_objects;
  return d;
}

// {name: value} from Python: True/False as 1/0, ints, strings; None: the default.
SettingOverrides overrides_from(const py::object& obj) {
  SettingOverrides out;
  if (obj.is_none()) return out;
  for (const auto& [key, value] : obj.cast<py::dict>()) {
    const std::string name = py::str(key);
    if (value.is_none()) {
      out[name] = "";
    } else if (py::isinstance<py::bool_>(value)) {
      out[name] = value.cast<bool>() ? "1" : "0";
    } else if (py::isinstance<py::int_>(value) || py::isinstance<py::str>(value)) {
      out[name] = py::str(value);
      if (out[name].empty()) throw SettingsError("VKDELEGATE_" + name + ": an empty value (None gives the default)");
    } else {
      throw SettingsError("VKDELEGATE_" + name + ": expected a bool, an int or a str, not " +
                          std::string(py::str(py::type::of(value).attr("__name__"))));
    }
  }
  return out;
}

std::unique_ptr<ComputeGraph> load_graph(py::bytes blob, const py::object& overrides) {
  const Settings settings = with_overrides(graph_defaults(), overrides_from(overrides));
  std::string data = blob;  // the graph copies what it keeps
  py::gil_scoped_release release;  // loading compiles pipelines: let other threads run
  return ComputeGraph::load(reinterpret_cast<const uint8_t*>(data.data()), data.size(), settings);
}

// Runs fn(g) holding the graph's lock, which serializes the graph's users.
// The lock is taken with the GIL released, so a thread waiting for it never
// holds the GIL that the thread inside needs (that was a deadlock).
template <typename Fn>
auto with_graph_lock(ComputeGraph& g, Fn&& fn) {
  std::unique_lock<std::mutex> lock(g.mutex(), std::defer_lock);
  {
    py::gil_scoped_release release;
    lock.lock();
  }
  return fn(g);
}

// A device described by a dict of DeviceInfo's fields (the rest: none of the feature,
// a limit of 0), for the pure kernel choices.
DeviceInfo device_from(const py::dict& d) {
  DeviceInfo i;
  for (const auto& [key, value] : d) {
    const std::string k = py::str(key);
    if (k == "type") i.type = value.cast<std::string>();
    else if (k == "subgroup_size") i.subgroup_size = value.cast<uint32_t>();
    else if (k == "subgroup_arithmetic") i.subgroup_arithmetic = value.cast<bool>();
    else if (k == "max_shared_memory") i.max_shared_memory = value.cast<uint32_t>();
    else if (k == "max_storage_buffer_range") i.max_storage_buffer_range = value.cast<VkDeviceSize>();
    else if (k == "max_workgroup_invocations") i.max_workgroup_invocations = value.cast<uint32_t>();
    else if (k == "max_workgroup_size") {
      const auto c = value.cast<std::vector<uint32_t>>();
      if (c.size() != 3) throw SettingsError("max_workgroup_size: expected 3 values");
      for (int j = 0; j < 3; ++j) i.max_workgroup_size[j] = c[j];
    }
    else if (k == "max_workgroup_count") {
      const auto c = value.cast<std::vector<uint32_t>>();
      if (c.size() != 3) throw SettingsError("max_workgroup_count: expected 3 values");
      for (int j = 0; j < 3; ++j) i.max_workgroup_count[j] = c[j];
    }
    else if (k == "shader_float16") i.shader_float16 = value.cast<bool>();
    else if (k == "integer_dot_product") i.integer_dot_product = value.cast<bool>();
    else if (k == "cooperative_matrix") i.cooperative_matrix = value.cast<bool>();
    else if (k == "cooperative_matrix2") i.cooperative_matrix2 = value.cast<bool>();
    else if (k == "cooperative_matrix_shapes") i.cooperative_matrix_shapes = value.cast<std::vector<std::string>>();
    else throw SettingsError("unknown device property '" + k + "'");
  }
  return i;
}

DType float_dtype(const py::handle& value) {
  const std::string t = py::str(value);
  if (t != "float32" && t != "float16") throw SettingsError("dtype: expected float32 or float16");
  return t == "float16" ? DType::Float16 : DType::Float32;
}

py::dict choose_matmul_py(const py::dict& problem, const py::dict& device, const py::object& overrides) {
  MatmulProblem p;
  for (const auto& [key, value] : problem) {
    const std::string k = py::str(key);
    if (k == "dtype") {
      p.dtype = float_dtype(value);
      continue;
    }
    int64_t* field = k == "M" ? &p.M : k == "N" ? &p.N : k == "K" ? &p.K : k == "batch" ? &p.batch
                   : k == "a_sb" ? &p.a_sb : k == "a_sm" ? &p.a_sm : k == "a_sk" ? &p.a_sk
                   : k == "b_sb" ? &p.b_sb : k == "b_sk" ? &p.b_sk : k == "b_sn" ? &p.b_sn
                   : k == "c_sb" ? &p.c_sb : nullptr;
    if (field == nullptr) throw SettingsError("unknown product field '" + k + "'");
    *field = value.cast<int64_t>();
  }
  const MatmulChoice c = choose_matmul(p, device_from(device), with_overrides(Settings{}, overrides_from(overrides)));
  static const char* kinds[] = {"strided", "gemv", "tiled", "coop"};
  py::dict d;
  d["kernel"] = kinds[static_cast<int>(c.kernel)];
  d["shader"] = c.shader;
  d["local"] = py::make_tuple(c.local[0], c.local[1], c.local[2]);
  d["tile"] = py::make_tuple(c.tile_m, c.tile_n);
  d["splits"] = c.splits;
  d["group_m"] = c.group_m;
  return d;
}

py::dict choose_conv_py(const py::dict& problem, const py::dict& device, const py::object& overrides) {
  ConvProblem p;
  for (const auto& [key, value] : problem) {
    const std::string k = py::str(key);
    if (k == "dtype") {
      p.dtype = float_dtype(value);
    } else if (k == "transposed") {
      p.transposed = value.cast<bool>();
    } else {
      int64_t* field = k == "groups" ? &p.groups : k == "batch" ? &p.batch : k == "icpg" ? &p.icpg
                     : k == "ocpg" ? &p.ocpg : k == "kernel_taps" ? &p.kernel_taps
                     : k == "out_pixels" ? &p.out_pixels : nullptr;
      if (field == nullptr) throw SettingsError("unknown convolution field '" + k + "'");
      *field = value.cast<int64_t>();
    }
  }
  const ConvChoice c = choose_conv(p, device_from(device), with_overrides(Settings{}, overrides_from(overrides)));
  static const char* kinds[] = {"tiled", "coop", "gemm", "transposed", "depthwise", "direct"};
  py::dict d;
  d["kernel"] = kinds[static_cast<int>(c.kernel)];
  d["shader"] = c.shader;
  d["local"] = py::make_tuple(c.local[0], c.local[1], c.local[2]);
  d["tile"] = py::make_tuple(c.tile_m, c.tile_n);
  d["splits"] = c.splits;
  return d;
}

py::list settings_table_py() {
  py::list l;
  for (const SettingInfo& i : settings_table()) {
    py::dict d;
    d["name"] = i.name;
    d["type"] = i.type;
    d["default"] = i.default_value;
    d["values"] = i.values;
    if (i.type == "int") d["range"] = py::make_tuple(i.min, i.max);
    d["scope"] = i.scope == SettingScope::Process ? "process" : "graph";
    d["meaning"] = i.meaning;
    l.append(d);
  }
  return l;
}

// Several threads may run one graph: they take turns (with_graph_lock); the
// GPU work and the copies run without the GIL.
py::list run(ComputeGraph& g, const py::list& inputs) {
  if (inputs.size() != g.num_inputs()) {
    throw GraphError("expected " + std::to_string(g.num_inputs()) + " inputs, got " +
                     std::to_string(inputs.size()));
  }
  py::module_ np = py::module_::import("numpy");
  std::vector<py::array> arrays;
  for (size_t i = 0; i < g.num_inputs(); ++i) {
    py::array a = np.attr("ascontiguousarray")(inputs[i]);
    const DType want = g.input(i).dtype;
    // Equal, not identical (an unpickled array has its own dtype object); native byte order.
    if (!a.dtype().equal(py::dtype(numpy_name(want)))) {
      throw GraphError("input " + std::to_string(i) + " has dtype " +
                       std::string(py::str(a.dtype())) + ", expected " + dtype_name(want));
    }
    arrays.push_back(std::move(a));
  }
  std::vector<Sizes> shapes;
  std::vector<std::pair<const void*, size_t>> data;  // read without the GIL
  for (const py::array& a : arrays) {
    shapes.emplace_back(a.shape(), a.shape() + a.ndim());
    data.emplace_back(a.data(), static_cast<size_t>(a.nbytes()));
  }
  return with_graph_lock(g, [&](ComputeGraph& g) {
    {
      py::gil_scoped_release release;
      for (size_t i = 0; i < arrays.size(); ++i) {
        g.set_input_sizes(i, shapes[i]);
        g.copy_input(i, data[i].first, data[i].second);
      }
      g.execute();
    }
    py::list outs;
    for (size_t i = 0; i < g.num_outputs(); ++i) {
      const Tensor& o = g.output(i);
      py::array a(py::dtype(numpy_name(o.dtype)), std::vector<py::ssize_t>(o.sizes.begin(), o.sizes.end()));
      g.copy_output(i, a.mutable_data(), a.nbytes());
      outs.append(a);
    }
    return outs;
  });
}

py::list timings(const ComputeGraph& g) {
  py::list l;
  for (const NodeTiming& t : g.timings()) l.append(py::make_tuple(t.op, t.shape, t.us));
  return l;
}

// The shader variant of each dispatch, in order (which kernel a shape or a
// device feature selected).
py::list shaders(const ComputeGraph& g) {
  py::list l;
  for (const Node& n : g.nodes()) {
    if (n.pipeline) l.append(n.pipeline->shader);
  }
  return l;
}

// For the numerical debugger: value id as the last run left it: a numpy array for a tensor
// (readable where it has memory of its own: every tensor with DEBUG_VALUES), an int for a SymInt.
py::object read_value(ComputeGraph& g, int id) {
  if (id < 0 || static_cast<size_t>(id) >= g.num_blob_values()) {
    throw GraphError("value " + std::to_string(id) + " is out of range: the graph has " +
                     std::to_string(g.num_blob_values()) + " values");
  }
  const Value& v = g.value(id);
  if (const auto* s = std::get_if<SymInt>(&v)) return py::int_(s->value);
  if (!std::holds_alternative<Tensor>(v)) {
    throw GraphError("value " + std::to_string(id) + " is " + value_kind(v) + ", not a tensor or a SymInt");
  }
  const Tensor& t = std::get<Tensor>(v);
  py::array a(py::dtype(numpy_name(t.dtype)), std::vector<py::ssize_t>(t.sizes.begin(), t.sizes.end()));
  void* dst = a.mutable_data();
  const size_t nbytes = static_cast<size_t>(a.nbytes());
  {
    py::gil_scoped_release release;
    g.read_tensor(id, dst, nbytes);
  }
  return a;
}

// The shaders each op of the blob's chain dispatched in the last recording, by op index.
py::list op_shaders(const ComputeGraph& g) {
  py::list l;
  for (const auto& [name, first, end] : g.blob_ops()) {
    py::list names;
    for (size_t i = first; i < end; ++i) {
      const Node& n = g.nodes()[i];
      if (n.pipeline && n.groups[0] && n.groups[1] && n.groups[2]) names.append(n.pipeline->shader);
    }
    l.append(names);
  }
  return l;
}

}  // namespace

PYBIND11_MODULE(_vkdelegate, m) {
  m.doc() = "vkdelegate runtime: the VkDelegateBackend for ExecuTorch, and direct graph runs";
  py::register_exception<GraphError>(m, "GraphError", PyExc_ValueError);
  auto vulkan_error = py::register_exception<VulkanError>(m, "VulkanError", PyExc_RuntimeError);
  py::register_exception<OutOfMemoryError>(m, "OutOfMemoryError", vulkan_error.ptr());

  m.attr("BACKEND_ID") = kBackendId;
  register_eager(m);
  m.def("is_available", [] { return Context::get() != nullptr; },
        "Whether a Vulkan device can be used.");
  m.def("unavailable_reason", [] { Context::get(); return Context::unavailable_reason(); });
  m.def("device_info", &device_info, "Properties of the chosen Vulkan device; 'choice': why it was chosen.");
  m.def("list_devices", &list_devices,
        "Every Vulkan device (VKDELEGATE_DEVICE's index order), each with device_info()'s properties as the "
        "runtime would see it, 'index', 'chosen' and 'error' (why it could not be described; empty if none).");
  m.def("device_memory", &device_memory,
        "The runtime's device memory: blocks, block_bytes, used_bytes, and per heap size, device_local, "
        "budget and usage (VK_EXT_memory_budget; 0 without it), block_bytes, used_bytes.");
  m.def("validation_enabled", [] { Context::get(); return Context::validation_enabled(); });
  m.def("validation_error_count", &Context::validation_error_count);
  m.def("registered_ops", &registered_ops, "Op names this runtime has kernels for.");
  m.def("settings_table", &settings_table_py,
        "The VKDELEGATE_* settings (runtime/settings.def): name, type, default, values, range, scope, meaning.");
  m.def("_push_overrides", [](const py::object& o) { push_scoped_overrides(overrides_from(o)); },
        "Starts a scope of graph-setting overrides on this thread (use vkdelegate.runtime.overrides).");
  m.def("_pop_overrides", &pop_scoped_overrides);
  m.def("choose_matmul", &choose_matmul_py, py::arg("problem"), py::arg("device"), py::arg("overrides") = py::none(),
        "The kernel a matrix product takes (runtime/ops/matmul_choice.h), without a GPU: problem {dtype, M, N, "
        "K, batch, strides a_sb a_sm a_sk b_sb b_sk b_sn c_sb}, device {DeviceInfo fields}, settings over the "
        "built-in defaults (not the environment).");
  m.def("choose_conv", &choose_conv_py, py::arg("problem"), py::arg("device"), py::arg("overrides") = py::none(),
        "The kernel a convolution takes (runtime/ops/conv_choice.h), without a GPU: problem {dtype, "
        "transposed, groups, batch, icpg, ocpg, kernel_taps, out_pixels}, device {DeviceInfo fields}, "
        "settings over the built-in defaults.");
  m.def("_parse_environment", [](const std::map<std::string, std::string>& env) {
    const EnvironmentSettings e = parse_environment([&](const char* name) {
      const auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
    return py::make_tuple(e.process_error, e.graph_error);
  }, "(first bad process setting, first bad graph setting) of an environment given as a dict, as the "
     "runtime reads its own: for tests.");
  m.def("_shader_shared_bytes", [](const std::string& name, const std::vector<uint32_t>& local) {
    const ShaderBinary* bin = find_shader(name);
    if (!bin) throw std::invalid_argument("no embedded shader named '" + name + "'");
    if (local.size() != 3) throw std::invalid_argument("local size: expected 3 values");
    return spirv_shared_bytes(bin->words, bin->num_words, {local[0], local[1], local[2]});
  }, py::arg("shader"), py::arg("local_size"),
     "Bytes of shared memory an embedded shader declares at this workgroup size (as pipeline creation "
     "checks it): for tests.");
  m.def("_shader_names", [] {
    std::vector<std::string> names;
    for (size_t i = 0; i < kNumShaderBinaries; ++i) names.push_back(kShaderBinaries[i].name);
    return names;
  }, "The embedded shaders' names: for tests.");
  m.def("_parse_device_profile", [](const std::string& text) {
    const DeviceProfile p = parse_device_profile(text);
    py::dict d;
    auto put = [&](const char* key, const DeviceProfile::Value& v) {
      if (v.set) d[key] = v.value;
    };
    put("shared", p.shared);
    put("invocations", p.invocations);
    put("binding", p.binding);
    put("fp16", p.fp16);
    put("int64", p.int64);
    put("intdot", p.intdot);
    put("coopmat", p.coopmat);
    if (p.size[0].set) d["size"] = std::vector<uint64_t>{p.size[0].value, p.size[1].value, p.size[2].value};
    return d;
  }, py::arg("text"), "VKDELEGATE_DEVICE_PROFILE's text parsed as the runtime parses it: for tests.");
  m.def("_device_profile_names", &device_profile_names, "The named device profiles: for tests.");
  m.def("last_error", &last_error, "The last error the backend reported to ExecuTorch.");
  m.def("loaded_memory_reports", [] {
    py::list l;
    for (ComputeGraph* g : live_graphs()) l.append(memory_report(*g));
    return l;
  }, "Memory report of every delegate currently loaded through ExecuTorch.");
  m.def("loaded_execute_stats", [] {
    py::list l;
    for (ComputeGraph* g : live_graphs()) l.append(execute_stats(*g));
    return l;
  }, "Of every delegate currently loaded through ExecuTorch (in load order): {'executes', 'records', "
     "'dispatches'}: how many executes since load, how many of them recorded the command buffer (new "
     "input sizes) rather than replaying it, and the dispatches of the last recording.");
  m.def("loaded_shaders", [] {
    py::list l;
    for (ComputeGraph* g : live_graphs()) l.append(shaders(*g));
    return l;
  }, "The shaders of every delegate currently loaded through ExecuTorch (one list each, in load order): "
     "which kernels a loaded program runs.");
  m.def("set_loaded_profiling", [](bool on) {
    for (ComputeGraph* g : live_graphs()) {
      with_graph_lock(*g, [on](ComputeGraph& g) { g.set_profiling(on); return 0; });
    }
  }, py::arg("on"), "Turns GPU timestamps on or off for every delegate currently loaded through ExecuTorch.");
  m.def("loaded_timings", [] {
    py::list l;
    for (ComputeGraph* g : live_graphs()) l.append(with_graph_lock(*g, timings));
    return l;
  }, "Of every delegate currently loaded through ExecuTorch (in load order): (op, output sizes, microseconds) "
     "of each dispatch of its last profiled execute (set_loaded_profiling).");

  py::class_<ComputeGraph>(m, "Graph")
      .def(py::init(&load_graph), py::arg("blob"), py::arg("overrides") = py::none(),
           "Loads a delegate blob onto the device. overrides: {setting: value} for this graph's kernel "
           "choices (settings_table(), scope 'graph'; names without VKDELEGATE_), over the defaults "
           "(the environment, or the enclosing vkdelegate.runtime.overrides()).")
      .def_property_readonly("num_inputs", &ComputeGraph::num_inputs)
      .def_property_readonly("num_outputs", &ComputeGraph::num_outputs)
      .def("run", &run, py::arg("inputs"),
           "Runs the graph on numpy arrays; returns numpy arrays. Threads that share a graph take turns.")
      .def("memory_report", [](ComputeGraph& g) { return with_graph_lock(g, memory_report); })
      .def("set_profiling", [](ComputeGraph& g, bool on) {
        with_graph_lock(g, [on](ComputeGraph& g) { g.set_profiling(on); return 0; });
      })
      .def("shaders", [](ComputeGraph& g) { return with_graph_lock(g, shaders); },
           "the shader variant of each dispatch, in order")
      .def("read_value", [](ComputeGraph& g, int id) {
        return with_graph_lock(g, [id](ComputeGraph& g) { return read_value(g, id); });
      }, py::arg("id"),
           "Value id of the blob as the last run left it: a numpy array (a tensor at its current sizes) or an "
           "int (a SymInt). Intermediate tensors are readable when the graph was loaded with DEBUG_VALUES=1 "
           "(each its own memory); without it they share memory and reading one is an error.")
      .def("op_shaders", [](ComputeGraph& g) { return with_graph_lock(g, op_shaders); },
           "for each op of the blob's chain, the shaders it dispatched in the last recorded run")
      .def("timings", [](ComputeGraph& g) { return with_graph_lock(g, timings); },
           "(op, output sizes, microseconds) of each dispatch of the last run")
      .def("execute_stats", [](ComputeGraph& g) { return with_graph_lock(g, execute_stats); },
           "{'executes', 'records', 'dispatches'} since load (see loaded_execute_stats)")
      .def("barrier_stats", [](ComputeGraph& g) {
        return with_graph_lock(g, [](ComputeGraph& g) {
          return py::make_tuple(g.num_dispatches(), g.num_barriers());
        });
      }, "(dispatches, compute barriers between them) of the last recorded run")
      .def("dispatches", [](ComputeGraph& g) {
        return with_graph_lock(g, [](ComputeGraph& g) {
          py::list l;
          for (const Node& n : g.nodes()) {
            if (n.pipeline) l.append(py::make_tuple(n.op, n.pipeline->shader));
          }
          return l;
        });
      }, "(op, shader variant) of each dispatch, in order (shaders() with the op that runs each)");
}
