// ComputeGraph: a delegate's graph on the GPU. Built once from a verified blob
// (values, then one build function per op, then storage and constants), it
// records one command buffer that each execute replays. New input sizes (within
// the upper bounds) re-run every node's update function and re-record.
#pragma once

#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "../settings.h"
#include "../vk/memory.h"
#include "../vk/pipeline.h"
#include "values.h"

namespace vkd {

class ComputeGraph;
struct Node;

// Recomputes a node's output sizes, parameters and dispatch size from the
// current sizes of its inputs. Runs at build and after every resize.
using UpdateFn = std::function<void(ComputeGraph&, Node&)>;

struct Node {
  std::string op;                      // op name, for errors and profiles
  int source = -1;                     // index in the blob's chain of the op that added it
  const Pipeline* pipeline = nullptr;  // null for nodes without a dispatch (views, SymInt ops)
  std::vector<int> tensors;            // tensor value ids bound at bindings 0..n-1
  std::vector<uint8_t> params;         // std140 parameter block (binding n)
  std::array<uint32_t, 3> groups{0, 0, 0};
  UpdateFn update;
  VkDeviceSize params_offset = 0;
  VkDescriptorSet set = VK_NULL_HANDLE;
  // Bindings that see only a byte range of their tensor's storage (binding
  // index -> offset, range): how an op reads a tensor larger than one
  // binding's maxStorageBufferRange, a window per dispatch. Offsets must be
  // multiples of the device's minStorageBufferOffsetAlignment.
  std::vector<std::array<VkDeviceSize, 3>> windows;  // {binding, offset, range}
  void set_window(size_t binding, VkDeviceSize offset, VkDeviceSize range) {
    windows.push_back({static_cast<VkDeviceSize>(binding), offset, range});
  }

  template <typename T>
  void set_params(const T& p) {
    params.resize(sizeof(T));
    std::memcpy(params.data(), &p, sizeof(T));
  }
  // Dispatch over n invocations of a 1-D shader: x is capped by the device
  // limit and y carries the rest (shaders flatten x and y).
  void set_groups_1d(int64_t n, uint32_t local_x);
};

struct Storage {
  VkDeviceSize nbytes = 0;
  bool is_input = false;
  bool is_output = false;
  bool is_constant = false;
  bool is_shared = false;  // a memory object of the plan, for several tensors
  bool is_state = false;   // a state tensor's: kept across executes, never the host's
  bool zeroed = false;     // add_zeroed_tensor's: zeros at load, kept across executes
  std::unique_ptr<Buffer> buffer;
  std::unique_ptr<Buffer> staging;  // for inputs/outputs whose buffer the host cannot map
};

struct MemoryReport {
  uint64_t intermediate_bytes = 0;  // device storage of non-constant tensors (inputs and outputs too)
  uint64_t planned_bytes = 0;       // of which: the shared memory objects of the plan
  uint64_t unshared_bytes = 0;      // what the planned tensors would take with a buffer each
  uint64_t constant_bytes = 0;
  uint64_t state_bytes = 0;         // of intermediate_bytes: state kept across executes (KV caches)
  uint64_t staging_bytes = 0;       // host-visible copies of inputs and outputs
  uint64_t params_bytes = 0;
  uint64_t num_storages = 0;        // device buffers, constants included
  uint64_t num_shared_objects = 0;
};

struct NodeTiming {
  std::string op;
  std::string shape;  // output sizes
  double us = 0;
};

class ComputeGraph {
 public:
  // Verifies the blob, builds every op, allocates and uploads constants.
  // Throws GraphError / VulkanError / SettingsError with a message naming the
  // problem. The kernels follow `settings`; without, graph_defaults().
  static std::unique_ptr<ComputeGraph> load(const uint8_t* blob, size_t size, const Settings& settings);
  static std::unique_ptr<ComputeGraph> load(const uint8_t* blob, size_t size);
  ~ComputeGraph();

