#include "values.h"

#include <climits>
#include <cstring>
#include <sstream>

namespace vkd {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float16: return 2;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::Int8: return 1;
    case DType::UInt8: return 1;
    case DType::Bool: return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float16: return "float16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
  }
  return "?";
}

StorageType storage_type(DType t, StorageType int64_storage) {
  switch (t) {
    case DType::Float32: return StorageType::F32;
    case DType::Float16: return StorageType::F16;
    case DType::Int64: return int64_storage;
    default: return StorageType::I32;
  }
}

size_t storage_size(StorageType s) {
  switch (s) {
    case StorageType::F16: return 2;
    case StorageType::I64: return 8;
    default: return 4;
  }
}

const char* storage_suffix(StorageType s) {
  switch (s) {
    case StorageType::F32: return "f32";
    case StorageType::F16: return "f16";
    case StorageType::I32: return "i32";
    case StorageType::I64: return "i64";
  }
  return "?";
}

namespace {
template <typename From>
void widen(const void* src, int32_t* dst, size_t n) {
  const From* s = static_cast<const From*>(src);
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<int32_t>(s[i]);
}
template <typename To>
void narrow(const int32_t* src, void* dst, size_t n) {
  To* d = static_cast<To*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<To>(src[i]);
}
// The storage of dtype t is its host layout: a copy.
bool same_layout(DType t, StorageType s) {
  return dtype_size(t) == storage_size(s) && (is_float_dtype(t) || t == DType::Int32 || t == DType::Int64);
}
}  // namespace

void to_storage(DType t, StorageType st, const void* src, void* dst, size_t n) {
  if (same_layout(t, st)) {
    std::memcpy(dst, src, n * dtype_size(t));
    return;
  }
  int32_t* out = static_cast<int32_t*>(dst);
  switch (t) {
    case DType::Int64: {  // int32 storage
      const int64_t* s = static_cast<const int64_t*>(src);
      for (size_t i = 0; i < n; ++i) {
        if (s[i] < INT32_MIN || s[i] > INT32_MAX) {
          throw GraphError("int64 value " + std::to_string(s[i]) +
                           " does not fit the int32 the GPU stores int64 tensors as (this device has no "
                           "shaderInt64, or VKDELEGATE_INT64_STORAGE=32)");
        }
        out[i] = static_cast<int32_t>(s[i]);
      }
      return;
    }
    case DType::Bool: widen<uint8_t>(src, out, n); for (size_t i = 0; i < n; ++i) out[i] = out[i] != 0; return;
    case DType::Int8: widen<int8_t>(src, out, n); return;
    case DType::UInt8: widen<uint8_t>(src, out, n); return;
    default: throw GraphError(std::string("internal error: no storage of ") + dtype_name(t) + " as " + storage_suffix(st));
  }
}

void from_storage(DType t, StorageType st, const void* src, void* dst, size_t n) {
  if (same_layout(t, st)) {
    std::memcpy(dst, src, n * dtype_size(t));
    return;
  }
  const int32_t* in = static_cast<const int32_t*>(src);
  switch (t) {
    case DType::Int64: narrow<int64_t>(in, dst, n); return;
    case DType::Bool: {
      uint8_t* d = static_cast<uint8_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = in[i] != 0;
      return;
    }
    case DType::Int8: narrow<int8_t>(in, dst, n); return;
    case DType::UInt8: narrow<uint8_t>(in, dst, n); return;
    default: throw GraphError(std::string("internal error: no storage of ") + dtype_name(t) + " as " + storage_suffix(st));
  }
}

std::string sizes_str(const Sizes& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw GraphError("a size computation overflows: " + std::to_string(a) + " * " + std::to_string(b));
  }
  return r;
}

int64_t numel_of(const Sizes& s) {
  int64_t n = 1;
  for (int64_t d : s) n = checked_mul(n, d);
  return n;
}

Sizes Tensor::strides() const {
  Sizes st(sizes.size());
  int64_t s = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    st[i] = s;
    s *= sizes[i];
  }
  return st;
}

const char* value_kind(const Value& v) {
  static const char* kNames[] = {"None", "Tensor", "int", "float", "bool", "str",
                                 "int[]", "float[]", "bool[]", "list", "SymInt"};
  return kNames[v.index()];
}

} // namespace vkd
