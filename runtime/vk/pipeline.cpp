#include "pipeline.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace vkd {

const ShaderBinary* find_shader(const std::string& name) {
  static const std::unordered_map<std::string, const ShaderBinary*> index = [] {
    std::unordered_map<std::string, const ShaderBinary*> m;
    for (size_t i = 0; i < kNumShaderBinaries; ++i) {
      m[kShaderBinaries[i].name] = &kShaderBinaries[i];
    }
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

// Barrier placement: SPIR-V reflection of the bindings a shader may write.
std::vector<bool> spirv_written_bindings(const uint32_t* words, size_t num_words,
                                         uint32_t num_storage) {
  std::vector<bool> writes(num_storage, true);  // unreadable module: assume writes
  if (num_words < 5 || words[0] != 0x07230203u) return writes;
  constexpr uint32_t kOpTypeStruct = 30, kOpTypePointer = 32, kOpVariable = 59,
                     kOpDecorate = 71, kOpMemberDecorate = 72;
  constexpr uint32_t kNonWritable = 24, kBinding = 33;
  std::unordered_map<uint32_t, uint32_t> binding_of, pointee_of, type_of_var, members_of;
  std::unordered_set<uint32_t> nonwritable;
  std::unordered_map<uint32_t, std::unordered_set<uint32_t>> nonwritable_members;
  for (size_t i = 5; i < num_words;) {
    const uint32_t count = words[i] >> 16, op = words[i] & 0xffffu;
    if (count == 0 || i + count > num_words) return writes;
    const uint32_t* w = words + i;
    if (op == kOpDecorate && count >= 3) {
      if (w[2] == kBinding && count >= 4) binding_of[w[1]] = w[3];
      if (w[2] == kNonWritable) nonwritable.insert(w[1]);
    } else if (op == kOpMemberDecorate && count >= 4 && w[3] == kNonWritable) {
      nonwritable_members[w[1]].insert(w[2]);
    } else if (op == kOpTypePointer && count >= 4) {
      pointee_of[w[1]] = w[3];
    } else if (op == kOpTypeStruct && count >= 2) {
      members_of[w[1]] = count - 2;
    } else if (op == kOpVariable && count >= 4) {
      type_of_var[w[2]] = w[1];
    }
    i += count;
  }
  std::fill(writes.begin(), writes.end(), false);  // undeclared: never accessed
  for (const auto& [var, ptr] : type_of_var) {
    auto b = binding_of.find(var);
    if (b == binding_of.end() || b->second >= num_storage) continue;
    bool readonly = nonwritable.count(var) > 0;
    if (!readonly) {
      auto p = pointee_of.find(ptr);
      auto m = p == pointee_of.end() ? members_of.end() : members_of.find(p->second);
      if (m != members_of.end() && m->second > 0) {
        auto nw = nonwritable_members.find(m->first);
        readonly = nw != nonwritable_members.end() && nw->second.size() >= m->second;
      }
    }
    if (!readonly) writes[b->second] = true;
  }
  return writes;
}

std::vector<uint32_t> spirv_uniform_blocks_as_storage(const uint32_t* words, size_t num_words) {
  if (num_words < 5 || words[0] != 0x07230203u || words[1] < 0x00010300u) return {};
  constexpr uint32_t kOpTypePointer = 32, kOpTypeForwardPointer = 39, kOpVariable = 59,
                     kOpDecorate = 71, kOpControlBarrier = 224;
  constexpr uint32_t kUniform = 2, kStorageBuffer = 12, kBinding = 33, kNonWritable = 24;
  std::unordered_set<uint32_t> blocks;  // the uniform block variables
  for (size_t i = 5; i < num_words;) {
    const uint32_t count = words[i] >> 16, op = words[i] & 0xffffu;
    if (count == 0 || i + count > num_words) return {};
    if (op == kOpVariable && count >= 4 && words[i + 3] == kUniform) blocks.insert(words[i + 2]);
    // Shaders with workgroup barriers keep their uniform block: lavapipe miscomputed
    // reduce_var (two passes over a row, barriers between) with its parameters in a
    // storage buffer (tests/test_ops.py, var long_row_1x1031). Of them, only the
    // reductions of reduce.glsl grew memory there; not_inlined (common.glslh) fixed that.
    if (op == kOpControlBarrier) return {};
    i += count;
  }
  std::vector<uint32_t> out(words, words + 5);
  out.reserve(num_words + 3 * blocks.size());
  for (size_t i = 5; i < num_words;) {
    const uint32_t count = words[i] >> 16, op = words[i] & 0xffffu;
    const size_t begin = out.size();
    out.insert(out.end(), words + i, words + i + count);
    // The storage class operand: after the result id of a pointer type, after the
    // result type and id of a variable.
    const size_t at = begin + (op == kOpVariable ? 3 : 2);
    if ((op == kOpTypePointer || op == kOpTypeForwardPointer || op == kOpVariable) &&
        at < out.size() && out[at] == kUniform) {
      out[at] = kStorageBuffer;
    }
    // Read-only, as the uniform block was.
    if (op == kOpDecorate && count >= 4 && words[i + 2] == kBinding && blocks.count(words[i + 1])) {
      out.insert(out.end(), {(3u << 16) | kOpDecorate, words[i + 1], kNonWritable});
    }
    i += count;
  }
  return out;
}

uint64_t spirv_shared_bytes(const uint32_t* words, size_t num_words, const LocalSize& local_size) {
  if (num_words < 5 || words[0] != 0x07230203u) throw VulkanError("not a SPIR-V module");
  constexpr uint32_t kOpTypeBool = 20, kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeVector = 23,
                     kOpTypeMatrix = 24, kOpTypeArray = 28, kOpTypeStruct = 30, kOpTypePointer = 32,
                     kOpConstantTrue = 41, kOpConstantFalse = 42, kOpConstant = 43,
                     kOpConstantComposite = 44, kOpSpecConstantTrue = 48, kOpSpecConstantFalse = 49,
                     kOpSpecConstant = 50, kOpSpecConstantComposite = 51, kOpSpecConstantOp = 52,
                     kOpVariable = 59, kOpDecorate = 71;
  constexpr uint32_t kSpecId = 1, kWorkgroup = 4;
  std::unordered_map<uint32_t, uint32_t> spec_id;
  std::unordered_map<uint32_t, uint64_t> type_bytes;          // sized types
  std::unordered_map<uint32_t, uint64_t> scalar;              // integer and boolean constants
  std::unordered_map<uint32_t, std::vector<uint32_t>> composite;  // composite constants' parts
  std::unordered_map<uint32_t, uint32_t> pointee;             // Workgroup pointer types
  uint64_t total = 0;
  auto value_of = [&](uint32_t id) -> uint64_t {
    auto it = scalar.find(id);
    if (it == scalar.end()) throw VulkanError("a shared array's length is not a constant this evaluates");
    return it->second;
  };
  auto bytes_of = [&](uint32_t id) -> uint64_t {
    auto it = type_bytes.find(id);
    if (it == type_bytes.end()) throw VulkanError("a shared variable of a type this does not size");
    return it->second;
  };
  for (size_t i = 5; i < num_words;) {
    const uint32_t count = words[i] >> 16, op = words[i] & 0xffffu;
    if (count == 0 || i + count > num_words) throw VulkanError("a malformed SPIR-V module");
    const uint32_t* w = words + i;
    switch (op) {
      case kOpDecorate:
        if (count >= 4 && w[2] == kSpecId) spec_id[w[1]] = w[3];
        break;
      case kOpTypeBool: type_bytes[w[1]] = 4; break;
      case kOpTypeInt:
      case kOpTypeFloat: type_bytes[w[1]] = w[2] / 8; break;
      case kOpTypeVector:
      case kOpTypeMatrix:
        if (type_bytes.count(w[2])) type_bytes[w[1]] = type_bytes[w[2]] * w[3];
        break;
      case kOpTypeArray:
        if (type_bytes.count(w[2]) && scalar.count(w[3])) type_bytes[w[1]] = type_bytes[w[2]] * scalar[w[3]];
        break;
      case kOpTypeStruct: {
        uint64_t sum = 0;
        bool sized = true;
        for (uint32_t m = 2; m < count; ++m) {
          auto it = type_bytes.find(w[m]);
          if (it == type_bytes.end()) sized = false; else sum += it->second;
        }
        if (sized) type_bytes[w[1]] = sum;
        break;
      }
      case kOpTypePointer:
        if (w[2] == kWorkgroup) pointee[w[1]] = w[3];
        break;
      case kOpConstantTrue: case kOpSpecConstantTrue: scalar[w[2]] = 1; break;
      case kOpConstantFalse: case kOpSpecConstantFalse: scalar[w[2]] = 0; break;
      case kOpConstant:
      case kOpSpecConstant: {
        uint64_t v = w[3];
        if (count >= 5) v |= static_cast<uint64_t>(w[4]) << 32;
        auto id = spec_id.find(w[2]);
        if (op == kOpSpecConstant && id != spec_id.end() && id->second < 3) v = local_size[id->second];
        scalar[w[2]] = v;
        break;
      }
      case kOpConstantComposite:
      case kOpSpecConstantComposite:
        composite[w[2]].assign(w + 3, w + count);
        break;
      case kOpSpecConstantOp: {
        // The integer operations glslang emits for sizes such as gl_WorkGroupSize.x * 2
        // or TILE + 1u; an operation outside these leaves the result unknown (an error
        // only if a shared array's length needs it).
        const uint32_t inner = w[3];
        auto a = [&](int k) { return value_of(w[4 + k]); };
        try {
          switch (inner) {
            case 81: {  // OpCompositeExtract
              auto c = composite.find(w[4]);
              if (c != composite.end() && count == 6 && w[5] < c->second.size()) {
                scalar[w[2]] = value_of(c->second[w[5]]);
              }
              break;
            }
            case 128: scalar[w[2]] = a(0) + a(1); break;                    // OpIAdd
            case 130: scalar[w[2]] = a(0) - a(1); break;                    // OpISub
            case 132: scalar[w[2]] = a(0) * a(1); break;                    // OpIMul
            case 134: case 135: if (a(1)) scalar[w[2]] = a(0) / a(1); break;  // OpUDiv, OpSDiv
            case 137: if (a(1)) scalar[w[2]] = a(0) % a(1); break;          // OpUMod
            case 194: scalar[w[2]] = a(0) >> a(1); break;                   // OpShiftRightLogical
            case 196: scalar[w[2]] = a(0) << a(1); break;                   // OpShiftLeftLogical
            case 199: scalar[w[2]] = a(0) & a(1); break;                    // OpBitwiseAnd
            case 113: case 114: scalar[w[2]] = a(0); break;                 // OpUConvert, OpSConvert
            case 169: scalar[w[2]] = a(0) ? a(1) : a(2); break;             // OpSelect
            case 170: scalar[w[2]] = a(0) == a(1); break;                   // OpIEqual
            case 176: case 177: scalar[w[2]] = a(0) < a(1); break;          // OpULessThan, OpSLessThan
            case 172: case 173: scalar[w[2]] = a(0) > a(1); break;          // OpUGreaterThan, OpSGreaterThan
            default: break;
          }
        } catch (const VulkanError&) {
          // an operand not known: the result stays unknown
        }
        break;
      }
      case kOpVariable:
        if (count >= 4 && w[3] == kWorkgroup) {
          auto p = pointee.find(w[1]);
          if (p == pointee.end()) throw VulkanError("a shared variable of an unknown pointer type");
          total += bytes_of(p->second);
        }
        break;
      default: break;
    }
    i += count;
  }
  return total;
}

PipelineCache::PipelineCache(Context& ctx) : ctx_(ctx) {
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  VKD_CHECK(vkCreatePipelineCache(ctx.device(), &ci, nullptr, &cache_));
}

PipelineCache::~PipelineCache() {
  for (auto& [key, p] : pipelines_) {
    vkDestroyPipeline(ctx_.device(), p->handle, nullptr);
    vkDestroyPipelineLayout(ctx_.device(), p->layout, nullptr);
    vkDestroyDescriptorSetLayout(ctx_.device(), p->set_layout, nullptr);
  }
  vkDestroyPipelineCache(ctx_.device(), cache_, nullptr);
}

size_t PipelineCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pipelines_.size();
}

std::vector<const Pipeline*> PipelineCache::all() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const Pipeline*> out;
  for (const auto& [key, p] : pipelines_) out.push_back(p.get());
  return out;
}

