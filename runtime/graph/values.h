// The values of a graph: tensors, scalars, lists; as the serialized graph has them.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "../printable.h"

namespace vkd {

// Any problem with a graph, its arguments or its inputs. The message names it, in
// printable ASCII (printable.h): it may quote bytes of a corrupted blob.
class GraphError : public std::runtime_error {
 public:
  explicit GraphError(const std::string& message) : std::runtime_error(printable_ascii(message)) {}
};

// A fault the GPU-side checks found in an execute's data (an index out of range, an
// integer division by zero, an int64 result outside an int32 storage): the inputs
// are wrong, not the graph.
class ExecuteFault : public GraphError {
 public:
  using GraphError::GraphError;
};

// Codes as in serialization/schema.fbs.
enum class DType : int8_t {
  Float32 = 0,
  Float16 = 1,
  Int32 = 2,
  Int64 = 3,
  Int8 = 4,
  UInt8 = 5,
  Bool = 6,
};
constexpr int kNumDTypes = 7;

size_t dtype_size(DType t);
const char* dtype_name(DType t);

// How a graph dtype is stored on the GPU. bool and 8-bit integers live as int32:
// every GPU has 32-bit integer storage, while 8-bit storage is optional. int64 is
// int64 (I64) where the device has shaderInt64, else int32 (I32: every op then
// checks that int64 results stay within int32, glsl/fault.glslh); the graph
// decides it once (ComputeGraph::storage_type_of) and each tensor carries it.
// Values are converted where a tensor crosses the host boundary (inputs,
// outputs, constants); an int64 that does not fit an int32 storage is an error.
enum class StorageType { F32, F16, I32, I64 };
// `int64_storage`: I32 or I64, the graph's choice for int64.
StorageType storage_type(DType t, StorageType int64_storage);
size_t storage_size(StorageType s);
// Suffix of the shader variant for this storage: "f32", "f16", "i32" or "i64".
const char* storage_suffix(StorageType s);
inline bool is_int_storage(StorageType s) { return s == StorageType::I32 || s == StorageType::I64; }
// float32 or float16: the float variants of a shader family.
inline bool is_float_dtype(DType t) { return t == DType::Float32 || t == DType::Float16; }
// n elements: graph dtype on the host <-> storage type on the GPU.
void to_storage(DType t, StorageType s, const void* src, void* dst, size_t n);
void from_storage(DType t, StorageType s, const void* src, void* dst, size_t n);

using Sizes = std::vector<int64_t>;
std::string sizes_str(const Sizes& s);
// The product of sizes; throws GraphError where it leaves int64 (sizes computed
// from a corrupted blob's arguments can).
int64_t numel_of(const Sizes& s);
// a * b, or GraphError where the product leaves int64.
int64_t checked_mul(int64_t a, int64_t b);

// Our tensors are contiguous (row-major) buffers, up to rank 8.
constexpr int kMaxRank = 8;

struct Tensor {
  DType dtype = DType::Float32;
  StorageType storage_type = StorageType::F32;  // how the GPU stores it (ComputeGraph::storage_type_of)
  Sizes sizes;      // current sizes
  Sizes max_sizes;  // upper bound; the storage is allocated for it
  Sizes min_sizes;  // graph inputs: the smallest sizes an execute may give (empty: no bound)
  int storage = -1; // index into the graph's storages
  int constant_id = -1;
  int mem_obj_id = -1;  // shared memory object from memory planning, or -1
  bool is_view = false; // shares the storage of another tensor (add_view_node, alias_state)
  bool is_state = false; // lives across executes (schema.fbs Tensor.state): a KV cache
  int view_of = -1;     // that tensor's value id

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const { return numel_of(sizes); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  size_t max_nbytes() const {
    return static_cast<size_t>(numel_of(max_sizes)) * dtype_size(dtype);
  }
  // Sizes on the GPU (see StorageType).
  size_t storage_nbytes() const { return static_cast<size_t>(numel()) * storage_size(storage_type); }
  size_t max_storage_nbytes() const {
    return static_cast<size_t>(numel_of(max_sizes)) * storage_size(storage_type);
  }
  Sizes strides() const;  // contiguous strides of the current sizes
};

struct Null {};
struct ValueList {
  std::vector<int> ids;
};
using IntList = std::vector<int64_t>;
using DoubleList = std::vector<double>;
using BoolList = std::vector<bool>;

// A dynamic int (a size of a dynamic tensor, or arithmetic on sizes); the op
// that outputs it recomputes `value` whenever input sizes change.
struct SymInt {
  int64_t value = 0;
};

using Value = std::variant<Null, Tensor, int64_t, double, bool, std::string, IntList,
                           DoubleList, BoolList, ValueList, SymInt>;

const char* value_kind(const Value& v);

} // namespace vkd