  // --- for op build functions ---
  Context& context() { return ctx_; }
  // The settings this graph was loaded with (kernel choices, barriers).
  const Settings& settings() const { return settings_; }
  size_t num_values() const { return values_.size(); }
  Value& value(int id);
  Tensor& tensor(int id);
  bool is_null(int id);
  int64_t get_int(int id);  // accepts a SymInt: its current value
  double get_double(int id);  // accepts an int too
  bool get_bool(int id);
  const std::string& get_string(int id);
  // An int list, or a SymInt[] argument with dynamic entries (a list of Int and
  // SymInt values): their current values. Read it in update functions to resize.
  const IntList& get_int_list(int id);
  SymInt& symint(int id);
  const ValueList& get_value_list(int id);
  // A node added so far, to adjust one that another op's build function added (its window,
  // its update) where an op records others' kernels.
  Node& node(size_t i) { return nodes_.at(i); }
  // Adds a dispatch node; `tensors` are bound in order (outputs first).
  Node& add_node(const std::string& op, const std::string& shader, LocalSize local,
                 std::vector<int> tensors, UpdateFn update);
  // The last node added (null before any), and that node given another kernel, bindings and update:
  // how an op folds its first step into the kernel of the node before it (matmul.cpp:
  // fold_norm_into_reduce). Only the last node: nothing after it has read what it writes.
  Node* last_node() { return nodes_.empty() ? nullptr : &nodes_.back(); }
  void rebind_last_node(const std::string& shader, LocalSize local, std::vector<int> tensors, UpdateFn update);
  // A node-owned temporary (split-K partial sums): a tensor value outside the
  // memory plan, in the graph's one scratch storage, which allocate() sizes to
  // its largest user. Every user binds that one buffer, so the barrier tracking
  // orders them: the contents live from the dispatch that writes them to the
  // next that writes them. Take references to values only after this call
  // (it appends a value).
  int add_scratch_tensor(DType dtype, const Sizes& max_sizes);
  // A node-owned tensor outside the memory plan with a storage of its own, zeros at load and
  // kept across executes (a state the node keeps to itself: counters its kernel returns to
  // zero before it ends, so that a replay starts from zeros). Take references to values only
  // after this call.
  int add_zeroed_tensor(DType dtype, const Sizes& sizes);
  // GPU-side checks (glsl/fault.glslh): a tensor value for one node's fault
  // slot, kFaultSlotWords words of the graph's host-visible fault buffer, to bind as that
  // node's last storage binding (add_node gives it its window). -1 where the
  // graph's settings turn the checks off (NO_GPU_CHECKS): take the shader's
  // unchecked variant then. Take references to values only after this call.
  int add_fault_slot();
  // An op that updates a state tensor in place (index_put or vkd_rope_kv_update into a
  // KV cache): its output value becomes the state tensor's storage, so the node that
  // writes it writes the state, and later readers of the output read the updated state.
  void alias_state(int out, int state);
  // Adds a node without a dispatch whose output shares the storage of its input.
  // Memory planning must have put both in one object (OpEntry.aliases_input).
  Node& add_view_node(const std::string& op, int out, int in, UpdateFn update);
  // Adds a node without a dispatch or tensors that computes SymInt values; its
  // update runs at build and whenever input sizes change, in chain order.
  Node& add_scalar_node(const std::string& op, UpdateFn update);
  // How this graph stores tensors of dtype t on the GPU (values.h: StorageType):
  // int64 as int64 where the device has shaderInt64, unless the settings say
  // INT64_STORAGE=32. Every tensor's storage_type comes from here.
  StorageType storage_type_of(DType t) const { return storage_type(t, int64_storage_); }
  // The op being built (for messages).
  const std::string& current_op() const { return current_op_; }
  [[noreturn]] void fail(const std::string& msg) const;

  // --- for running ---
  size_t num_inputs() const { return input_ids_.size(); }
  size_t num_outputs() const { return output_ids_.size(); }
  const Tensor& input(size_t i) const { return std::get<Tensor>(values_[input_ids_[i]]); }
  const Tensor& output(size_t i) const { return std::get<Tensor>(values_[output_ids_[i]]); }
  // Sets the sizes of input i for the next execute; throws if they exceed the
  // upper bound, fall below the minimum or differ in rank.
  void set_input_sizes(size_t i, const Sizes& sizes);
  void copy_input(size_t i, const void* src, size_t nbytes);
  // Sizes and the command buffer for the next execute (execute does this first): after it,
  // execute only submits and waits.
  void prepare();
  void execute();
  void copy_output(size_t i, void* dst, size_t nbytes);

