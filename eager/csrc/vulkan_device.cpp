// vkdelegate.eager._C: the eager device's torch half. PyTorch's PrivateUse1 backend (named
// "vulkan" by vkdelegate/eager/__init__.py) with tensors in the runtime's Vulkan memory,
// reached through the runtime module's table (device_table.h): the allocator, empty
// tensors, copies between the host and the device, views (metadata only), and a boxed CPU
// fallback for every op that has no kernel of its own here or in vkdelegate/eager/dispatch.py.
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/library.h>

#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "device_table.h"

namespace py = pybind11;

namespace {

const VkdEagerTable* g_table = nullptr;

const VkdEagerTable& table() {
  TORCH_CHECK(g_table, "vulkan device: not initialised (import vkdelegate.eager)");
  return *g_table;
}

void check(int rc, const char* what) {
  if (rc == VKD_EAGER_OK) return;
  TORCH_CHECK_WITH(OutOfMemoryError, rc != VKD_EAGER_OUT_OF_MEMORY, "vulkan device: ", what, ": ",
                   table().last_error());
  TORCH_CHECK(false, "vulkan device: ", what, ": ", table().last_error());
}

// Autograd is out of scope: an op the autograd engine runs (a backward) on this device fails.
void check_not_backward(const char* op) {
  TORCH_CHECK(torch::autograd::get_current_graph_task_id() == -1, "vulkan device: ", op,
              " in a backward pass: autograd is not supported on the eager vulkan device (run the model "
              "under torch.no_grad() or torch.inference_mode(), or train on another device)");
}

// Storage dtypes: real numbers and bool. Our kernels compute float32, float16, int32, int64
// and bool; other real dtypes are stored and go to the CPU fallback.
void check_dtype(c10::ScalarType t) {
  using c10::ScalarType;
  switch (t) {
    case ScalarType::Float: case ScalarType::Half: case ScalarType::BFloat16: case ScalarType::Double:
    case ScalarType::Int: case ScalarType::Long: case ScalarType::Short: case ScalarType::Char:
    case ScalarType::Byte: case ScalarType::Bool:
      return;
    default:
      TORCH_CHECK(false, "vulkan device: dtype ", t, " is not supported (float32, float16, bfloat16, float64, "
                  "int8, uint8, int16, int32, int64 and bool are)");
  }
}

void release_buffer(void* buffer) {
  if (buffer && g_table) g_table->release(buffer);
}

struct VulkanAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    const c10::Device device(c10::DeviceType::PrivateUse1, 0);
    if (nbytes == 0) return {nullptr, nullptr, &release_buffer, device};
    void* buffer = nullptr;
    check(table().alloc(nbytes, &buffer), ("allocating " + std::to_string(nbytes) + " bytes").c_str());
    return {buffer, buffer, &release_buffer, device};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release_buffer; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    check(table().copy(src, 0, dest, 0, count), "copy");
  }
};

VulkanAllocator g_allocator;

// The buffer handle of a device tensor (its storage's data pointer) and its first byte.
void* buffer_of(const at::Tensor& t) { return t.storage().data_ptr().get(); }
uint64_t byte_offset(const at::Tensor& t) { return static_cast<uint64_t>(t.storage_offset()) * t.element_size(); }

// Elements from the first to the last that a strided tensor reaches (0 if empty).
int64_t extent(const at::Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t n = 1;
  for (int64_t d = 0; d < t.dim(); ++d) n += (t.size(d) - 1) * t.stride(d);
  return n;
}

// A CPU tensor holding the bytes of [first, last element] of a device tensor, and t as a view of it.
std::pair<at::Tensor, at::Tensor> read_extent(const at::Tensor& t) {
  at::Tensor flat = at::empty({extent(t)}, t.options().device(at::kCPU));
  if (flat.numel() > 0) check(table().read(buffer_of(t), byte_offset(t), flat.data_ptr(), flat.nbytes()), "read");
  return {flat, flat.as_strided(t.sizes(), t.strides(), 0)};
}

// A device tensor's values on the CPU (its sizes and strides).
at::Tensor to_host(const at::Tensor& t) { return read_extent(t).second; }

