// vkdelegate_runner: loads a .pte with the ExecuTorch runtime (no Python), runs
// a method on made-up inputs (or raw input files, --inputs) and prints the
// device and latency; --profile adds a per-dispatch GPU time table, --memory
// the delegates' memory report, --json writes all of it to a file for scripts,
// --dump-outputs the raw output tensors (to check them against a reference),
// --pipeline-stats the driver's statistics of each compiled kernel (registers,
// spills, shared memory: VK_KHR_pipeline_executable_properties, where the driver has it),
// --soak N the host and device memory after the warm-up, after the timed runs and
// after N load/execute/unload cycles of the method (benchmarks/soak.py).
// --gpu-runs N profiles N executes and reports the median GPU time; --flush-l2 MIB
// profiles as many again with a MIB buffer filled before each execute's dispatches
// (evicting the GPU's cache; outside the timestamps), for cold-cache kernel times.
// --blob runs raw delegate blobs instead (a fuzz seed, a crasher from tests/regressions),
// each loaded and executed on made-up inputs in this one process.
// --generate M runs a KV-cache LLM (examples/llm.py's forward(tokens [1, T], input_pos [T])):
// the prompt (--prompt-ids or --prompt-tokens N) in one execute, then M greedy decode steps
// of one token each (argmax of the last logits on the host), printing prefill and decode
// tokens/s, the time of every step and the GPU memory of the loaded program.
// --tokenizer tokenizer.json --prompt "text" --generate M does the same from text (pytorch_tokenizers'
// HF tokenizer; built in when scripts/fetch_tokenizers.sh fetched its sources): the prompt is
// encoded (the program's BOS first, unless tokenizer_config.json beside it says add_bos_token
// false), each generated token's text is printed as it comes, and generation stops at the
// program's EOS ids.
#include <executorch/extension/data_loader/file_data_loader.h>
#include <executorch/runtime/core/portable_type/tensor_impl.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <map>
#include <sstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#ifdef VKD_RUNNER_HAS_TOKENIZER
#include <functional>  // before hf_tokenizer.h, which uses std::function without it
#include <nlohmann/json.hpp>
#include <pytorch/tokenizers/hf_tokenizer.h>
#endif

#include "../backend/backend.h"
#include "../graph/compute_graph.h"
#include "../vk/memory.h"
#include "../vk/pipeline.h"

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::FileDataLoader;

namespace {

struct Options {
  std::string model;
  std::string method = "forward";
  int iters = 10;
  bool iters_given = false;  // --generate times one generation unless --iters says more
  int warmup = 3;
  bool profile = false;
  bool memory = false;
  bool pipeline_stats = false;
  std::string pipeline_ir_dir;  // write the driver's internal representations of each kernel here
  std::string json;          // write the results here as JSON
  std::string inputs_dir;    // read input i from DIR/input_<i>.bin (raw, contiguous)
  std::string outputs_dir;   // write output i to DIR/output_<i>.bin after the timed runs
  int soak_cycles = -1;      // --soak N: memory snapshots, and N load/unload cycles at the end
  int gpu_runs = 1;          // --gpu-runs N: profiled executes per mode (median reported)
  int flush_mib = 0;         // --flush-l2 MIB: also profile with the cache flushed (0: not)
  std::vector<std::string> blobs;  // --blob: delegate blob files, or directories of them
  int generate = -1;               // --generate M: decode steps after the prompt (-1: not an LLM run)
  int prompt_tokens = 0;           // --prompt-tokens N: a made-up prompt of N ids
  std::vector<int64_t> prompt_ids; // --prompt-ids 1,2,3
  std::string tokenizer;           // --tokenizer tokenizer.json (or its directory)
  std::string prompt_text;         // --prompt "text" (encoded with --tokenizer)
  bool prompt_text_given = false;
  bool chat = false;               // --chat: the text as one user turn of the model's chat format
  bool submit_probe = false;       // --submit-probe: what a submit and its wait cost, no program
};

#ifdef VKD_RUNNER_HAS_TOKENIZER
constexpr const char* kTokenizerNote = "";
#else
constexpr const char* kTokenizerNote =
    "\n                         (not in this build: it was built without the tokenizer sources; "
    "run scripts/fetch_tokenizers.sh, apt-get install libre2-dev, and rebuild)";
#endif

void usage() {
  std::fprintf(stderr,
               "usage: vkdelegate_runner --model FILE.pte [--method forward] [--iters N]\n"
               "                         [--warmup N] [--profile] [--memory] [--json FILE]\n"
               "                         [--inputs DIR] [--dump-outputs DIR] [--pipeline-stats]\n"
               "                         [--pipeline-ir DIR] [--soak CYCLES]\n"
               "                         [--gpu-runs N] [--flush-l2 MIB]\n"
               "       vkdelegate_runner --model LLM.pte --prompt-tokens N|--prompt-ids 1,2,3 --generate M\n"
               "                         [--warmup N] [--profile] [--json FILE]\n"
               "       vkdelegate_runner --model LLM.pte --tokenizer tokenizer.json --prompt TEXT [--chat] --generate M\n"
               "                         [--warmup N] [--profile] [--json FILE]%s\n"
               "       vkdelegate_runner --blob FILE|DIR [--blob ...] [--iters N] [--warmup N]\n"
               "       vkdelegate_runner --submit-probe [--iters N]\n",
               kTokenizerNote);
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", what);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--model" || a == "--model_path") {
      const char* v = next("--model"); if (!v) return false; o.model = v;
    } else if (a == "--method") {
      const char* v = next("--method"); if (!v) return false; o.method = v;
    } else if (a == "--iters") {
      const char* v = next("--iters"); if (!v) return false; o.iters = std::max(1, std::atoi(v)); o.iters_given = true;
    } else if (a == "--warmup") {
      const char* v = next("--warmup"); if (!v) return false; o.warmup = std::max(0, std::atoi(v));
    } else if (a == "--profile") {
      o.profile = true;
    } else if (a == "--pipeline-stats") {
      o.pipeline_stats = true;
    } else if (a == "--pipeline-ir") {
      const char* v = next("--pipeline-ir"); if (!v) return false; o.pipeline_ir_dir = v;
      o.pipeline_stats = true;
    } else if (a == "--gpu-runs") {
      const char* v = next("--gpu-runs"); if (!v) return false; o.gpu_runs = std::max(1, std::atoi(v));
    } else if (a == "--flush-l2") {
      const char* v = next("--flush-l2"); if (!v) return false; o.flush_mib = std::atoi(v);
      if (o.flush_mib <= 0) {
        std::fprintf(stderr, "--flush-l2 needs a size in MiB above 0\n");
        return false;
      }
    } else if (a == "--memory") {
      o.memory = true;
    } else if (a == "--soak") {
      const char* v = next("--soak"); if (!v) return false; o.soak_cycles = std::max(0, std::atoi(v));
    } else if (a == "--json") {
      const char* v = next("--json"); if (!v) return false; o.json = v;
    } else if (a == "--inputs") {
      const char* v = next("--inputs"); if (!v) return false; o.inputs_dir = v;
    } else if (a == "--dump-outputs") {
      const char* v = next("--dump-outputs"); if (!v) return false; o.outputs_dir = v;
    } else if (a == "--blob") {
      const char* v = next("--blob"); if (!v) return false; o.blobs.push_back(v);
    } else if (a == "--generate") {
      const char* v = next("--generate"); if (!v) return false; o.generate = std::atoi(v);
      if (o.generate < 0) {
        std::fprintf(stderr, "--generate needs a number of steps, 0 or more\n");
        return false;
      }
    } else if (a == "--prompt-tokens") {
      const char* v = next("--prompt-tokens"); if (!v) return false; o.prompt_tokens = std::atoi(v);
      if (o.prompt_tokens <= 0) {
        std::fprintf(stderr, "--prompt-tokens needs a length above 0\n");
        return false;
      }
    } else if (a == "--prompt-ids") {
      const char* v = next("--prompt-ids"); if (!v) return false;
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ',')) {
        char* end = nullptr;
        const long long id = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || id < 0) {
          std::fprintf(stderr, "--prompt-ids takes token ids (integers >= 0) separated by commas, not '%s'\n", v);
          return false;
        }
        o.prompt_ids.push_back(id);
      }
    } else if (a == "--tokenizer") {
      const char* v = next("--tokenizer"); if (!v) return false; o.tokenizer = v;
    } else if (a == "--prompt") {
      const char* v = next("--prompt"); if (!v) return false; o.prompt_text = v; o.prompt_text_given = true;
    } else if (a == "--chat") {
      o.chat = true;
    } else if (a == "--submit-probe") {
      o.submit_probe = true;
    } else if (a == "-h" || a == "--help") {
      return false;
    } else {
      std::fprintf(stderr, "unknown argument '%s'\n", a.c_str());
      return false;
    }
  }
