#include "blob.h"

#include <zlib.h>

#include <algorithm>
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

// VkGraph nests at most VkGraph > values > ValueEntry > Tensor > sizes; anything
// deeper is corruption.
constexpr flatbuffers::uoffset_t kMaxGraphDepth = 16;
// Every table takes at least 4 bytes of the buffer and our writer shares none, so a
// buffer that makes the verifier visit more tables than size / 4 reuses tables
// through corrupted offsets (which can make verification take very long).
flatbuffers::uoffset_t max_graph_tables(uint64_t graph_bytes) {
  return static_cast<flatbuffers::uoffset_t>(graph_bytes / 4 + 1);
}
// The flatbuffers library addresses buffers with 32-bit offsets.
constexpr uint64_t kMaxGraphBytes = FLATBUFFERS_MAX_BUFFER_SIZE - 1;
// Our writer (serialization/blob.py) shares no table, vector or string: each is
// referenced once. A second reference is a corrupted offset that the verifier accepts
// (it points at a valid part of another value or op) and that would give another graph.
// Our writer also aligns every vector of 8-byte elements to 8 bytes; the verifier of
// flatbuffers 2.0 checks only their length word, and reading a misaligned one is
// undefined behaviour (the fuzzer found it: tests/regressions).
void check_nothing_shared(const ::vkdelegate::fb::VkGraph* graph) {
  namespace fbs = ::vkdelegate::fb;
  std::vector<const void*> parts;
  auto add = [&parts](const void* part) {
    if (part) parts.push_back(part);
  };
  auto add8 = [&add](const auto* vec) {
    if (vec && reinterpret_cast<uintptr_t>(vec->Data()) % 8 != 0) {
      throw GraphError("delegate blob's graph has a misaligned vector of 8-byte values (corrupted)");
    }
    add(vec);
  };
  add(graph->values());
  add(graph->chain());
  add(graph->input_ids());
  add(graph->output_ids());
  add8(graph->constants());
  add(graph->options());
  if (const auto* values = graph->values()) {
    for (const fbs::ValueEntry* e : *values) {
      add(e);
      add(e->value());
      if (const auto* t = e->value_as_Tensor()) {
        add8(t->sizes());
        add8(t->min_sizes());
      } else if (const auto* s = e->value_as_String()) {
        add(s->value());
      } else if (const auto* l = e->value_as_IntList()) {
        add8(l->items());
      } else if (const auto* l = e->value_as_DoubleList()) {
        add8(l->items());
      } else if (const auto* l = e->value_as_BoolList()) {
        add(l->items());
      } else if (const auto* l = e->value_as_ValueList()) {
        add(l->items());
      }
    }
  }
  if (const auto* chain = graph->chain()) {
    for (const fbs::OpCall* call : *chain) {
      add(call);
      add(call->name());
      add(call->args());
    }
  }
  if (const auto* options = graph->options()) {
    for (const fbs::String* option : *options) {
      add(option);
      add(option->value());
    }
  }
  std::sort(parts.begin(), parts.end());
  if (std::adjacent_find(parts.begin(), parts.end()) != parts.end()) {
    throw GraphError("delegate blob's graph refers twice to one of its parts (corrupted)");
  }
}
}  // namespace

uint32_t blob_checksum(const uint8_t* blob, size_t size) {
  constexpr size_t after = kBlobChecksumOffset + 4;
  uLong crc = crc32_z(0, blob, kBlobChecksumOffset);
  return static_cast<uint32_t>(crc32_z(crc, blob + after, size - after));
}

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
  if (version > kBlobVersion) {
    throw GraphError("delegate blob has format version " + std::to_string(version) +
                     ", newer than this runtime's " + std::to_string(kBlobVersion) +
                     ": update the vkdelegate runtime or re-export with this version");
  }
  if (version < kBlobVersion && version > 0) {
    throw GraphError("delegate blob has format version " + std::to_string(version) +
                     ", older than this runtime's " + std::to_string(kBlobVersion) +
                     ": re-export the model with this version of vkdelegate");
  }
  if (version == 0 || header_size != kBlobHeaderSize) {
    throw GraphError("delegate blob header is corrupted (version " + std::to_string(version) +
                     ", header size " + std::to_string(header_size) + ")");
  }
  const uint32_t flags = read_le<uint32_t>(blob + 12);
  const uint64_t fb_offset = read_le<uint64_t>(blob + 16);
  const uint64_t fb_size = read_le<uint64_t>(blob + 24);
  const uint64_t const_offset = read_le<uint64_t>(blob + 32);
  const uint64_t const_size = read_le<uint64_t>(blob + 40);
  const uint32_t checksum = read_le<uint32_t>(blob + kBlobChecksumOffset);
  const uint32_t reserved = read_le<uint32_t>(blob + kBlobChecksumOffset + 4);
  // The blob's size as its header gives it, checked before the checksum so that a
  // cut-off file says so.
  if (const_offset > size || const_size > size - const_offset) {
    throw GraphError("delegate blob is truncated or corrupted: constants at " +
                     std::to_string(const_offset) + "+" + std::to_string(const_size) +
                     " do not fit in " + std::to_string(size) + " bytes");
  }
  if (const_offset + const_size != size) {
    throw GraphError("delegate blob is corrupted: its header describes " +
                     std::to_string(const_offset + const_size) + " bytes, the blob has " +
                     std::to_string(size));
  }
  const uint32_t expected = blob_checksum(blob, size);
  if (checksum != expected) {
    throw GraphError("delegate blob checksum mismatch: the file is corrupted (header says " +
                     std::to_string(checksum) + ", the bytes give " + std::to_string(expected) + ")");
  }
  // A correct checksum over wrong fields means a writer bug, not a corrupted file.
  if (flags != 0 || reserved != 0) {
    throw GraphError("delegate blob header has unknown flags " + std::to_string(flags) + ", " +
                     std::to_string(reserved));
  }
  if (fb_offset < kBlobHeaderSize || fb_offset > const_offset || fb_size > const_offset - fb_offset) {
    throw GraphError("delegate blob is corrupted: graph at " + std::to_string(fb_offset) + "+" +
                     std::to_string(fb_size) + " is not between the header and the constants at " +
                     std::to_string(const_offset));
  }
  if (fb_size < 8) {  // a root offset and a file identifier, at least
    throw GraphError("delegate blob is corrupted: its graph is " + std::to_string(fb_size) + " bytes");
  }
  if (fb_size > kMaxGraphBytes) {
    throw GraphError("delegate blob's graph is " + std::to_string(fb_size) +
                     " bytes, above the flatbuffer limit of " + std::to_string(kMaxGraphBytes));
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
  flatbuffers::Verifier::Options limits;
  limits.max_depth = kMaxGraphDepth;
  limits.max_tables = max_graph_tables(fb_size);
  flatbuffers::Verifier verifier(view.flatbuffer, fb_size, limits);
  if (!::vkdelegate::fb::VerifyVkGraphBuffer(verifier)) {
    throw GraphError("delegate blob's graph fails flatbuffer verification (corrupted)");
  }
  check_nothing_shared(::vkdelegate::fb::GetVkGraph(view.flatbuffer));
  return view;
}

}  // namespace vkd