// dst (device) = src (CPU; broadcast and converted as copy_ does).
void write_from_host(const at::Tensor& dst, const at::Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.is_contiguous()) {
    at::Tensor host = src.to(dst.scalar_type()).expand(dst.sizes()).contiguous();
    check(table().write(buffer_of(dst), byte_offset(dst), host.data_ptr(), host.nbytes()), "write");
    return;
  }
  // Strided: the elements between dst's first and last, with dst's updated in place.
  auto [flat, view] = read_extent(dst);
  view.copy_(src);
  check(table().write(buffer_of(dst), byte_offset(dst), flat.data_ptr(), flat.nbytes()), "write");
}

bool overlap(const at::Tensor& a, const at::Tensor& b) {
  if (buffer_of(a) != buffer_of(b)) return false;
  const uint64_t a0 = byte_offset(a), a1 = a0 + extent(a) * a.element_size();
  const uint64_t b0 = byte_offset(b), b1 = b0 + extent(b) * b.element_size();
  return a0 < b1 && b0 < a1;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  check_not_backward("copy");
  for (const at::Tensor* t : {&self, &dst}) {
    TORCH_CHECK(t->device().is_cpu() || t->device().is_privateuseone(), "vulkan device: copy between ",
                self.device(), " and ", dst.device(), " is not supported (copy through the CPU)");
  }
  if (dst.numel() == 0) return dst;
  const bool src_device = self.device().is_privateuseone(), dst_device = dst.device().is_privateuseone();
  if (src_device && !dst_device) {
    if (self.scalar_type() == dst.scalar_type() && self.sizes() == dst.sizes() && self.is_contiguous() &&
        dst.is_contiguous()) {  // .cpu(): straight into the host tensor
      check(table().read(buffer_of(self), byte_offset(self), dst.data_ptr(), dst.nbytes()), "read");
    } else {
      dst.copy_(to_host(self));
    }
  } else if (!src_device && dst_device) {
    write_from_host(dst, self);
  } else if (self.scalar_type() == dst.scalar_type() && self.sizes() == dst.sizes() && self.is_contiguous() &&
             dst.is_contiguous() && !overlap(self, dst)) {
    check(table().copy(buffer_of(self), byte_offset(self), buffer_of(dst), byte_offset(dst), dst.nbytes()), "copy");
  } else {
    // Strided, converting, broadcasting or overlapping: through the host, all read before any write.
    write_from_host(dst, to_host(self).clone());
  }
  return dst;
}