namespace {

// "name: value" for each statistic of each executable of the pipeline
// (VK_KHR_pipeline_executable_properties); what they are is the driver's choice.
std::vector<std::string> executable_statistics(VkDevice dev, VkPipeline pipeline) {
  std::vector<std::string> out;
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  uint32_t n = 0;
  if (vkGetPipelineExecutablePropertiesKHR(dev, &info, &n, nullptr) != VK_SUCCESS) return out;
  std::vector<VkPipelineExecutablePropertiesKHR> execs(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  if (vkGetPipelineExecutablePropertiesKHR(dev, &info, &n, execs.data()) != VK_SUCCESS) return out;
  for (uint32_t e = 0; e < n; ++e) {
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipeline;
    ei.executableIndex = e;
    uint32_t m = 0;
    if (vkGetPipelineExecutableStatisticsKHR(dev, &ei, &m, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> stats(m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (vkGetPipelineExecutableStatisticsKHR(dev, &ei, &m, stats.data()) != VK_SUCCESS) continue;
    const std::string prefix = n > 1 ? std::string(execs[e].name) + " " : std::string();
    for (const auto& s : stats) {
      std::string value;
      switch (s.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: value = s.value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: value = std::to_string(s.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: value = std::to_string(s.value.u64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: value = std::to_string(s.value.f64); break;
        default: value = "?";
      }
      out.push_back(prefix + s.name + ": " + value);
    }
  }
  return out;
}

// (name, text) of each textual internal representation of each executable.
std::vector<std::pair<std::string, std::string>> internal_representations(VkDevice dev, VkPipeline pipeline) {
  std::vector<std::pair<std::string, std::string>> out;
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  uint32_t n = 0;
  if (vkGetPipelineExecutablePropertiesKHR(dev, &info, &n, nullptr) != VK_SUCCESS) return out;
  for (uint32_t e = 0; e < n; ++e) {
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipeline;
    ei.executableIndex = e;
    uint32_t m = 0;
    if (vkGetPipelineExecutableInternalRepresentationsKHR(dev, &ei, &m, nullptr) != VK_SUCCESS || m == 0) continue;
    std::vector<VkPipelineExecutableInternalRepresentationKHR> irs(
        m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR});
    if (vkGetPipelineExecutableInternalRepresentationsKHR(dev, &ei, &m, irs.data()) != VK_SUCCESS) continue;
    std::vector<std::vector<char>> text(m);
    for (uint32_t i = 0; i < m; ++i) {
      text[i].resize(irs[i].dataSize);
      irs[i].pData = text[i].data();
    }
    // Second call fills the buffers; VK_INCOMPLETE leaves what fit.
    const VkResult r = vkGetPipelineExecutableInternalRepresentationsKHR(dev, &ei, &m, irs.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) continue;
    for (uint32_t i = 0; i < m; ++i) {
      if (!irs[i].isText) continue;
      out.emplace_back(irs[i].name, std::string(text[i].data(), strnlen(text[i].data(), text[i].size())));
    }
  }
  return out;
}

}  // namespace

const Pipeline& PipelineCache::get(const std::string& shader, uint32_t num_storage,
                                   LocalSize local_size) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_tuple(shader, num_storage, local_size);
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return *it->second;

  const ShaderBinary* bin = find_shader(shader);
  if (!bin) {
    throw VulkanError("no embedded shader named '" + shader + "'");
  }
  auto p = std::make_unique<Pipeline>();
  p->shader = shader;
  p->num_storage = num_storage;
  p->local_size = local_size;
  // The limits the runtime sees (VKDELEGATE_DEVICE_PROFILE may have lowered them
  // below the real device's, which is all the validation layer checks).
  const DeviceInfo& info = ctx_.info();
  const std::string size_text = std::to_string(local_size[0]) + "x" + std::to_string(local_size[1]) + "x" +
                                std::to_string(local_size[2]);
  const std::string seen = info.profile.empty() ? "" : " (VKDELEGATE_DEVICE_PROFILE=" + info.profile + ")";
  const uint64_t invocations = uint64_t{local_size[0]} * local_size[1] * local_size[2];
  if (invocations > info.max_workgroup_invocations) {
    throw VulkanError("shader '" + shader + "': a workgroup of " + size_text + " = " + std::to_string(invocations) +
                      " invocations is over the device's maxComputeWorkGroupInvocations " +
                      std::to_string(info.max_workgroup_invocations) + seen);
  }
  for (int i = 0; i < 3; ++i) {
    if (local_size[i] > info.max_workgroup_size[i]) {
      throw VulkanError("shader '" + shader + "': a workgroup of " + size_text + " is over the device's " +
                        "maxComputeWorkGroupSize[" + std::to_string(i) + "] " +
                        std::to_string(info.max_workgroup_size[i]) + seen);
    }
  }
  try {
    p->shared_bytes = spirv_shared_bytes(bin->words, bin->num_words, local_size);
  } catch (const VulkanError& e) {
    throw VulkanError("shader '" + shader + "': its shared memory could not be sized: " + e.what());
  }
  if (p->shared_bytes > info.max_shared_memory) {
    throw VulkanError("shader '" + shader + "' with a workgroup of " + size_text + " declares " +
                      std::to_string(p->shared_bytes) + " bytes of shared memory, over the device's " +
                      "maxComputeSharedMemorySize " + std::to_string(info.max_shared_memory) + seen);
  }
  p->writes = spirv_written_bindings(bin->words, bin->num_words, num_storage);  // barrier placement
  VkDevice dev = ctx_.device();

  std::vector<uint32_t> storage_params_words;
  if (ctx_.info().params_in_storage) {
    storage_params_words = spirv_uniform_blocks_as_storage(bin->words, bin->num_words);
    if (!storage_params_words.empty()) p->params_type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  }
  std::vector<VkDescriptorSetLayoutBinding> bindings(num_storage + 1);
  for (uint32_t i = 0; i <= num_storage; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = i < num_storage ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER : p->params_type;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dl.bindingCount = static_cast<uint32_t>(bindings.size());
  dl.pBindings = bindings.data();
  VKD_CHECK(vkCreateDescriptorSetLayout(dev, &dl, nullptr, &p->set_layout));

  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p->set_layout;
  VKD_CHECK(vkCreatePipelineLayout(dev, &pl, nullptr, &p->layout));

  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  if (storage_params_words.empty()) {
    sm.codeSize = bin->num_words * sizeof(uint32_t);
    sm.pCode = bin->words;
  } else {
    sm.codeSize = storage_params_words.size() * sizeof(uint32_t);
    sm.pCode = storage_params_words.data();
  }
  VkShaderModule module;
  VKD_CHECK(vkCreateShaderModule(dev, &sm, nullptr, &module));

  VkSpecializationMapEntry entries[3];
  for (uint32_t i = 0; i < 3; ++i) {
    entries[i] = {i, static_cast<uint32_t>(i * sizeof(uint32_t)), sizeof(uint32_t)};
  }
  VkSpecializationInfo spec{3, entries, sizeof(uint32_t) * 3, local_size.data()};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &spec;
  ci.layout = p->layout;
  const bool statistics = ctx_.info().pipeline_statistics;
  const bool ir = ctx_.info().pipeline_internal_representations;
  if (statistics) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  if (ir) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR;
  VkResult r = vkCreateComputePipelines(dev, cache_, 1, &ci, nullptr, &p->handle);
  vkDestroyShaderModule(dev, module, nullptr);
  if (r != VK_SUCCESS) {
    vkDestroyPipelineLayout(dev, p->layout, nullptr);
    vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
    throw VulkanError("could not create the pipeline of shader '" + shader +
                      "': " + result_name(r));
  }
  if (statistics) p->statistics = executable_statistics(dev, p->handle);
  if (ir) p->internal_representations = internal_representations(dev, p->handle);
  auto& ref = *p;
  pipelines_.emplace(key, std::move(p));
  return ref;
}

} // namespace vkd
