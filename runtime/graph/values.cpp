#include "values.h"

#include <climits>
#include <cstring>
#include <sstream>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif

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

// float32 <-> float16 on the host (float32 tensors stored as halves: ComputeGraph's host casts), round to
// nearest even, infinities and NaN kept (NaN quiet), overflow to infinity, half subnormals exact. The
// portable bit arithmetic (after F. Giesen's float_to_half_fast3_rtne and half_to_float) serves where the
// CPU has no conversion instructions; x86 with F16C and ARMv8 convert 8 / 4 at a time.
uint16_t half_from_float(float value) {
  const uint32_t f32_inf = 255u << 23, f16_max = (127u + 16u) << 23;
  const uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  uint32_t f;
  std::memcpy(&f, &value, 4);
  const uint32_t sign = f & 0x80000000u;
  f ^= sign;
  uint32_t o;
  if (f >= f16_max) {
    o = f > f32_inf ? 0x7e00u : 0x7c00u;  // NaN (quiet), else infinity
  } else if (f < (113u << 23)) {  // a half subnormal or zero: let the float adder round
    float v, magic;
    std::memcpy(&v, &f, 4);
    std::memcpy(&magic, &denorm_magic, 4);
    v += magic;
    std::memcpy(&o, &v, 4);
    o -= denorm_magic;
  } else {
    const uint32_t mant_odd = (f >> 13) & 1u;
    f += ((15u - 127u) << 23) + 0xfffu;  // rebias the exponent, round
    f += mant_odd;
    o = f >> 13;
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}
float float_from_half(uint16_t h) {
  const uint32_t shifted_exp = 0x7c00u << 13;
  uint32_t o = (h & 0x7fffu) << 13;
  const uint32_t exp = shifted_exp & o;
  o += (127u - 15u) << 23;
  if (exp == shifted_exp) {
    o += (128u - 16u) << 23;  // infinity or NaN
  } else if (exp == 0) {      // zero or subnormal: renormalize through the float adder
    o += 1u << 23;
    float v, magic;
    const uint32_t magic_bits = 113u << 23;
    std::memcpy(&v, &o, 4);
    std::memcpy(&magic, &magic_bits, 4);
    v -= magic;
    std::memcpy(&o, &v, 4);
  }
  o |= static_cast<uint32_t>(h & 0x8000u) << 16;
  float out;
  std::memcpy(&out, &o, 4);
  return out;
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx,f16c"))) void halves_from_floats_f16c(const float* s, uint16_t* d, size_t n, size_t& i) {
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  }
}
__attribute__((target("avx,f16c"))) void floats_from_halves_f16c(const uint16_t* s, float* d, size_t n, size_t& i) {
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  }
}
// CPUID's F16C and AVX bits, and the OS saving the AVX registers (XGETBV; clang's __builtin_cpu_supports
// knows no "f16c").
bool have_f16c() {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX) || !(c & bit_F16C)) return false;
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6u) == 6u;  // XMM and YMM state
  }();
  return yes;
}
#endif

void halves_from_floats(const float* s, uint16_t* d, size_t n) {
  size_t i = 0;
#if defined(__x86_64__) || defined(__i386__)
  if (have_f16c()) halves_from_floats_f16c(s, d, n, i);
#elif defined(__aarch64__)
  for (; i < n; ++i) {
    const __fp16 h = static_cast<__fp16>(s[i]);
    std::memcpy(d + i, &h, 2);
  }
#endif
  for (; i < n; ++i) d[i] = half_from_float(s[i]);
}
void floats_from_halves(const uint16_t* s, float* d, size_t n) {
  size_t i = 0;
#if defined(__x86_64__) || defined(__i386__)
  if (have_f16c()) floats_from_halves_f16c(s, d, n, i);
#elif defined(__aarch64__)
  for (; i < n; ++i) {
    __fp16 h;
    std::memcpy(&h, s + i, 2);
    d[i] = static_cast<float>(h);
  }
#endif
  for (; i < n; ++i) d[i] = float_from_half(s[i]);
}
}  // namespace

void to_storage(DType t, StorageType st, const void* src, void* dst, size_t n) {
  if (same_layout(t, st)) {
    std::memcpy(dst, src, n * dtype_size(t));
    return;
  }
  if (t == DType::Float32 && st == StorageType::F16) {
    halves_from_floats(static_cast<const float*>(src), static_cast<uint16_t*>(dst), n);
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
  if (t == DType::Float32 && st == StorageType::F16) {
    floats_from_halves(static_cast<const uint16_t*>(src), static_cast<float*>(dst), n);
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
