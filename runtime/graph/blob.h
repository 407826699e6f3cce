// The delegate blob: [header][flatbuffer VkGraph][pad][constant segment].
// Layout and field meanings: serialization/schema.fbs and serialization/blob.py.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vkd {

constexpr uint32_t kBlobVersion = 1;
constexpr size_t kBlobHeaderSize = 48;

struct BlobView {
  const uint8_t* flatbuffer = nullptr;  // verified VkGraph
  size_t flatbuffer_size = 0;
  const uint8_t* constants = nullptr;
  size_t constants_size = 0;
  std::vector<uint64_t> aligned_copy;   // owns the flatbuffer if the blob was misaligned
};

// Checks the header (magic, version, every offset and size against the blob)
// and runs the flatbuffers Verifier. Throws GraphError naming the problem.
BlobView parse_blob(const uint8_t* blob, size_t size);

}  // namespace vkd