const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size, std::optional<at::MemoryFormat> format) {
  check_not_backward("resize_");
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  if (format.has_value()) impl->empty_tensor_restride(*format);
  const size_t needed = (self.storage_offset() + impl->numel()) * self.element_size();
  c10::StorageImpl* storage = self.storage().unsafeGetStorageImpl();
  if (impl->numel() > 0 && needed > storage->nbytes()) {
    TORCH_CHECK(storage->resizable(), "vulkan device: resize_ of a tensor whose storage is not resizable");
    c10::DataPtr fresh = g_allocator.allocate(needed);
    if (storage->nbytes() > 0) {
      check(table().copy(storage->data_ptr().get(), 0, fresh.get(), 0, storage->nbytes()), "resize copy");
    }
    storage->set_data_ptr_noswap(std::move(fresh));
    storage->set_nbytes(needed);
  }
  return self;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  resize_(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

constexpr c10::DispatchKeySet kDeviceKeys{c10::DispatchKey::PrivateUse1};

// A contiguous copy of a strided device tensor on the GPU where the registry can gather its
// dtype: an index_select (itself a cached one-op graph, queued) of the elements between the
// view's first and last, at flat indices computed once per (sizes, strides) and kept on the
// device (the last kGatherKept geometries). Other dtypes copy through the host (copy_from).
constexpr size_t kGatherKept = 64;
std::mutex g_gather_mutex;
auto& g_gather_indices = *new std::list<std::pair<std::string, at::Tensor>>;  // most recent first

bool gatherable(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kInt || t == at::kLong || t == at::kBool;
}

at::Tensor gather_strided(const at::Tensor& view) {
  const int64_t n = extent(view);
  std::string key;
  for (int64_t size : view.sizes()) key.append(reinterpret_cast<const char*>(&size), sizeof(size));
  key.push_back('/');
  for (int64_t stride : view.strides()) key.append(reinterpret_cast<const char*>(&stride), sizeof(stride));
  at::Tensor indices;
  {
    std::lock_guard<std::mutex> lock(g_gather_mutex);
    for (auto it = g_gather_indices.begin(); it != g_gather_indices.end(); ++it) {
      if (it->first == key) {
        indices = it->second;
        g_gather_indices.splice(g_gather_indices.begin(), g_gather_indices, it);
        break;
      }
    }
  }
  if (!indices.defined()) {
    at::Tensor flat = at::arange(n, at::kLong).as_strided(view.sizes(), view.strides()).reshape(-1);
    indices = flat.to(n < (int64_t{1} << 31) ? at::kInt : at::kLong).to(view.device());
    std::lock_guard<std::mutex> lock(g_gather_mutex);
    g_gather_indices.emplace_front(key, indices);
    if (g_gather_indices.size() > kGatherKept) g_gather_indices.pop_back();
  }
  const at::Tensor elements = view.as_strided({n}, {1}, view.storage_offset());
  return at::index_select(elements, 0, indices).view(view.sizes());
}

// clone (what .contiguous() calls): a dense tensor keeps its strides (one device copy of its
// bytes); a strided view into contiguous layout is a GPU gather.
at::Tensor clone_kernel(const at::Tensor& self, std::optional<at::MemoryFormat> format) {
  check_not_backward("clone");
  const at::MemoryFormat f = format.value_or(at::MemoryFormat::Preserve);
  if (f == at::MemoryFormat::Preserve && self.is_non_overlapping_and_dense()) {
    at::Tensor out = at::empty_strided(self.sizes(), self.strides(), self.options());
    if (self.numel() > 0) {  // a permutation of contiguous strides: numel elements from the first
      check(table().copy(buffer_of(self), byte_offset(self), buffer_of(out), 0, self.nbytes()), "copy");
    }
    return out;
  }
  if ((f == at::MemoryFormat::Preserve || f == at::MemoryFormat::Contiguous) && !self.is_contiguous() &&
      self.numel() > 0 && gatherable(self.scalar_type())) {
    return gather_strided(self);
  }
  at::Tensor out = at::empty(self.sizes(), self.options().memory_format(f == at::MemoryFormat::Preserve
                                                                           ? at::MemoryFormat::Contiguous : f));
  return out.copy_(self);
}

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> format) {
  check_not_backward("empty");
  const at::ScalarType t = c10::dtype_or_default(dtype);
  check_dtype(t);
  return at::detail::empty_generic(size, &g_allocator, kDeviceKeys, t, format);
}

at::Tensor empty_device(at::IntArrayRef sizes, at::ScalarType dtype) {
  return at::detail::empty_generic(sizes, &g_allocator, kDeviceKeys, dtype, std::nullopt);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory) {
  check_not_backward("empty_strided");
  const at::ScalarType t = c10::dtype_or_default(dtype);
  check_dtype(t);
  return at::detail::empty_strided_generic(size, stride, &g_allocator, kDeviceKeys, t);
}

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  check_not_backward("fill_");
  write_from_host(self, at::scalar_tensor(value, self.options().device(at::kCPU)));
  return self;
}

at::Tensor& zero_(at::Tensor& self) { return fill_scalar(self, 0); }

// Random fills draw on the CPU generator (the factories' random numbers match the CPU's for a
// seed) and copy the values over.
at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> generator) {
  check_not_backward("normal_");
  write_from_host(self, at::empty(self.sizes(), self.options().device(at::kCPU)).normal_(mean, std, generator));
  return self;
}

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> generator) {
  check_not_backward("uniform_");
  write_from_host(self, at::empty(self.sizes(), self.options().device(at::kCPU)).uniform_(from, to, generator));
  return self;
}

at::Scalar local_scalar_dense(const at::Tensor& self) { return at::_local_scalar_dense(to_host(self)); }

// Tensors of one op: all on this device, but for 0-dim CPU tensors (scalars), as PyTorch allows.
void check_devices(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t num_args) {
  auto check_one = [&](const at::Tensor& t) {
    if (!t.defined() || t.device().is_privateuseone() || (t.device().is_cpu() && t.dim() == 0)) return;
    TORCH_CHECK(false, "vulkan device: ", op.schema().operator_name(), " got tensors on vulkan and on ", t.device(),
                "; move them to one device (a 0-dim CPU tensor is the one exception)");
  };
  for (size_t i = stack.size() - num_args; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) check_one(v.toTensor());
    else if (v.isTensorList()) for (const at::Tensor& t : v.toTensorVector()) check_one(t);
    else if (v.isList()) for (const c10::IValue& e : v.toListRef()) if (e.isTensor()) check_one(e.toTensor());
  }
}

