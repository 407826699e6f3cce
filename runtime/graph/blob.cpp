#include "blob.h"

#include <cstring>
#include <string>

#include "schema_generated.h"
#include "values.h"

namespace vkd {

namespace {
template <typename T>
T read_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // x86 and ARM hosts are little endian
  return v;
}
}  // namespace

BlobView parse_blob(const uint8_t* blob, size_t size) {
  if (!blob || size < kBlobHeaderSize) {
    throw GraphError("delegate blob is truncated: " + std::to_string(size) +
                     " bytes, smaller than its header");
  }
  if (std::memcmp(blob, "VKDB", 4) != 0) {
    throw GraphError("delegate blob has no VKDB magic: not a vkdelegate blob, or corrupted");
  }
  const uint32_t version = read_le<uint32_t>(blob + 4);
  const uint32_t header_size = read_le<uint32_t>(blob + 8);
  const uint64_t fb_offset = read_le<uint64_t>(blob + 16);
  const uint64_t fb_size = read_le<uint64_t>(blob + 24);
  const uint64_t const_offset = read_le<uint64_t>(blob + 32);
  const uint64_t const_size = read_le<uint64_t>(blob + 40);
  if (version > kBlobVersion) {
    throw GraphError("delegate blob has format version " + std::to_string(version) +
                     ", newer than this runtime's " + std::to_string(kBlobVersion) +
                     ": update the vkdelegate runtime or re-export with this version");
  }
  if (version == 0 || header_size != kBlobHeaderSize) {
    throw GraphError("delegate blob header is corrupted (version " + std::to_string(version) +
                     ", header size " + std::to_string(header_size) + ")");
  }
  auto inside = [size](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  if (!inside(fb_offset, fb_size) || fb_offset < kBlobHeaderSize) {
    throw GraphError("delegate blob is truncated or corrupted: graph at " +
                     std::to_string(fb_offset) + "+" + std::to_string(fb_size) +
                     " does not fit in " + std::to_string(size) + " bytes");
  }
  if (!inside(const_offset, const_size)) {
    throw GraphError("delegate blob is truncated or corrupted: constants at " +
                     std::to_string(const_offset) + "+" + std::to_string(const_size) +
                     " do not fit in " + std::to_string(size) + " bytes");
  }
  BlobView view;
  view.flatbuffer = blob + fb_offset;
  view.flatbuffer_size = fb_size;
  if (reinterpret_cast<uintptr_t>(view.flatbuffer) % 8 != 0) {
    view.aligned_copy.resize((fb_size + 7) / 8);
    std::memcpy(view.aligned_copy.data(), view.flatbuffer, fb_size);
    view.flatbuffer = reinterpret_cast<const uint8_t*>(view.aligned_copy.data());
  }
  view.constants = blob + const_offset;
  view.constants_size = const_size;
  flatbuffers::Verifier verifier(view.flatbuffer, fb_size);
  if (!::vkdelegate::fb::VerifyVkGraphBuffer(verifier)) {
    throw GraphError("delegate blob's graph fails flatbuffer verification (corrupted)");
  }
  return view;
}

}  // namespace vkd