#ifndef VKD_RUNNER_HAS_TOKENIZER
  if (!o.tokenizer.empty() || o.prompt_text_given) {
    std::fprintf(stderr, "this vkdelegate_runner was built without --tokenizer and --prompt (the pytorch_tokenizers "
                 "sources were not there): run scripts/fetch_tokenizers.sh, apt-get install libre2-dev, and rebuild\n");
    return false;
  }
#endif
  if (o.prompt_text_given != !o.tokenizer.empty()) {
    std::fprintf(stderr, "--prompt TEXT and --tokenizer FILE go together\n");
    return false;
  }
  if (o.chat && !o.prompt_text_given) {
    std::fprintf(stderr, "--chat wraps --prompt TEXT (with --tokenizer) as a user turn: give them\n");
    return false;
  }
  if (o.generate >= 0 && (!o.prompt_ids.empty()) + (o.prompt_tokens != 0) + o.prompt_text_given != 1) {
    std::fprintf(stderr, "--generate needs a prompt: --prompt-tokens N, --prompt-ids or --prompt TEXT (one of them)\n");
    return false;
  }
  if (o.generate < 0 && (o.prompt_tokens || !o.prompt_ids.empty() || o.prompt_text_given)) {
    std::fprintf(stderr, "a prompt is only used with --generate M\n");
    return false;
  }
  if (o.flush_mib > 0 && !o.profile) {
    std::fprintf(stderr, "--flush-l2 times kernels: it needs --profile\n");
    return false;
  }
  return o.submit_probe ? o.model.empty() && o.blobs.empty() : o.model.empty() != o.blobs.empty();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Closes the JSON object in js and writes it to path (nothing to do for an empty path);
// false, with a message, where the file cannot be written.
bool write_json(const std::string& path, std::ostringstream& js) {
  if (path.empty()) return true;
  js << "}\n";
  std::ofstream f(path);
  f << js.str();
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

void json_list(std::ostringstream& js, const std::vector<double>& v) {
  js << "[";
  for (size_t i = 0; i < v.size(); ++i) js << (i ? ", " : "") << v[i];
  js << "]";
}

// Keeps a made-up input tensor and everything it points to alive.
struct InputTensor {
  std::vector<uint8_t> data;
  std::vector<::executorch::aten::SizesType> sizes;
  std::vector<::executorch::aten::DimOrderType> dim_order;
  std::unique_ptr<::executorch::runtime::etensor::TensorImpl> impl;
};

void fill(ScalarType t, std::vector<uint8_t>& data, std::mt19937& rng) {
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  if (t == ScalarType::Float) {
    float* p = reinterpret_cast<float*>(data.data());
    for (size_t i = 0; i < data.size() / 4; ++i) p[i] = uni(rng);
  } else {
    std::fill(data.begin(), data.end(), 0);  // indices and masks: zeros are always valid
  }
}

// Reads exactly data.size() bytes from path.
bool read_raw(const std::string& path, std::vector<uint8_t>& data) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return false;
  if (static_cast<size_t>(f.tellg()) != data.size()) return false;
  f.seekg(0);
  return static_cast<bool>(f.read(reinterpret_cast<char*>(data.data()), data.size()));
}

// A loaded method with the memory ExecuTorch gives it (planned buffers, pools).
struct LoadedMethod {
  std::vector<std::vector<uint8_t>> planned;
  std::vector<et::Span<uint8_t>> spans;
  std::vector<uint8_t> method_pool = std::vector<uint8_t>(16 << 20), temp_pool = std::vector<uint8_t>(16 << 20);
  std::unique_ptr<et::MemoryAllocator> method_allocator, temp_allocator;
  std::unique_ptr<et::HierarchicalAllocator> planned_memory;
  std::unique_ptr<et::MemoryManager> memory_manager;
  std::unique_ptr<et::Method> method;
};

// Loads `name`; prints why and returns null if it cannot.
std::unique_ptr<LoadedMethod> load_method(et::Program& program, const et::MethodMeta& meta,
                                          const std::string& name) {
  auto m = std::make_unique<LoadedMethod>();
  m->planned.resize(meta.num_memory_planned_buffers());
  for (size_t i = 0; i < m->planned.size(); ++i) {
    m->planned[i].resize(meta.memory_planned_buffer_size(i).get());
    m->spans.emplace_back(m->planned[i].data(), m->planned[i].size());
  }
  m->method_allocator = std::make_unique<et::MemoryAllocator>(m->method_pool.size(), m->method_pool.data());
  m->temp_allocator = std::make_unique<et::MemoryAllocator>(m->temp_pool.size(), m->temp_pool.data());
  m->planned_memory = std::make_unique<et::HierarchicalAllocator>(
      et::Span<et::Span<uint8_t>>(m->spans.data(), m->spans.size()));
  m->memory_manager = std::make_unique<et::MemoryManager>(m->method_allocator.get(), m->planned_memory.get(),
                                                          m->temp_allocator.get());
  auto method = program.load_method(name.c_str(), m->memory_manager.get());
  if (!method.ok()) {
    std::fprintf(stderr, "cannot load method '%s' (error 0x%x): %s\n", name.c_str(),
                 static_cast<unsigned>(method.error()), vkd::last_error().c_str());
    return nullptr;
  }
  m->method = std::make_unique<et::Method>(std::move(method.get()));
  return m;
}