std::mutex g_warned_mutex;
std::map<std::string, uint64_t> g_warned;  // op name -> calls that ran on the CPU

// Ops without a kernel on this device: run on the CPU (arguments copied there, results and
// mutated arguments copied back), with one warning per op.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = c10::toString(op.schema().operator_name());
  check_not_backward(name.c_str());
  check_devices(op, *stack, op.schema().arguments().size());
  bool first;
  {
    std::lock_guard<std::mutex> lock(g_warned_mutex);
    first = ++g_warned[name] == 1;
  }
  if (first) {
    TORCH_WARN("vulkan device: ", name, " has no kernel on the device; it runs on the CPU "
               "(its tensors copied there and back). This warning is shown once per op.");
  }
  at::native::cpu_fallback(op, stack);
}

// ---------------------------------------------------------------------------------------------
// Registry ops in C++: the cached one-op graphs run without Python.
//
// Every op vkdelegate/eager/dispatch.py covers has two kernels: its Python kernel (the full
// semantics: scalars moved to the device, strided inputs gathered, the graph built on a miss,
// the CPU fallback), registered at PrivateUse2, a key no tensor carries; and FastKernel here,
// at PrivateUse1. FastKernel keys a call by the op, its tensors' sizes and dtypes and its other
// arguments' values; where every tensor is on the device, contiguous and not empty (or a 0-dim
// CPU scalar, whose value is part of the key) and the key has a graph, it allocates the outputs
// and runs the graph through the runtime's table: no Python. Otherwise it calls the Python
// kernel (redispatch to PrivateUse2) with the key pending; when that kernel has the key's graph
// it hands it here (fast_put), with the device tensors it made of the scalars.

struct OutputSpec {
  bool defined = false;
  std::vector<int64_t> sizes;
  at::ScalarType dtype = at::kFloat;
};

// One key's graph: the runtime's graph (its Python object held), its outputs, and per tensor
// position (the call's tensors in schema order, lists opened) a state's output index (or -1)
// and, for a CPU scalar, the device tensor that holds its value (its Python object held).
struct FastEntry {
  PyObject* graph_object = nullptr;
  void* graph = nullptr;
  std::vector<OutputSpec> outputs;
  bool multi = false;
  std::vector<int> state_output;
  struct Scalar {
    PyObject* object = nullptr;
    void* buffer = nullptr;
    uint64_t offset = 0;
  };
  std::vector<Scalar> scalars;

  ~FastEntry() {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    Py_XDECREF(graph_object);
    for (const Scalar& s : scalars) Py_XDECREF(s.object);
  }
};

std::shared_mutex g_fast_mutex;
// Never destroyed (its entries drop Python objects, which needs an interpreter).
auto& g_fast = *new std::unordered_map<std::string, std::shared_ptr<FastEntry>>;
std::atomic<uint64_t> g_fast_hits{0};

// The key of the call being served by the Python kernel, and which of its tensors are CPU scalars.
struct Pending {
  std::string key;
  std::vector<bool> cpu_scalar;
  bool filled = false;
};
thread_local std::vector<Pending> t_pending;

