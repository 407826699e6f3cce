// libFuzzer target: one delegate blob through ComputeGraph::load, the path every
// program takes at load (header checks, flatbuffer verifier, parse, each op's build
// function, memory planning and allocation, constant upload). Built only with
// -DVKDELEGATE_SANITIZE=ON (ASan+UBSan); tests/sanitizers.py runs it from the
// blobs the test suite lowers. A clear error (GraphError, VulkanError,
// SettingsError) is the right answer to a bad blob; any other exception, a crash
// or a sanitizer report is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "graph/blob.h"
#include "graph/compute_graph.h"
#include "settings.h"
#include "vk/context.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (!vkd::Context::get()) {
    std::fprintf(stderr, "vkdelegate_fuzz_blob: no Vulkan device: %s\n",
                 vkd::Context::unavailable_reason().c_str());
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A heap copy of exactly `size` bytes, so that ASan sees any read past the blob's end.
  std::vector<uint8_t> blob(data, data + size);
  // The header's checksum made right for the mutated bytes: otherwise nearly every
  // mutant would stop at the checksum, and the verifier and everything after it
  // would see none.
  if (blob.size() >= vkd::kBlobHeaderSize) {
    const uint32_t sum = vkd::blob_checksum(blob.data(), blob.size());
    std::memcpy(blob.data() + vkd::kBlobChecksumOffset, &sum, sizeof(sum));
  }
  try {
    auto graph = vkd::ComputeGraph::load(blob.data(), blob.size());
  } catch (const vkd::GraphError&) {
  } catch (const vkd::VulkanError&) {
  } catch (const vkd::SettingsError&) {
  } catch (const std::exception& e) {
    // std::bad_variant_access, std::out_of_range, ...: a check is missing.
    std::fprintf(stderr, "vkdelegate_fuzz_blob: unexpected %s\n", e.what());
    std::abort();
  }
  return 0;
}