bool set_inputs(et::Method& method, std::vector<InputTensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    et::Error e = method.set_input(et::EValue(::executorch::aten::Tensor(inputs[i].impl.get())), i);
    if (e != et::Error::Ok) {
      std::fprintf(stderr, "set_input %zu failed (error 0x%x)\n", i, static_cast<unsigned>(e));
      return false;
    }
  }
  return true;
}

// Host and device memory at one point of a soak.
struct MemorySnapshot {
  std::string phase;
  long rss_kb = 0;
  vkd::AllocatorStats blocks;
  std::vector<vkd::HeapReport> heaps;
};

MemorySnapshot snapshot(vkd::Context& ctx, const std::string& phase) {
  MemorySnapshot s;
  s.phase = phase;
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  s.rss_kb = resident * (sysconf(_SC_PAGESIZE) / 1024);
  s.blocks = ctx.allocator().stats();
  s.heaps = ctx.allocator().heaps();
  return s;
}

std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) r += c;
  }
  return r + "\"";
}

// --submit-probe: the part of every execute no program changes: submitting a command buffer
// and learning that it finished, for an empty command buffer and for one holding a compute ->
// compute barrier and a compute -> host barrier, as every recording has. How the host learns it:
// its fence polled (as executes do), a VkEvent the command buffer sets last polled with
// vkGetEventStatus, or a word of host-visible memory the command buffer fills last read in a
// loop (the hardware's floor: no driver call in the wait). The last two wait for the fence
// after the time is taken. Also the host's time in the submit call alone. Median and min
// over --iters submits.
int run_submit_probe(vkd::Context& ctx, const Options& opt) {
  vkd::CommandStream stream(ctx);
  auto barrier = [](VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags src_access,
                    VkPipelineStageFlags dst, VkAccessFlags dst_access) {
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    b.srcAccessMask = src_access;
    b.dstAccessMask = dst_access;
    vkd::vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
  };
  VkEventCreateInfo eci{VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
  VkEvent event = VK_NULL_HANDLE;
  VKD_CHECK(vkd::vkCreateEvent(ctx.device(), &eci, nullptr, &event));
  vkd::Buffer flag(ctx, 4, vkd::MemoryUsage::Readback);
  volatile uint32_t* word = reinterpret_cast<volatile uint32_t*>(flag.mapped());
  enum Wait { kFence, kEvent, kFlag };
  struct Case { bool barriers; Wait wait; const char* name; };
  const Case cases[] = {
      {false, kFence, "empty command buffer, fence polled"},
      {true, kFence, "two barriers (compute -> compute, compute -> host), fence polled"},
      {true, kEvent, "two barriers, then an event set, event polled"},
      {true, kFlag, "two barriers, then a host-visible word filled, the word read in a loop"},
  };
  auto report = [&](const char* what, std::vector<double>& us) {
    std::sort(us.begin(), us.end());
    std::printf("%s: min %.1f us, median %.1f us over %d submits\n", what, us.front(), us[us.size() / 2],
                opt.iters);
  };
  for (const Case& c : cases) {
    VkCommandBuffer cmd = stream.begin();
    if (c.barriers) {
      barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
      barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
              VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    }
    if (c.wait == kEvent) vkd::vkCmdSetEvent(cmd, event, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
    if (c.wait == kFlag) {
      barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
              VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
      vkd::vkCmdFillBuffer(cmd, flag.handle(), 0, 4, 1);
      barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
              VK_ACCESS_HOST_READ_BIT);
    }
    stream.end();
    std::vector<double> us, submit_us, fence_after_us;
    for (int it = 0; it < opt.warmup + opt.iters; ++it) {
      if (c.wait == kEvent) VKD_CHECK(vkd::vkResetEvent(ctx.device(), event));
      if (c.wait == kFlag) *word = 0;
      const auto t0 = std::chrono::steady_clock::now();
      stream.submit();
      const auto t1 = std::chrono::steady_clock::now();
      if (c.wait == kFence) {
        stream.wait();
      } else if (c.wait == kEvent) {
        VkResult r;
        while ((r = vkd::vkGetEventStatus(ctx.device(), event)) == VK_EVENT_RESET) {
        }
        if (r != VK_EVENT_SET) VKD_CHECK(r);
      } else {
        while (*word != 1) {
        }
      }
      const auto t2 = std::chrono::steady_clock::now();
      if (c.wait != kFence) stream.wait();
      const auto t3 = std::chrono::steady_clock::now();
      if (it >= opt.warmup) {
        us.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
        submit_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        fence_after_us.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count());
      }
    }
    report(c.name, us);
    report("  of which the submit call", submit_us);
    if (c.wait != kFence) report("  then the fence's wait", fence_after_us);
  }
  vkd::vkDestroyEvent(ctx.device(), event, nullptr);
  return 0;
}