template <typename T>
void append(std::string& key, const T& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

struct CallTensor {
  const at::Tensor* tensor;
  bool cpu_scalar;
  bool strided = false;  // a strided device tensor, gathered once the call is known to be eligible
};

// Appends one argument to the key; false where the call is not for the fast path. A strided
// device tensor (may_gather: not the tensor an in-place op writes) is keyed as the contiguous copy
// the call will gather.
bool key_of(const c10::IValue& v, std::string& key, std::vector<CallTensor>& tensors, bool may_gather) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) {
      key.push_back('n');
      return true;
    }
    if (t.device().is_cpu() && t.dim() == 0) {  // a scalar: its value is part of the key
      key.push_back(t.unsafeGetTensorImpl()->is_wrapped_number() ? 'w' : 's');
      append(key, t.scalar_type());
      key.append(static_cast<const char*>(t.const_data_ptr()), t.element_size());
      tensors.push_back({&t, true});
      return true;
    }
    if (!t.device().is_privateuseone() || t.numel() == 0) return false;
    const bool strided = !t.is_contiguous();
    if (strided && (!may_gather || !gatherable(t.scalar_type()))) return false;
    key.push_back('t');
    append(key, t.scalar_type());
    append(key, static_cast<int32_t>(t.dim()));
    for (int64_t size : t.sizes()) append(key, size);
    tensors.push_back({&t, false, strided});
    return true;
  }
  if (v.isNone()) {
    key.push_back('n');
  } else if (v.isBool()) {
    key.push_back('b');
    append(key, v.toBool());
  } else if (v.isInt()) {
    key.push_back('i');
    append(key, v.toInt());
  } else if (v.isDouble()) {
    key.push_back('d');
    append(key, v.toDouble());
  } else if (v.isString()) {
    key.push_back('s');
    const std::string& str = v.toStringRef();
    append(key, str.size());
    key.append(str);
  } else if (v.isDevice()) {
    key.push_back('D');
    append(key, v.toDevice().type());
  } else if (v.isList()) {
    const auto list = v.toListRef();
    key.push_back('[');
    append(key, list.size());
    for (const c10::IValue& item : list) {
      if (!key_of(item, key, tensors, may_gather)) return false;
    }
  } else {
    return false;  // a generator, a symbolic size, ...
  }
  return true;
}

at::ScalarType dtype_named(const std::string& name) {
  static const std::map<std::string, at::ScalarType> names = {
      {"torch.float32", at::kFloat}, {"torch.float16", at::kHalf},   {"torch.bfloat16", at::kBFloat16},
      {"torch.float64", at::kDouble}, {"torch.int32", at::kInt},     {"torch.int64", at::kLong},
      {"torch.int16", at::kShort},    {"torch.int8", at::kChar},     {"torch.uint8", at::kByte},
      {"torch.bool", at::kBool}};
  const auto it = names.find(name);
  TORCH_CHECK(it != names.end(), "vulkan device: dtype ", name, " is not supported");
  return it->second;
}