  void set_profiling(bool on);
  bool profiling() const { return profiling_; }
  // Commands recorded after the input copies and before the dispatches, followed by a
  // barrier; with profiling they fall before the first timestamp, outside every
  // dispatch's time (vkdelegate_runner --flush-l2 evicts the GPU's cache here). Null: none.
  void set_prologue(std::function<void(VkCommandBuffer)> prologue);
  // Commands recorded after the last dispatch, behind a barrier that makes the dispatches'
  // writes visible to transfers, and before the outputs' read back (the eager device copies
  // the outputs into its tensors' buffers here). Null: none.
  void set_epilogue(std::function<void(VkCommandBuffer)> epilogue);
  // Records this graph's dispatches into a command buffer the caller submits (the eager device
  // queues several ops, or several runs of one graph, in one): `before` (copies into the inputs'
  // storage), the dispatches, `after` (copies out of the outputs'), between barriers; at the
  // sizes set, without the inputs' staging or the outputs' read back. check_faults() once the
  // command buffer has finished.
  void record_into(VkCommandBuffer cmd, const std::function<void(VkCommandBuffer)>& before,
                   const std::function<void(VkCommandBuffer)>& after);
  // record_into without the copies (the eager device): graph inputs and outputs read and written
  // in place in other buffers, bound instead of their own storage, in descriptor sets from
  // allocate_set (which the caller resets once the command buffer has finished). bindable first.
  struct ExternalTensor {
    int value;  // an input_id or output_id
    VkBuffer buffer;
    VkDeviceSize offset;
  };
  // Whether every input and output can be bound in other buffers, at the given byte offsets of
  // buffers of the given sizes (inputs first, then outputs): no other value shares its storage (a
  // view, a planned alias), no dispatch windows it or writes an input, each output is written by
  // a dispatch, and the offsets are aligned as the device wants.
  bool bindable(const std::vector<std::pair<VkDeviceSize, VkDeviceSize>>& offset_and_size) const;
  void record_bound(VkCommandBuffer cmd, const std::vector<ExternalTensor>& external,
                    const std::function<VkDescriptorSet(VkDescriptorSetLayout)>& allocate_set);
  int input_id(size_t i) const { return input_ids_[i]; }
  int output_id(size_t i) const { return output_ids_[i]; }
  // Output sizes (and kernel parameters) for the input sizes set.
  void update_sizes();
  // Throws a GraphError naming the first node (in graph order) whose fault slot
  // the last execute set, and clears the slots.
  void check_faults();
  // The device buffer that holds input or output i on the GPU (in its storage type).
  VkBuffer input_buffer(size_t i) const { return storages_[input(i).storage].buffer->handle(); }
  VkBuffer output_buffer(size_t i) const { return storages_[output(i).storage].buffer->handle(); }
  const std::vector<NodeTiming>& timings() const { return timings_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  // The ops of the blob's chain, by chain index (Node::source): each op's name (the names the
  // AOT side gives ExecuTorch's debug handle map, so ETDump event names use these) and the
  // nodes it added, nodes()[first, end).
  struct BlobOp {
    std::string name;
    size_t first = 0, end = 0;
  };
  const std::vector<BlobOp>& blob_ops() const { return blob_ops_; }
  // The values the blob defines (the graph adds scratch and fault-slot values after them).
  size_t num_blob_values() const { return num_blob_values_; }
  // Copies tensor value id, at its current sizes, to dst (the graph dtype's bytes), as the
  // last execute left it. Only where the tensor has memory of its own: with the
  // DEBUG_VALUES setting every tensor has; without it, planned intermediates share.
  void read_tensor(int id, void* dst, size_t nbytes);
  MemoryReport memory_report() const;
  std::mutex& mutex() { return mutex_; }
  // Barrier placement: dispatches and compute barriers of the last recording.
  size_t num_dispatches() const { return num_dispatches_; }
  size_t num_barriers() const { return num_barriers_; }
  // Command buffer recordings and executes since load: a decode step whose sizes
  // did not change replays (records stays put).
  uint64_t num_records() const { return num_records_; }
  uint64_t num_executes() const { return num_executes_; }

 private:
  ComputeGraph(Context& ctx, const Settings& settings);
  // What binding b of a node sees: the whole storage, or its window.
  VkDescriptorBufferInfo tensor_binding(const Node& node, size_t b) const;
  void parse(const uint8_t* blob, size_t size);
  void check_dataflow(const void* fb_graph);
  void check_memory_plan(const void* fb_graph);
  // Host casts (settings: host_casts_kb): a float32 input whose one use is a cast to float16 is stored
  // as halves and the cast's output shares its storage (before build_ops: the cast then adds no
  // dispatch); a float32 output made by a cast from float16 is stored as halves and the cast's input
  // lives in its storage (after build_ops: the cast's dispatch is dropped). copy_input and copy_output
  // convert.
  // `uses`: how many times each value is an op's argument; `writer`: the op that writes it, or -1.
  void plan_input_host_casts(const void* fb_graph, const std::vector<int>& uses);
  void plan_output_host_casts(const void* fb_graph, const std::vector<int>& uses, const std::vector<int>& writer);
  void build_ops(const void* fb_graph);
  void allocate();
  void check_memory_fits(const std::vector<bool>& used) const;
  MemoryUsage storage_usage(const Storage& s) const;
  void upload_constants(const uint8_t* segment, size_t segment_size, const void* fb_graph);
  // State tensors without an initial constant, and add_zeroed_tensor's, start as zeros.
  void zero_state();
  void create_descriptors();
  // Writes node's bindings into set: its tensors' storage (or window), or an external buffer.
  void write_descriptors(const Node& node, VkDescriptorSet set, const std::vector<ExternalTensor>* external) const;
  void propagate_sizes();
  void record();
  // DEBUG_PERTURB_OP: after the dispatch (or batch) holding the op's last node, overwrite
  // the start of its first output. Null: no fault injection.
  void record_perturbation(VkCommandBuffer cmd);
  int perturb_value_ = -1;        // the output it overwrites, -1: none
  size_t perturb_last_node_ = 0;  // the op's last dispatching node
  void check_perturbation();      // at load: sets the two above
  void read_timings();
  // Barrier placement: dependency tracking between dispatches in record().
  struct BufferAccess {
    VkBuffer buffer;
    VkDeviceSize begin, end;
    bool write;
  };
  enum class BarrierMode { Levels, InOrder, All, None };
  BarrierMode barrier_mode() const;
  void node_accesses(const Node& node, std::vector<BufferAccess>& out) const;
  // Dispatch nodes in batches; a compute barrier goes between batches.
  std::vector<std::vector<const Node*>> dispatch_batches(BarrierMode mode) const;
  void dispatch(VkCommandBuffer cmd, const Node& node);
  // The dispatches in dependency batches, a compute barrier between batches (record()).
  void record_batches(VkCommandBuffer cmd);
  size_t num_dispatches_ = 0;
  size_t num_barriers_ = 0;
  uint64_t num_records_ = 0;
  uint64_t num_executes_ = 0;
  // During record_bound: the external tensors and where their descriptor sets come from.
  const std::vector<ExternalTensor>* external_ = nullptr;
  const std::function<VkDescriptorSet(VkDescriptorSetLayout)>* allocate_set_ = nullptr;

  Context& ctx_;
  const Settings settings_;
  StorageType int64_storage_ = StorageType::I32;
  std::vector<Value> values_;
  std::vector<int> input_ids_;
  std::vector<int> output_ids_;
  std::vector<Node> nodes_;
  std::vector<BlobOp> blob_ops_;  // blob_ops()
  size_t num_blob_values_ = 0;
  std::vector<Storage> storages_;
  std::unique_ptr<Buffer> params_buffer_;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  std::unique_ptr<CommandStream> stream_;
  VkQueryPool query_pool_ = VK_NULL_HANDLE;
  bool profiling_ = false;
  std::function<void(VkCommandBuffer)> prologue_;
  std::function<void(VkCommandBuffer)> epilogue_;
  bool dirty_sizes_ = false;
  bool recorded_ = false;
  std::vector<NodeTiming> timings_;
  std::string current_op_;
  // Current values of SymInt[] arguments, by value id (stable references).
  std::unordered_map<int, IntList> symint_lists_;
  size_t num_mem_objs_ = 0;
  int scratch_storage_ = -1;  // add_scratch_tensor's storage, once asked for
  // add_fault_slot's: one host-visible storage, a slot per checking node in
  // graph order, each fault_slot_stride_ bytes (a binding offset must be aligned).
  int fault_storage_ = -1;
  struct FaultSlot {
    int value;  // the slot's tensor value
    int node;   // the node that binds it (-1 until add_node)
  };
  std::vector<FaultSlot> fault_slots_;
  static constexpr int kFaultSlotWords = 6;  // glsl/fault.glslh's fault_slot
  VkDeviceSize fault_slot_stride_ = 32;
  std::mutex mutex_;
};

} // namespace vkd