// --blob: each blob through ComputeGraph::load, then warmup + iters executes on
// made-up inputs (at their largest sizes), one line per blob: "ran" with the median
// latency, or "rejected" with the error. Returns 1 if any blob was rejected.
int run_blobs(const Options& opt) {
  std::vector<std::string> files;
  for (const std::string& path : opt.blobs) {
    if (std::filesystem::is_directory(path)) {
      std::vector<std::string> in_dir;
      for (const auto& e : std::filesystem::directory_iterator(path)) {
        if (e.is_regular_file()) in_dir.push_back(e.path().string());
      }
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.push_back(path);
    }
  }
  std::mt19937 rng(0);
  int rejected = 0;
  for (const std::string& file : files) {
    std::ifstream f(file, std::ios::binary);
    std::vector<uint8_t> blob((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!f.good() && !f.eof()) {
      std::printf("blob %s: cannot read\n", file.c_str());
      ++rejected;
      continue;
    }
    try {
      auto graph = vkd::ComputeGraph::load(blob.data(), blob.size());
      std::vector<std::vector<uint8_t>> inputs(graph->num_inputs());
      for (size_t i = 0; i < inputs.size(); ++i) {
        const vkd::Tensor& t = graph->input(i);
        inputs[i].resize(t.nbytes());
        fill(t.dtype == vkd::DType::Float32 ? ScalarType::Float : ScalarType::Byte, inputs[i], rng);
      }
      std::vector<double> ms;
      for (int it = 0; it < opt.warmup + opt.iters; ++it) {
        const auto t0 = std::chrono::steady_clock::now();
        for (size_t i = 0; i < inputs.size(); ++i) graph->copy_input(i, inputs[i].data(), inputs[i].size());
        graph->execute();
        if (it >= opt.warmup) {
          ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
      }
      std::vector<uint8_t> out;
      for (size_t i = 0; i < graph->num_outputs(); ++i) {
        out.resize(graph->output(i).nbytes());
        graph->copy_output(i, out.data(), out.size());
      }
      std::sort(ms.begin(), ms.end());
      std::printf("blob %s: ran (%zu inputs, %zu outputs, %zu dispatches), median %.3f ms\n", file.c_str(),
                  graph->num_inputs(), graph->num_outputs(), graph->num_dispatches(), ms[ms.size() / 2]);
    } catch (const vkd::ExecuteFault& e) {
      // Loaded and ran; the GPU checks stopped the made-up inputs (zeros: valid
      // indices, but integer divisors of zero).
      std::printf("blob %s: ran, faulted on made-up inputs: %s\n", file.c_str(), e.what());
    } catch (const std::exception& e) {
      std::printf("blob %s: rejected: %s\n", file.c_str(), e.what());
      ++rejected;
    }
    std::fflush(stdout);
  }
  return rejected ? 1 : 0;
}

// The GPU memory of the loaded program's delegates, summed.
vkd::MemoryReport memory_of(const std::vector<vkd::ComputeGraph*>& graphs) {
  vkd::MemoryReport all;
  for (auto* g : graphs) {
    const vkd::MemoryReport r = g->memory_report();
    all.intermediate_bytes += r.intermediate_bytes;
    all.constant_bytes += r.constant_bytes;
    all.state_bytes += r.state_bytes;
    all.staging_bytes += r.staging_bytes;
    all.params_bytes += r.params_bytes;
  }
  return all;
}

// The int values a constant method of the program returns (get_bos_id, get_eos_ids: the
// metadata examples/llm.py writes, as ExecuTorch's LLM runners read it); empty where the
// program has no such method.
std::vector<int64_t> metadata_ints(et::Program& program, const char* name) {
  std::vector<int64_t> values;
  auto meta = program.method_meta(name);
  if (!meta.ok()) return values;
  std::unique_ptr<LoadedMethod> m = load_method(program, meta.get(), name);
  if (!m || m->method->execute() != et::Error::Ok) return values;
  for (size_t i = 0; i < m->method->outputs_size(); ++i) {
    const et::EValue& v = m->method->get_output(i);
    if (v.isInt()) values.push_back(v.toInt());
  }
  return values;
}

// --tokenizer: a prompt from text, and the text of each generated token.
struct TextTokenizer {
#ifdef VKD_RUNNER_HAS_TOKENIZER
  tokenizers::HFTokenizer tokenizer;
#endif
  bool add_bos = true;  // tokenizer_config.json's add_bos_token, where it says
  // tokenizer_config.json's vkdelegate_chat_turn (examples/llm.py export --gguf writes it: the chat
  // template rendered around one user turn, quant/gguf_tokenizer.py's chat_turn), where it has one.
  bool has_chat_turn = false;
  std::string chat_prefix, chat_suffix;
};

// Loads --tokenizer (a tokenizer.json, or a directory with one); false, with a message, where
// it cannot. tokenizer_config.json beside it (the Hugging Face convention, also written by
// examples/llm.py export --gguf) says whether a BOS goes first.
bool load_tokenizer(const std::string& path, TextTokenizer& t) {
#ifdef VKD_RUNNER_HAS_TOKENIZER
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    std::fprintf(stderr, "--tokenizer %s: no such file\n", path.c_str());
    return false;
  }
  std::string why;
  try {  // its JSON parsing throws on some malformed files
    const tokenizers::Error e = t.tokenizer.load(path);
    if (e != tokenizers::Error::Ok) why = "error " + std::to_string(static_cast<int>(e));
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!why.empty()) {
    std::fprintf(stderr, "--tokenizer %s: not a tokenizer.json (or a directory with one) that pytorch_tokenizers' "
                 "HF tokenizer loads (%s)\n", path.c_str(), why.c_str());
    return false;
  }
  const fs::path config = (fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path()) /
                          "tokenizer_config.json";
  if (fs::exists(config, ec)) {
    std::ifstream f(config);
    const nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      std::fprintf(stderr, "--tokenizer: %s is not valid JSON\n", config.c_str());
      return false;
    }
    if (j.contains("add_bos_token") && j["add_bos_token"].is_boolean()) t.add_bos = j["add_bos_token"].get<bool>();
    const auto turn = j.find("vkdelegate_chat_turn");
    if (turn != j.end() && turn->is_object() && turn->contains("prefix") && turn->contains("suffix") &&
        (*turn)["prefix"].is_string() && (*turn)["suffix"].is_string()) {
      t.has_chat_turn = true;
      t.chat_prefix = (*turn)["prefix"].get<std::string>();
      t.chat_suffix = (*turn)["suffix"].get<std::string>();
    }
  }
  return true;
#else
  return false;
#endif
}

