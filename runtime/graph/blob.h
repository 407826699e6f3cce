// The delegate blob: [header][flatbuffer VkGraph][pad][constant segment].
// Layout and field meanings: serialization/blob.py (header) and serialization/schema.fbs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vkd {

constexpr uint32_t kBlobVersion = 2;
constexpr size_t kBlobHeaderSize = 56;
// Where the header keeps the checksum (a uint32): the CRC-32 covers every byte of the
// blob but these four.
constexpr size_t kBlobChecksumOffset = 48;
// Each constant's offset in the segment is a multiple of this.
constexpr uint64_t kConstantAlignment = 64;

struct BlobView {
  const uint8_t* flatbuffer = nullptr;  // verified VkGraph
  size_t flatbuffer_size = 0;
  const uint8_t* constants = nullptr;
  size_t constants_size = 0;
  std::vector<uint64_t> aligned_copy;   // owns the flatbuffer if the blob was misaligned
};

// Checks the header (magic, version, checksum, every offset and size against the
// blob) and runs the flatbuffers Verifier. Throws GraphError naming the problem.
BlobView parse_blob(const uint8_t* blob, size_t size);

// The checksum of a blob of `size` bytes, as its header should hold it (size must
// be at least kBlobHeaderSize). For tools that build or mutate blobs (the fuzz target).
uint32_t blob_checksum(const uint8_t* blob, size_t size);

}  // namespace vkd