class FastKernel final : public c10::OperatorKernel {
 public:
  FastKernel(std::string name, bool inplace) : name_(std::move(name)), inplace_(inplace) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const size_t n = op.schema().arguments().size();
    std::string key;
    key.reserve(96);
    append(key, this);
    std::vector<CallTensor> tensors;
    bool eligible = torch::autograd::get_current_graph_task_id() == -1;  // a backward: Python raises
    for (size_t i = stack->size() - n; eligible && i < stack->size(); ++i) {
      eligible = key_of((*stack)[i], key, tensors, !(inplace_ && i == stack->size() - n));
    }
    std::shared_ptr<FastEntry> entry;
    if (eligible) {
      std::shared_lock<std::shared_mutex> lock(g_fast_mutex);
      const auto it = g_fast.find(key);
      if (it != g_fast.end()) entry = it->second;
    }
    if (entry) {
      std::deque<at::Tensor> gathered;  // contiguous copies of strided inputs, alive while the graph runs
      for (CallTensor& t : tensors) {
        if (t.strided) t.tensor = &gathered.emplace_back(gather_strided(*t.tensor));
      }
      if (run(op, *entry, tensors, stack)) {
        ++g_fast_hits;
        return;
      }
    }
    // The Python kernel; a call for the fast path leaves its key pending for fast_put.
    if (eligible) {
      Pending pending;
      pending.key = std::move(key);
      for (const CallTensor& t : tensors) pending.cpu_scalar.push_back(t.cpu_scalar);
      t_pending.push_back(std::move(pending));
    }
    struct PopPending {
      bool active;
      ~PopPending() {
        if (active) t_pending.pop_back();
      }
    } pop{eligible};
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::PrivateUse2), stack);
  }

 private:
  // Runs the entry's graph on the call's tensors; false where the Python kernel must (an in-place
  // op whose result the tensor cannot hold as it is).
  bool run(const c10::OperatorHandle& op, const FastEntry& e, const std::vector<CallTensor>& tensors,
           torch::jit::Stack* stack) {
    if (tensors.size() != e.state_output.size()) return false;
    const size_t n = op.schema().arguments().size();
    at::Tensor self;
    if (inplace_) {
      self = (*stack)[stack->size() - n].toTensor();
      const OutputSpec& out = e.outputs.at(0);
      if (e.multi || !out.defined || out.dtype != self.scalar_type() || self.sizes() != at::IntArrayRef(out.sizes)) {
        return false;
      }
    }
    std::vector<VkdEagerBinding> inputs;
    std::vector<VkdEagerState> states;
    inputs.reserve(tensors.size());
    for (size_t k = 0; k < tensors.size(); ++k) {
      const at::Tensor& t = *tensors[k].tensor;
      if (tensors[k].cpu_scalar) {
        const FastEntry::Scalar& s = e.scalars[k];
        inputs.push_back({s.buffer, s.offset, nullptr, 0});
      } else if (e.state_output[k] >= 0) {
        states.push_back({buffer_of(t), byte_offset(t), static_cast<uint32_t>(e.state_output[k])});
      } else {
        inputs.push_back({buffer_of(t), byte_offset(t), t.sizes().data(), static_cast<uint32_t>(t.dim())});
      }
    }
    std::vector<at::Tensor> results;
    std::vector<VkdEagerBinding> outputs;
    for (const OutputSpec& spec : e.outputs) {
      if (!spec.defined) {
        results.emplace_back();
        continue;
      }
      results.push_back(inplace_ ? self : empty_device(spec.sizes, spec.dtype));
      const at::Tensor& t = results.back();
      outputs.push_back({buffer_of(t), byte_offset(t), nullptr, 0});
    }
    check(table().run(e.graph, inputs.data(), inputs.size(), outputs.data(), outputs.size(), states.data(),
                      states.size()),
          name_.c_str());
    torch::jit::drop(*stack, n);
    const auto& returns = op.schema().returns();
    if (!e.multi) {
      stack->emplace_back(std::move(results.at(0)));
    } else if (returns.size() == 1) {  // Tensor[]
      stack->emplace_back(c10::List<at::Tensor>(results));
    } else {
      for (at::Tensor& t : results) stack->emplace_back(std::move(t));
    }
    return true;
  }

  std::string name_;
  bool inplace_;
};

// torch::Library objects live as long as their registrations.
std::vector<std::unique_ptr<torch::Library>>& g_fast_libraries = *new std::vector<std::unique_ptr<torch::Library>>;

void register_fast(const std::string& ns, const std::vector<std::pair<std::string, bool>>& overloads) {
  auto library = std::make_unique<torch::Library>(torch::Library::IMPL, ns, c10::DispatchKey::PrivateUse1,
                                                  __FILE__, __LINE__);
  for (const auto& [overload, inplace] : overloads) {
    library->impl(overload.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                                        std::make_unique<FastKernel>(ns + "." + overload, inplace)));
  }
  g_fast_libraries.push_back(std::move(library));
}

// The Python kernel of a pending call found (or built) its graph: keep it for the key.
// outputs: [(sizes, dtype name) or None]; states: {tensor position: output index};
// tensors: [(tensor, buffer, byte offset)] of the call after its scalars were moved to the device.
void fast_put(py::object graph, uintptr_t address, const py::list& outputs, bool multi, const py::dict& states,
              const py::list& tensors) {
  if (t_pending.empty() || t_pending.back().filled) return;
  Pending& pending = t_pending.back();
  pending.filled = true;
  if (tensors.size() != pending.cpu_scalar.size()) return;  // not the call C++ keyed: keep nothing
  auto entry = std::make_shared<FastEntry>();
  entry->graph = reinterpret_cast<void*>(address);
  entry->graph_object = graph.release().ptr();
  entry->multi = multi;
  for (const py::handle& item : outputs) {
    OutputSpec spec;
    if (!item.is_none()) {
      const auto t = item.cast<py::tuple>();
      spec.defined = true;
      spec.sizes = t[0].cast<std::vector<int64_t>>();
      spec.dtype = dtype_named(py::str(t[1]));
    }
    entry->outputs.push_back(std::move(spec));
  }
  entry->state_output.assign(tensors.size(), -1);
  for (const auto& [position, output] : states) entry->state_output.at(position.cast<size_t>()) = output.cast<int>();
  entry->scalars.resize(tensors.size());
  for (size_t k = 0; k < tensors.size(); ++k) {
    if (!pending.cpu_scalar[k]) continue;
    const auto t = tensors[k].cast<py::tuple>();
    py::object tensor = t[0];
    entry->scalars[k].object = tensor.release().ptr();
    entry->scalars[k].buffer = reinterpret_cast<void*>(t[1].cast<uintptr_t>());
    entry->scalars[k].offset = t[2].cast<uint64_t>();
  }
  std::unique_lock<std::shared_mutex> lock(g_fast_mutex);
  g_fast[pending.key] = std::move(entry);
}

