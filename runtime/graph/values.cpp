#include "values.h"

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

std::string sizes_str(const Sizes& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

int64_t numel_of(const Sizes& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
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
                                 "int[]", "float[]", "bool[]", "list"};
  return kNames[v.index()];
}

} // namespace vkd
