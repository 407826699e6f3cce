// The values of a graph: tensors, scalars, lists; as the serialized graph has them.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace vkd {

// Any problem with a graph, its arguments or its inputs. The message names it.
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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

using Sizes = std::vector<int64_t>;
std::string sizes_str(const Sizes& s);
int64_t numel_of(const Sizes& s);

// Our tensors are contiguous (row-major) buffers, up to rank 8.
constexpr int kMaxRank = 8;

struct Tensor {
  DType dtype = DType::Float32;
  Sizes sizes;      // current sizes
  Sizes max_sizes;  // upper bound; the storage is allocated for it
  int storage = -1; // index into the graph's storages
  int constant_id = -1;

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const { return numel_of(sizes); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  size_t max_nbytes() const {
    return static_cast<size_t>(numel_of(max_sizes)) * dtype_size(dtype);
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

using Value = std::variant<Null, Tensor, int64_t, double, bool, std::string, IntList,
                           DoubleList, BoolList, ValueList>;

const char* value_kind(const Value& v);

} // namespace vkd