struct VulkanHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return g_table != nullptr; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  at::Device getDeviceFromPtr(void*) const override { return {c10::DeviceType::PrivateUse1, 0}; }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t nbytes) const override {
    c10::StorageImpl* s = storage.unsafeGetStorageImpl();
    c10::DataPtr fresh = g_allocator.allocate(nbytes);
    const size_t keep = std::min(nbytes, s->nbytes());
    if (keep > 0) check(table().copy(s->data_ptr().get(), 0, fresh.get(), 0, keep), "storage resize copy");
    s->set_data_ptr_noswap(std::move(fresh));
    s->set_nbytes(nbytes);
  }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, c10::impl::NoOpDeviceGuardImpl<c10::DeviceType::PrivateUse1>);

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
  m.impl("zero_", TORCH_FN(zero_));
  m.impl("normal_", TORCH_FN(normal_));
  m.impl("uniform_", TORCH_FN(uniform_));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("clone", TORCH_FN(clone_kernel));
  // Views: metadata over the same storage.
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));  // Tensor.unfold is a view (as_strided)
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

PYBIND11_MODULE(_C, m) {
  m.doc() = "vkdelegate's eager vulkan device: PrivateUse1 kernels on the runtime's Vulkan memory";
  m.def("install", [](py::capsule capsule) {
    if (g_table) return;
    const auto* t = static_cast<const VkdEagerTable*>(PyCapsule_GetPointer(capsule.ptr(), VKD_EAGER_TABLE_CAPSULE));
    if (!t) throw py::error_already_set();
    if (t->version != VKD_EAGER_TABLE_VERSION) {
      throw std::runtime_error("vkdelegate.eager._C was built for device table version " +
                               std::to_string(VKD_EAGER_TABLE_VERSION) + ", the runtime has " +
                               std::to_string(t->version) + ": rebuild the package");
    }
    g_table = t;
    static VulkanHooks hooks;
    at::RegisterPrivateUse1HooksInterface(&hooks);
    c10::SetAllocator(c10::DeviceType::PrivateUse1, &g_allocator);
  }, py::arg("table"), "Connects the device to the runtime's device table (vkdelegate.eager does this on import).");
  m.def("register_fast", &register_fast, py::arg("namespace"), py::arg("overloads"),
        "C++ kernels (PrivateUse1) for [(overload, in_place)] of a namespace whose Python kernels are at "
        "PrivateUse2: cached graphs run without Python (vkdelegate/eager/dispatch.py).");
  m.def("fast_pending", [] { return !t_pending.empty() && !t_pending.back().filled; },
        "Whether this thread's current op call waits for its graph (fast_put).");
  m.def("fast_put", &fast_put, py::arg("graph"), py::arg("address"), py::arg("outputs"), py::arg("multi"),
        py::arg("states"), py::arg("tensors"), "Keeps the pending call's graph for its key.");
  m.def("fast_stats", [] {
    std::shared_lock<std::shared_mutex> lock(g_fast_mutex);
    return std::make_pair(g_fast.size(), g_fast_hits.load());
  }, "(keys, calls served) of the C++ kernels' cache.");
  m.def("fast_clear", [] {
    std::unordered_map<std::string, std::shared_ptr<FastEntry>> old;
    {
      std::unique_lock<std::shared_mutex> lock(g_fast_mutex);
      old.swap(g_fast);
      g_fast_hits = 0;
    }
  }, "Drops the C++ kernels' cached graphs.");
  m.def("fallback_counts", [] {
    std::lock_guard<std::mutex> lock(g_warned_mutex);
    return g_warned;
  }, "Calls per op that ran on the CPU through the fallback so far.");
}
