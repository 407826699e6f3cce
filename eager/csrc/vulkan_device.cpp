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

#include <mutex>
#include <map>
#include <string>

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
    dst.copy_(to_host(self));
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

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> format) {
  check_not_backward("empty");
  const at::ScalarType t = c10::dtype_or_default(dtype);
  check_dtype(t);
  return at::detail::empty_generic(size, &g_allocator, kDeviceKeys, t, format);
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
  m.def("fallback_counts", [] {
    std::lock_guard<std::mutex> lock(g_warned_mutex);
    return g_warned;
  }, "Calls per op that ran on the CPU through the fallback so far.");
}