// --generate: greedy generation with a KV-cache LLM, forward(tokens [1, T] int64,
// input_pos [T] int64) -> logits [1, T, vocab] (or [1, vocab]). The prompt runs as one
// execute (prefill), then each decode step runs T = 1 at the next position; the next token
// is the argmax of the last logits, taken on the host. Warm-up generations (--warmup, each
// the prompt and two decode steps: the first records, the second replays) run first, so
// that the timed ones measure steady state; each timed generation starts over at position
// 0 (the cache entries past the positions written are masked by the model).
int run_generate(const Options& opt, vkd::Context& ctx, et::Program& program, et::Method& method,
                 const et::MethodMeta& meta, double load_ms) {
  if (meta.num_inputs() != 2) {
    std::fprintf(stderr, "--generate needs forward(tokens, input_pos); this method has %zu inputs\n",
                 meta.num_inputs());
    return 1;
  }
  for (size_t i = 0; i < 2; ++i) {
    auto tag = meta.input_tag(i);
    if (!tag.ok() || tag.get() != et::Tag::Tensor || meta.input_tensor_meta(i)->scalar_type() != ScalarType::Long) {
      std::fprintf(stderr, "--generate needs int64 tensor inputs (tokens [1, T], input_pos [T]); input %zu is not\n", i);
      return 1;
    }
  }
  const auto tokens_meta = meta.input_tensor_meta(0).get();
  if (tokens_meta.sizes().size() != 2) {
    std::fprintf(stderr, "--generate needs tokens of shape [1, T]; input 0 has %zu dims\n", tokens_meta.sizes().size());
    return 1;
  }
  const int64_t max_len = tokens_meta.sizes()[1];  // the upper bound of T: the cache's length
  std::vector<int64_t> prompt = opt.prompt_ids;
  // A made-up prompt: small ids, valid for any vocabulary of 64 or more.
  for (int i = 0; i < opt.prompt_tokens; ++i) prompt.push_back(3 + (i * 37) % 61);
  // --prompt: the text encoded, the program's BOS first (or the tokenizer's, where the program
  // has no get_bos_id); generation stops at the program's EOS ids (or the tokenizer's).
  TextTokenizer text;
  std::vector<int64_t> eos_ids;
  if (opt.prompt_text_given) {
    if (!load_tokenizer(opt.tokenizer, text)) return 1;
#ifdef VKD_RUNNER_HAS_TOKENIZER
    std::string prompt_text = opt.prompt_text;
    if (opt.chat) {
      if (!text.has_chat_turn) {
        std::fprintf(stderr, "--chat: the tokenizer_config.json beside %s has no vkdelegate_chat_turn (examples/llm.py "
                     "export --gguf writes it from the model's chat template); pass the templated text as --prompt\n",
                     opt.tokenizer.c_str());
        return 1;
      }
      prompt_text = text.chat_prefix + prompt_text + text.chat_suffix;
    }
    auto encoded = text.tokenizer.encode(prompt_text, 0, 0);
    if (!encoded.ok()) {
      std::fprintf(stderr, "--tokenizer %s cannot encode the prompt (error %d)\n", opt.tokenizer.c_str(),
                   static_cast<int>(encoded.error()));
      return 1;
    }
    std::string bos_note = "no BOS: tokenizer_config.json says add_bos_token false";
    if (text.add_bos) {
      const std::vector<int64_t> bos = metadata_ints(program, "get_bos_id");
      prompt.push_back(bos.empty() ? static_cast<int64_t>(text.tokenizer.bos_tok()) : bos[0]);
      bos_note = "BOS " + std::to_string(prompt[0]) + (bos.empty() ? " (the tokenizer's)" : " (the program's)") + " first";
    }
    for (uint64_t id : encoded.get()) prompt.push_back(static_cast<int64_t>(id));
    eos_ids = metadata_ints(program, "get_eos_ids");
    if (eos_ids.empty()) eos_ids.push_back(static_cast<int64_t>(text.tokenizer.eos_tok()));
    const std::vector<int64_t> vocab = metadata_ints(program, "get_vocab_size");
    for (int64_t id : prompt) {
      if (!vocab.empty() && id >= vocab[0]) {
        std::fprintf(stderr, "--tokenizer %s gives token id %lld; the program's vocabulary has %lld: not this "
                     "model's tokenizer\n", opt.tokenizer.c_str(), (long long)id, (long long)vocab[0]);
        return 1;
      }
    }
    if (prompt.empty()) {
      std::fprintf(stderr, "the prompt encodes to no tokens (and no BOS goes first): give some text\n");
      return 1;
    }
    std::printf("prompt: %zu tokens (%s)\n", prompt.size(), bos_note.c_str());
#endif
  }
  const int64_t prompt_len = static_cast<int64_t>(prompt.size());
  if (prompt_len + opt.generate > max_len) {
    std::fprintf(stderr, "the prompt (%lld tokens) and %d decode steps need %lld positions; the program's cache "
                 "holds %lld (its max sequence length)\n", (long long)prompt_len, opt.generate,
                 (long long)(prompt_len + opt.generate), (long long)max_len);
    return 1;
  }

  // One execute of the tokens at positions start...; returns the argmax of the last logits.
  auto step = [&](const std::vector<int64_t>& ids, int64_t start, int64_t& next) -> bool {
    std::vector<int64_t> tokens(ids), positions(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) positions[i] = start + static_cast<int64_t>(i);
    ::executorch::aten::SizesType t = static_cast<::executorch::aten::SizesType>(ids.size());
    ::executorch::aten::SizesType tok_sizes[2] = {1, t}, pos_sizes[1] = {t};
    ::executorch::aten::DimOrderType tok_order[2] = {0, 1}, pos_order[1] = {0};
    ::executorch::runtime::etensor::TensorImpl tok(ScalarType::Long, 2, tok_sizes, tokens.data(), tok_order);
    ::executorch::runtime::etensor::TensorImpl pos(ScalarType::Long, 1, pos_sizes, positions.data(), pos_order);
    if (method.set_input(et::EValue(::executorch::aten::Tensor(&tok)), 0) != et::Error::Ok ||
        method.set_input(et::EValue(::executorch::aten::Tensor(&pos)), 1) != et::Error::Ok) {
      std::fprintf(stderr, "set_input of %lld tokens at position %lld failed\n", (long long)t, (long long)start);
      return false;
    }
    if (method.execute() != et::Error::Ok) {
      std::fprintf(stderr, "execute of %lld tokens at position %lld failed: %s\n", (long long)t, (long long)start,
                   vkd::last_error().c_str());
      return false;
    }
    const et::EValue& out = method.get_output(0);
    if (!out.isTensor() || out.toTensor().scalar_type() != ScalarType::Float || out.toTensor().dim() < 2) {
      std::fprintf(stderr, "--generate needs float logits [1, T, vocab] as the first output\n");
      return false;
    }
    const auto logits = out.toTensor();
    const int64_t vocab = logits.size(logits.dim() - 1);
    const float* last = logits.const_data_ptr<float>() + (logits.numel() - vocab);
    next = std::max_element(last, last + vocab) - last;
    return true;
  };
  using clock = std::chrono::steady_clock;
  auto ms_since = [](clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  auto is_eos = [&](int64_t t) { return std::find(eos_ids.begin(), eos_ids.end(), t) != eos_ids.end(); };
  // The text of token t after prev, written to stdout as it comes: a byte-level piece may hold
  // part of a UTF-8 character, the terminal joins the bytes. The EOS that ends generation is not printed.
  auto print_piece = [&](int64_t prev, int64_t t) -> bool {
#ifdef VKD_RUNNER_HAS_TOKENIZER
    if (is_eos(t)) return true;
    auto piece = text.tokenizer.decode(static_cast<uint64_t>(prev), static_cast<uint64_t>(t));
    if (!piece.ok()) {
      std::fprintf(stderr, "\n--tokenizer %s cannot decode token %lld (error %d): not this model's tokenizer\n",
                   opt.tokenizer.c_str(), (long long)t, static_cast<int>(piece.error()));
      return false;
    }
    std::fwrite(piece.get().data(), 1, piece.get().size(), stdout);
    std::fflush(stdout);
#endif
    return true;
  };
  // One generation: the prompt, then `steps` decode steps (fewer where a token is an EOS id,
  // with --prompt); times in ms; with `print`, each token's text as it comes.
  auto generate = [&](int steps, std::vector<int64_t>& out, double& prefill_ms, std::vector<double>& step_ms,
                      bool print) {
    out.clear();
    step_ms.clear();
    int64_t next = 0;
    auto t0 = clock::now();
    if (!step(prompt, 0, next)) return false;
    prefill_ms = ms_since(t0);
    out.push_back(next);
    if (print && !print_piece(prompt.back(), next)) return false;
    for (int s = 0; s < steps && !is_eos(out.back()); ++s) {
      t0 = clock::now();
      if (!step({out.back()}, prompt_len + s, next)) return false;
      step_ms.push_back(ms_since(t0));
      if (print && !print_piece(out.back(), next)) return false;
      out.push_back(next);
    }
    if (print) std::printf("\n");
    return true;
  };

  std::vector<int64_t> tokens, first_tokens;
  double prefill_ms = 0;
  std::vector<double> step_ms, prefills, steps_all;
  for (int w = 0; w < opt.warmup; ++w) {
    if (!generate(std::min(opt.generate, 2), tokens, prefill_ms, step_ms, false)) return 1;
  }
  const int runs = opt.iters_given ? opt.iters : 1;
  for (int r = 0; r < runs; ++r) {
    if (!generate(opt.generate, tokens, prefill_ms, step_ms, opt.prompt_text_given && r == 0)) return 1;
    if (r == 0) first_tokens = tokens;
    if (tokens != first_tokens) {
      std::fprintf(stderr, "generation %d gave other tokens than the first: a decode step is not deterministic\n", r);
      return 1;
    }
    prefills.push_back(prefill_ms);
    steps_all.insert(steps_all.end(), step_ms.begin(), step_ms.end());
  }
  const auto graphs = vkd::live_graphs();
  const vkd::MemoryReport mem = memory_of(graphs);
  const vkd::AllocatorStats blocks = ctx.allocator().stats();
  const double prefill_med = median(prefills);
  double decode_sum = 0;
  for (double v : steps_all) decode_sum += v;
  const double decode_tok_s = steps_all.empty() ? 0 : 1000.0 * steps_all.size() / decode_sum;
  const double step_med = steps_all.empty() ? 0 : median(steps_all);

  std::printf("model: %s (%zu delegate%s), load %.1f ms\n", opt.model.c_str(), graphs.size(),
              graphs.size() == 1 ? "" : "s", load_ms);
  std::printf("tokens:");
  for (int64_t t : tokens) std::printf(" %lld", (long long)t);
  std::printf("\n");
  std::printf("prefill: %lld tokens in %.3f ms (median of %d): %.1f tok/s\n", (long long)prompt_len, prefill_med,
              runs, 1000.0 * prompt_len / prefill_med);
  if (!steps_all.empty()) {
    const int64_t decoded = static_cast<int64_t>(step_ms.size());  // fewer than --generate after an EOS
    std::printf("decode: %lld steps at context %lld..%lld: median %.3f ms/step, %.1f tok/s (steps / their total time)\n",
                (long long)decoded, (long long)prompt_len + 1, (long long)(prompt_len + decoded), step_med,
                decode_tok_s);
    std::printf("decode step ms:");
    for (double v : step_ms) std::printf(" %.3f", v);
    std::printf("\n");
  }
  using ull = unsigned long long;
  std::printf("GPU memory: constants %.1f MiB, KV cache (state) %.1f MiB, other intermediates %.1f MiB, "
              "staging %.1f MiB, parameters %.1f KiB; device blocks allocated %.1f MiB (%llu B in buffers)\n",
              mem.constant_bytes / 1048576.0, mem.state_bytes / 1048576.0,
              (mem.intermediate_bytes - mem.state_bytes) / 1048576.0, mem.staging_bytes / 1048576.0,
              mem.params_bytes / 1024.0, blocks.block_bytes / 1048576.0, (ull)blocks.used_bytes);

  std::ostringstream js;
  js.precision(9);
  js << "{\"device\": " << json_string(ctx.info().name + " (" + ctx.info().type + ")")
     << ", \"model\": " << json_string(opt.model) << ", \"delegates\": " << graphs.size()
     << ", \"load_ms\": " << load_ms << ", \"max_seq_len\": " << max_len << ", \"prompt_tokens\": " << prompt_len
     << ", \"generate\": " << opt.generate << ", \"runs\": " << runs << ", \"prompt\": [";
  for (size_t i = 0; i < prompt.size(); ++i) js << (i ? ", " : "") << prompt[i];
  js << "], \"tokens\": [";
  for (size_t i = 0; i < tokens.size(); ++i) js << (i ? ", " : "") << tokens[i];
  js << "], \"prefill_ms\": " << prefill_med << ", \"prefill_ms_runs\": ";
  json_list(js, prefills);
  js << ", \"prefill_tok_s\": " << 1000.0 * prompt_len / prefill_med << ", \"decode_step_ms\": ";
  json_list(js, steps_all);
  js << ", \"decode_step_ms_median\": " << step_med << ", \"decode_tok_s\": " << decode_tok_s
     << ", \"memory\": {\"constant_bytes\": " << mem.constant_bytes << ", \"state_bytes\": " << mem.state_bytes
     << ", \"intermediate_bytes\": " << mem.intermediate_bytes << ", \"staging_bytes\": " << mem.staging_bytes
     << ", \"params_bytes\": " << mem.params_bytes << ", \"block_bytes\": " << blocks.block_bytes
     << ", \"used_bytes\": " << blocks.used_bytes << "}";

  // One profiled execute (a barrier after every dispatch: a serialized GPU time, above what
  // the step takes unprofiled), its dispatches and their time summed by op into the JSON as
  // KEY_dispatches, KEY_gpu_us and KEY_by_op.
  auto profile = [&](const std::vector<int64_t>& ids, int64_t start, const std::string& key) -> bool {
    for (auto* g : graphs) g->set_profiling(true);
    int64_t next = 0;
    const bool ok = step(ids, start, next);
    if (!ok) return false;
    std::map<std::string, std::pair<int, double>> by_op;
    double total = 0;
    size_t n = 0;
    js << ", \"" << key << "_dispatches\": [";
    for (size_t i = 0; i < graphs.size(); ++i) {
      for (const auto& t : graphs[i]->timings()) {
        // Timings name a dispatch "op #N (target)": summed by target.
        std::string op = t.op;
        const size_t open = op.find(" (");
        if (op.rfind("op #", 0) == 0 && open != std::string::npos && op.back() == ')') {
          op = op.substr(open + 2, op.size() - open - 3);
        }
        by_op[op].first += 1;
        by_op[op].second += t.us;
        total += t.us;
        js << (n++ ? ", " : "") << "{\"delegate\": " << i << ", \"op\": " << json_string(t.op)
           << ", \"shape\": " << json_string(t.shape) << ", \"us\": " << t.us << "}";
      }
    }
    for (auto* g : graphs) g->set_profiling(false);
    std::vector<std::pair<std::string, std::pair<int, double>>> ops(by_op.begin(), by_op.end());
    std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
    std::printf("%s GPU time by op (%zu tokens at position %lld, %zu dispatches, total %.1f us; profiled with a "
                "barrier after every dispatch):\n", key.c_str(), ids.size(), (long long)start, n, total);
    std::printf("  %-40s %6s %10s %7s\n", "op", "count", "us", "share");
    js << "], \"" << key << "_gpu_us\": " << total << ", \"" << key << "_by_op\": [";
    for (size_t k = 0; k < ops.size(); ++k) {
      std::printf("  %-40s %6d %10.1f %6.1f%%\n", ops[k].first.c_str(), ops[k].second.first, ops[k].second.second,
                  total > 0 ? 100.0 * ops[k].second.second / total : 0.0);
      js << (k ? ", " : "") << "{\"op\": " << json_string(ops[k].first) << ", \"count\": " << ops[k].second.first
         << ", \"us\": " << ops[k].second.second << "}";
    }
    js << "]";
    return true;
  };
  if (opt.profile) {
    // The prompt again at position 0 (it rewrites what the timed runs wrote there), then one
    // more decode step after the last generated token.
    if (!profile(prompt, 0, "prefill")) return 1;
    const int64_t decoded = static_cast<int64_t>(tokens.size()) - 1;
    if (decoded > 0 && prompt_len + decoded < max_len && !profile({tokens.back()}, prompt_len + decoded, "decode")) {
      return 1;
    }
  }
  return write_json(opt.json, js) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, opt)) {
    usage();
    return 2;
  }
  et::runtime_init();
  // Read when the context is created, below.
  if (opt.pipeline_stats) setenv("VKDELEGATE_PIPELINE_STATS", "1", 1);
  if (!opt.pipeline_ir_dir.empty()) setenv("VKDELEGATE_PIPELINE_IR", "1", 1);

  vkd::Context* ctx = vkd::Context::get();
  if (!ctx) {
    std::fprintf(stderr, "vkdelegate_runner: no Vulkan device: %s\n",
                 vkd::Context::unavailable_reason().c_str());
    return 1;
  }
  std::printf("device: %s (%s, Vulkan %u.%u)\n", ctx->info().name.c_str(), ctx->info().type.c_str(),
              VK_API_VERSION_MAJOR(ctx->info().api_version), VK_API_VERSION_MINOR(ctx->info().api_version));
  if (opt.submit_probe) return run_submit_probe(*ctx, opt);
  if (!opt.blobs.empty()) return run_blobs(opt);

  auto loader = FileDataLoader::from(opt.model.c_str());
  if (!loader.ok()) {
    std::fprintf(stderr, "cannot open %s\n", opt.model.c_str());
    return 1;
  }
  const auto t_load0 = std::chrono::steady_clock::now();
  auto program = et::Program::load(&loader.get());
  if (!program.ok()) {
    std::fprintf(stderr, "%s is not a valid program (error 0x%x)\n", opt.model.c_str(),
                 static_cast<unsigned>(program.error()));
    return 1;
  }
  auto meta = program->method_meta(opt.method.c_str());
  if (!meta.ok()) {
    std::fprintf(stderr, "the program has no method '%s'\n", opt.method.c_str());
    return 1;
  }

  std::unique_ptr<LoadedMethod> loaded = load_method(program.get(), meta.get(), opt.method);
  if (!loaded) return 1;
  et::Method* method = loaded->method.get();
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load0).count();
  if (opt.generate >= 0) return run_generate(opt, *ctx, program.get(), *method, meta.get(), load_ms);

  std::mt19937 rng(0);
  std::vector<InputTensor> inputs(meta->num_inputs());
  for (size_t i = 0; i < meta->num_inputs(); ++i) {
    auto tag = meta->input_tag(i);
    if (!tag.ok() || tag.get() != et::Tag::Tensor) {
      std::fprintf(stderr, "input %zu is not a tensor; only tensor inputs are supported\n", i);
      return 1;
    }
    auto tm = meta->input_tensor_meta(i).get();
    InputTensor& in = inputs[i];
    in.sizes.assign(tm.sizes().begin(), tm.sizes().end());
    in.dim_order.assign(tm.dim_order().begin(), tm.dim_order().end());
    in.data.resize(tm.nbytes());
    if (opt.inputs_dir.empty()) {
      fill(tm.scalar_type(), in.data, rng);
    } else {
      const std::string path = opt.inputs_dir + "/input_" + std::to_string(i) + ".bin";
      if (!read_raw(path, in.data)) {
        std::fprintf(stderr, "cannot read %zu bytes of input %zu from %s\n", in.data.size(), i, path.c_str());
        return 1;
      }
    }
    in.impl = std::make_unique<::executorch::runtime::etensor::TensorImpl>(
        tm.scalar_type(), static_cast<ssize_t>(in.sizes.size()), in.sizes.data(), in.data.data(),
        in.dim_order.data());
  }
  if (!set_inputs(*method, inputs)) return 1;

  for (int i = 0; i < opt.warmup; ++i) {
    if (method->execute() != et::Error::Ok) {
      std::fprintf(stderr, "execute failed: %s\n", vkd::last_error().c_str());
      return 1;
    }
  }
  std::vector<MemorySnapshot> memory;
  if (opt.soak_cycles >= 0) memory.push_back(snapshot(*ctx, "after warm-up"));
  std::vector<double> ms;
  for (int i = 0; i < opt.iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (method->execute() != et::Error::Ok) {
      std::fprintf(stderr, "execute failed: %s\n", vkd::last_error().c_str());
      return 1;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  if (opt.soak_cycles >= 0) memory.push_back(snapshot(*ctx, "after " + std::to_string(opt.iters) + " executes"));
  std::sort(ms.begin(), ms.end());
  const auto graphs = vkd::live_graphs();
  std::printf("model: %s (%zu delegate%s)\n", opt.model.c_str(), graphs.size(), graphs.size() == 1 ? "" : "s");
  std::printf("load: %.3f ms\n", load_ms);
  std::printf("latency over %d iterations: min %.3f ms, median %.3f ms\n", opt.iters, ms.front(),
              ms[ms.size() / 2]);

  if (!opt.outputs_dir.empty()) {
    for (size_t i = 0; i < method->outputs_size(); ++i) {
      const et::EValue& v = method->get_output(i);
      if (!v.isTensor()) continue;
      const auto t = v.toTensor();
      const std::string path = opt.outputs_dir + "/output_" + std::to_string(i) + ".bin";
      std::ofstream f(path, std::ios::binary);
      f.write(static_cast<const char*>(t.const_data_ptr()), static_cast<std::streamsize>(t.nbytes()));
      if (!f) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return 1;
      }
    }
  }
  std::ostringstream js;
  js.precision(9);
  js << "{\"device\": " << json_string(ctx->info().name + " (" + ctx->info().type + ", Vulkan " +
                                        std::to_string(VK_API_VERSION_MAJOR(ctx->info().api_version)) + "." +
                                        std::to_string(VK_API_VERSION_MINOR(ctx->info().api_version)) + ")")
     << ", \"model\": " << json_string(opt.model) << ", \"delegates\": " << graphs.size()
     << ", \"load_ms\": " << load_ms << ", \"iters\": " << opt.iters << ", \"min_ms\": " << ms.front()
     << ", \"median_ms\": " << ms[ms.size() / 2];

  {
    // The weights as the delegates store them on the GPU (benchmarks count GB/s on them).
    uint64_t constant_bytes = 0;
    for (auto* g : graphs) constant_bytes += g->memory_report().constant_bytes;
    js << ", \"constant_bytes\": " << constant_bytes;
  }
  if (opt.memory) {
    for (size_t i = 0; i < graphs.size(); ++i) {
      const vkd::MemoryReport r = graphs[i]->memory_report();
      using ull = unsigned long long;
      std::printf("delegate %zu memory: intermediates %llu B (planned %llu B in %llu shared "
                  "objects, %llu B without sharing), constants %llu B, staging %llu B, "
                  "parameters %llu B, buffers %llu\n",
                  i, (ull)r.intermediate_bytes, (ull)r.planned_bytes, (ull)r.num_shared_objects,
                  (ull)r.unshared_bytes, (ull)r.constant_bytes, (ull)r.staging_bytes,
                  (ull)r.params_bytes, (ull)r.num_storages);
    }
  }
  if (opt.profile) {
    try {
      // One profiled execute: the GPU time of every dispatch of every delegate and their total
      // (a barrier after each dispatch; the input copies and any prologue fall outside it).
      auto profiled_execute = [&]() -> double {
        if (method->execute() != et::Error::Ok) {
          throw std::runtime_error("execute failed: " + vkd::last_error());
        }
        double all = 0;
        for (auto* g : graphs) {
          for (const auto& n : g->timings()) all += n.us;
        }
        return all;
      };
      for (auto* g : graphs) g->set_profiling(true);
      std::vector<double> warm;  // each right after the previous execute: the cache holds what it left
      for (int r = 0; r < opt.gpu_runs; ++r) warm.push_back(profiled_execute());
      bool first = true;
      js << ", \"dispatches\": [";
      for (size_t i = 0; i < graphs.size(); ++i) {
        const auto& t = graphs[i]->timings();
        double total = 0;
        for (const auto& n : t) total += n.us;
        for (size_t k = 0; k < t.size(); ++k) {
          js << (first ? "" : ", ") << "{\"delegate\": " << i << ", \"op\": " << json_string(t[k].op)
             << ", \"shape\": " << json_string(t[k].shape) << ", \"us\": " << t[k].us << "}";
          first = false;
        }
        // Barrier placement: profiling records one barrier per dispatch (timestamps of
        // overlapping dispatches would mean nothing), so the total is a serialized time.
        std::printf("delegate %zu GPU time per dispatch (total %.1f us; profiled with a barrier "
                    "after every dispatch, unlike normal runs):\n", i, total);
        std::printf("  %-4s %-32s %-24s %10s %7s\n", "#", "op", "output", "us", "share");
        for (size_t k = 0; k < t.size(); ++k) {
          std::printf("  %-4zu %-32s %-24s %10.1f %6.1f%%\n", k, t[k].op.c_str(), t[k].shape.c_str(),
                      t[k].us, total > 0 ? 100.0 * t[k].us / total : 0.0);
        }
      }
      js << "], \"gpu_us\": " << median(warm) << ", \"gpu_us_runs\": ";
      json_list(js, warm);
      std::printf("GPU time over %d profiled executes: median %.2f us\n", opt.gpu_runs, median(warm));
      if (opt.flush_mib > 0) {
        // Cold cache: a fill of a buffer larger than the GPU's last-level cache, recorded
        // after the input copies and before the first timestamp, evicts the weights and
        // inputs before every profiled execute.
        const VkDeviceSize bytes = static_cast<VkDeviceSize>(opt.flush_mib) << 20;
        vkd::Buffer flush(*ctx, bytes, vkd::MemoryUsage::Device, VK_BUFFER_USAGE_TRANSFER_DST_BIT);
        const VkBuffer handle = flush.handle();
        for (auto* g : graphs) {
          g->set_prologue([handle](VkCommandBuffer cmd) {
            vkd::vkCmdFillBuffer(cmd, handle, 0, VK_WHOLE_SIZE, 0x3f800000u);
          });
        }
        std::vector<double> cold;
        for (int r = 0; r < opt.gpu_runs; ++r) cold.push_back(profiled_execute());
        for (auto* g : graphs) g->set_prologue(nullptr);
        js << ", \"flush_l2_mib\": " << opt.flush_mib << ", \"gpu_us_flushed\": " << median(cold)
           << ", \"gpu_us_flushed_runs\": ";
        json_list(js, cold);
        std::printf("GPU time over %d profiled executes, each after a %d MiB fill (cache flushed): median %.2f us\n",
                    opt.gpu_runs, opt.flush_mib, median(cold));
      }
      for (auto* g : graphs) g->set_profiling(false);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "profiling unavailable: %s\n", e.what());
      return 1;
    }
  }
  if (opt.pipeline_stats) {
    if (!ctx->info().pipeline_statistics) {
      std::printf("pipeline statistics: the driver has no VK_KHR_pipeline_executable_properties\n");
    }
    js << ", \"pipelines\": [";
    bool first = true;
    if (!opt.pipeline_ir_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(opt.pipeline_ir_dir, ec);
    }
    for (const vkd::Pipeline* p : ctx->pipelines().all()) {
      const std::string local = std::to_string(p->local_size[0]) + "x" + std::to_string(p->local_size[1]) +
                                "x" + std::to_string(p->local_size[2]);
      std::printf("kernel %s [%s]:", p->shader.c_str(), local.c_str());
      js << (first ? "" : ", ") << "{\"shader\": " << json_string(p->shader) << ", \"local_size\": "
         << json_string(local) << ", \"statistics\": [";
      for (size_t k = 0; k < p->statistics.size(); ++k) {
        std::printf("%s %s", k == 0 ? "" : ";", p->statistics[k].c_str());
        js << (k == 0 ? "" : ", ") << json_string(p->statistics[k]);
      }
      std::printf("\n");
      js << "]}";
      for (const auto& [name, text] : p->internal_representations) {
        std::string file = opt.pipeline_ir_dir + "/" + p->shader + "." + local + "." + name + ".txt";
        for (char& c : file) if (c == ' ') c = '_';
        std::ofstream f(file);
        f << text;
        if (!f) std::fprintf(stderr, "cannot write %s\n", file.c_str());
      }
      first = false;
    }
    js << "]";
  }
  if (opt.soak_cycles >= 0) {
    // One cycle: load the method again, execute once, unload (the first method stays loaded).
    // Two warm-up cycles first, so that pipelines and allocator blocks are in place.
    for (int c = 0; c < opt.soak_cycles + 2; ++c) {
      if (c == 2) memory.push_back(snapshot(*ctx, "after 2 load/unload cycles"));
      std::unique_ptr<LoadedMethod> again = load_method(program.get(), meta.get(), opt.method);
      if (!again || !set_inputs(*again->method, inputs)) return 1;
      if (again->method->execute() != et::Error::Ok) {
        std::fprintf(stderr, "execute failed: %s\n", vkd::last_error().c_str());
        return 1;
      }
    }
    memory.push_back(snapshot(*ctx, "after " + std::to_string(opt.soak_cycles) + " more load/unload cycles"));
    using ull = unsigned long long;
    js << ", \"memory\": [";
    for (size_t k = 0; k < memory.size(); ++k) {
      const MemorySnapshot& s = memory[k];
      std::printf("memory %s: host RSS %ld KB, device blocks %llu B (%llu B in buffers)", s.phase.c_str(),
                  s.rss_kb, (ull)s.blocks.block_bytes, (ull)s.blocks.used_bytes);
      js << (k ? ", " : "") << "{\"phase\": " << json_string(s.phase) << ", \"rss_kb\": " << s.rss_kb
         << ", \"block_bytes\": " << s.blocks.block_bytes << ", \"used_bytes\": " << s.blocks.used_bytes
         << ", \"heaps\": [";
      for (size_t h = 0; h < s.heaps.size(); ++h) {
        const vkd::HeapReport& r = s.heaps[h];
        if (r.budget > 0) std::printf(", heap %zu usage %llu B of budget %llu B", h, (ull)r.usage, (ull)r.budget);
        js << (h ? ", " : "") << "{\"size\": " << r.size << ", \"device_local\": "
           << (r.device_local ? "true" : "false") << ", \"budget\": " << r.budget << ", \"usage\": " << r.usage
           << ", \"block_bytes\": " << r.block_bytes << "}";
      }
      std::printf("\n");
      js << "]}";
    }
    js << "], \"soak_cycles\": " << opt.soak_cycles;
  }
  return write_json(opt.json, js) ? 0 : 1;
}
