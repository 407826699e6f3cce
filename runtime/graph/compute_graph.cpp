#include "compute_graph.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <variant>

#include "../ops/op_registry.h"
#include "blob.h"
#include "schema_generated.h"

namespace vkd {

namespace fbs = ::vkdelegate::fb;

void Node::set_groups_1d(int64_t n, uint32_t local_x) {
  const int64_t wg = (n + local_x - 1) / local_x;
  const int64_t x = std::min<int64_t>(wg, 65535);
  const int64_t y = x == 0 ? 0 : (wg + x - 1) / x;
  groups = {static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1};
}

ComputeGraph::ComputeGraph(Context& ctx, const Settings& settings) : ctx_(ctx), settings_(settings) {
  const std::string& int64 = settings_.int64_storage;
  if (int64 == "64" && !ctx_.info().shader_int64) {
    throw GraphError("VKDELEGATE_INT64_STORAGE=64, but device '" + ctx_.info().name + "' lacks shaderInt64");
  }
  int64_storage_ = int64 == "32" || !ctx_.info().shader_int64 ? StorageType::I32 : StorageType::I64;
}

ComputeGraph::~ComputeGraph() {
  if (query_pool_) vkDestroyQueryPool(ctx_.device(), query_pool_, nullptr);
  if (descriptor_pool_) vkDestroyDescriptorPool(ctx_.device(), descriptor_pool_, nullptr);
}

std::unique_ptr<ComputeGraph> ComputeGraph::load(const uint8_t* blob, size_t size) {
  return load(blob, size, graph_defaults());
}

std::unique_ptr<ComputeGraph> ComputeGraph::load(const uint8_t* blob, size_t size, const Settings& settings) {
  Context* ctx = Context::get();
  if (!ctx) {
    throw GraphError("no Vulkan device is available: " + Context::unavailable_reason());
  }
  std::unique_ptr<ComputeGraph> g(new ComputeGraph(*ctx, settings));
  g->parse(blob, size);
  return g;
}

void ComputeGraph::fail(const std::string& msg) const {
  throw GraphError(current_op_.empty() ? msg : current_op_ + ": " + msg);
}

// ---------------------------------------------------------------- values

Value& ComputeGraph::value(int id) {
  if (id < 0 || static_cast<size_t>(id) >= values_.size()) {
    fail("value id " + std::to_string(id) + " is out of range");
  }
  return values_[id];
}

namespace {
template <typename T>
T& expect(ComputeGraph& g, Value& v, int id, const char* what) {
  if (!std::holds_alternative<T>(v)) {
    g.fail("argument " + std::to_string(id) + " should be " + what + ", not " +
           value_kind(v));
  }
  return std::get<T>(v);
}
}  // namespace

Tensor& ComputeGraph::tensor(int id) { return expect<Tensor>(*this, value(id), id, "a tensor"); }
bool ComputeGraph::is_null(int id) { return std::holds_alternative<Null>(value(id)); }
int64_t ComputeGraph::get_int(int id) {
  Value& v = value(id);
  if (auto* s = std::get_if<SymInt>(&v)) return s->value;
  return expect<int64_t>(*this, v, id, "an int");
}
SymInt& ComputeGraph::symint(int id) { return expect<SymInt>(*this, value(id), id, "a SymInt"); }
bool ComputeGraph::get_bool(int id) { return expect<bool>(*this, value(id), id, "a bool"); }
const std::string& ComputeGraph::get_string(int id) {
  return expect<std::string>(*this, value(id), id, "a string");
}
const IntList& ComputeGraph::get_int_list(int id) {
  Value& v = value(id);
  if (const auto* list = std::get_if<ValueList>(&v)) {
    IntList& current = symint_lists_[id];
    current.clear();
    for (int item : list->ids) {
      const Value& e = value(item);
      if (const auto* s = std::get_if<SymInt>(&e)) {
        current.push_back(s->value);
      } else if (const auto* i = std::get_if<int64_t>(&e)) {
        current.push_back(*i);
      } else {
        fail("argument " + std::to_string(id) + " should be an int list, but has a " +
             value_kind(e) + " entry");
      }
    }
    return current;
  }
  return expect<IntList>(*this, v, id, "an int list");
}
const ValueList& ComputeGraph::get_value_list(int id) {
  return expect<ValueList>(*this, value(id), id, "a list of values");
}
double ComputeGraph::get_double(int id) {
  Value& v = value(id);
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (auto* s = std::get_if<SymInt>(&v)) return static_cast<double>(s->value);
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  return expect<double>(*this, v, id, "a number");
}

// ---------------------------------------------------------------- parsing

namespace {
// A scalar value's field (optional in the schema, always written): absent means the
// table was corrupted, for instance pointed at another table's vtable.
template <typename T>
T present(const flatbuffers::Optional<T>& field, const std::string& where) {
  if (!field.has_value()) throw GraphError(where + ": scalar value without its field (corrupted)");
  return *field;
}

bool is_cast_op(const std::string& name) {
  return name == "aten._to_copy.default" || name == "dim_order_ops._to_dim_order_copy.default";
}
// How many times each value is an argument of an op of the chain (list items counted), and the op that
// writes each (its last argument), or -1.
void count_uses(const fbs::VkGraph* graph, const std::vector<Value>& values, std::vector<int>& uses,
                std::vector<int>& writer) {
  uses.assign(values.size(), 0);
  writer.assign(values.size(), -1);
  const auto* chain = graph->chain();
  for (uint32_t i = 0; chain && i < chain->size(); ++i) {
    const auto* args = chain->Get(i)->args();
    if (!args || args->size() == 0) continue;
    for (uint32_t a = 0; a < args->size(); ++a) {
      const int id = args->Get(a);  // in range: check_dataflow
      if (const auto* list = std::get_if<ValueList>(&values[id])) {
        for (int item : list->ids) ++uses[item];
      } else {
        ++uses[id];
      }
    }
    writer[args->Get(args->size() - 1)] = static_cast<int>(i);
  }
}
}  // namespace

void ComputeGraph::parse(const uint8_t* blob, size_t size) {
  const BlobView view = parse_blob(blob, size);  // header checks + flatbuffer verifier
  const fbs::VkGraph* graph = fbs::GetVkGraph(view.flatbuffer);
  if (graph->version() != kBlobVersion) {
    throw GraphError("graph version " + std::to_string(graph->version()) +
                     " differs from the blob header's " + std::to_string(kBlobVersion) + " (corrupted)");
  }
  const auto* fb_values = graph->values();
  const auto* fb_constants = graph->constants();
  const size_t num_constants = fb_constants ? fb_constants->size() : 0;
  if (!fb_values) throw GraphError("graph has no values");
  const size_t n = fb_values->size();
  auto check_id = [&](int id, const char* what) {
    if (id < 0 || static_cast<size_t>(id) >= n) {
      throw GraphError(std::string(what) + " refers to value " + std::to_string(id) +
                       ", but the graph has " + std::to_string(n) + " values");
    }
  };

  // Memory planning: one storage per shared object, first; other tensors get their own.
  if (graph->num_mem_objs() < 0 || static_cast<size_t>(graph->num_mem_objs()) > n) {
    throw GraphError("num_mem_objs " + std::to_string(graph->num_mem_objs()) +
                     " is out of range for a graph of " + std::to_string(n) + " values");
  }
  num_mem_objs_ = static_cast<size_t>(graph->num_mem_objs());
  storages_.resize(num_mem_objs_);
  for (Storage& s : storages_) s.is_shared = true;

  values_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const fbs::ValueEntry* e = fb_values->Get(static_cast<uint32_t>(i));
    const std::string where = "value " + std::to_string(i);
    // The verifier accepts a union whose type is set and whose table is absent;
    // every value_as_X() below is then null.
    if (!e->value() && e->value_type() != fbs::Value_Null) {
      throw GraphError(where + ": value of type " + std::to_string(static_cast<int>(e->value_type())) +
                       " has no table (corrupted)");
    }
    switch (e->value_type()) {
      case fbs::Value_Tensor: {
        const fbs::Tensor* t = e->value_as_Tensor();
        Tensor out;
        const int dt = static_cast<int>(t->dtype());
        if (dt < 0 || dt >= kNumDTypes) throw GraphError(where + ": unknown dtype " + std::to_string(dt));
        out.dtype = static_cast<DType>(dt);
        out.storage_type = storage_type_of(out.dtype);
        if (out.dtype == DType::Float16 &&
            !(ctx_.info().storage_16bit && ctx_.info().shader_float16)) {
          throw GraphError(where + ": the graph has float16 tensors, but device '" +
                           ctx_.info().name + "' lacks " +
                           (ctx_.info().storage_16bit ? "shaderFloat16"
                                                      : "storageBuffer16BitAccess") +
                           (ctx_.info().profile.empty() ? ""
                                                        : " (as VKDELEGATE_DEVICE_PROFILE=" + ctx_.info().profile +
                                                              " has it)") +
                           " (lower the model in float32, without force_fp16)");
        }
        if (!t->sizes()) throw GraphError(where + ": tensor without sizes");
        if (t->sizes()->size() > static_cast<uint32_t>(kMaxRank)) {
          throw GraphError(where + ": rank " + std::to_string(t->sizes()->size()) +
                           " is above the maximum of " + std::to_string(kMaxRank));
        }
        int64_t numel = 1;
        for (int64_t s : *t->sizes()) {
          // A dim fits int32 (the shaders index with it), the whole tensor 2^40 elements.
          if (s < 0 || s > INT32_MAX || numel > (int64_t{1} << 40) / std::max<int64_t>(s, 1)) {
            throw GraphError(where + ": invalid tensor size " + std::to_string(s));
          }
          numel *= s;
          out.max_sizes.push_back(s);
        }
        out.sizes = out.max_sizes;
        if (const auto* min_sizes = t->min_sizes(); min_sizes && min_sizes->size() > 0) {
          if (min_sizes->size() != t->sizes()->size()) {
            throw GraphError(where + ": min_sizes has rank " + std::to_string(min_sizes->size()) +
                             ", sizes " + std::to_string(t->sizes()->size()));
          }
          for (uint32_t d = 0; d < min_sizes->size(); ++d) {
            const int64_t low = min_sizes->Get(d);
            if (low < 0 || low > out.max_sizes[d]) {
              throw GraphError(where + ": min size " + std::to_string(low) + " of dim " +
                               std::to_string(d) + " is not within [0, " +
                               std::to_string(out.max_sizes[d]) + "]");
            }
            out.min_sizes.push_back(low);
          }
        }
        out.constant_id = t->constant_id();
        if (out.constant_id < -1 || out.constant_id >= static_cast<int>(num_constants)) {
          throw GraphError(where + ": constant id " + std::to_string(out.constant_id) +
                           " out of range");
        }
        out.mem_obj_id = t->mem_obj_id();
        if (out.mem_obj_id < -1 || out.mem_obj_id >= static_cast<int>(num_mem_objs_)) {
          throw GraphError(where + ": mem_obj_id " + std::to_string(out.mem_obj_id) +
                           " is out of range (the plan has " + std::to_string(num_mem_objs_) +
                           " memory objects)");
        }
        if (out.mem_obj_id >= 0 && out.constant_id >= 0) {
          throw GraphError(where + ": a constant cannot be in a shared memory object");
        }
        out.is_state = t->state();
        if (out.is_state && out.mem_obj_id >= 0) {
          throw GraphError(where + ": a state tensor cannot be in a shared memory object");
        }
        // DEBUG_VALUES: planned tensors too get storage of their own, so that each keeps its
        // contents after the execute (the plan is still checked, check_memory_plan).
        if (out.mem_obj_id >= 0 && !settings_.debug_values) {
          out.storage = out.mem_obj_id;
        } else {
          out.storage = static_cast<int>(storages_.size());
          storages_.emplace_back();
          storages_.back().is_constant = out.constant_id >= 0 && !out.is_state;
          storages_.back().is_state = out.is_state;
        }
        values_.emplace_back(std::move(out));
        break;
      }
      case fbs::Value_Int: values_.emplace_back(int64_t{present(e->value_as_Int()->value(), where)}); break;
      case fbs::Value_Double: values_.emplace_back(present(e->value_as_Double()->value(), where)); break;
      case fbs::Value_Bool: values_.emplace_back(present(e->value_as_Bool()->value(), where)); break;
      case fbs::Value_Null: values_.emplace_back(Null{}); break;
      case fbs::Value_SymInt: values_.emplace_back(SymInt{present(e->value_as_SymInt()->value(), where)}); break;
      case fbs::Value_String: {
        const auto* s = e->value_as_String()->value();
        if (!s) throw GraphError(where + ": string value without its text");
        values_.emplace_back(s->str());
        break;
      }
      case fbs::Value_IntList: {
        IntList l;
        if (const auto* items = e->value_as_IntList()->items()) l.assign(items->begin(), items->end());
        values_.emplace_back(std::move(l));
        break;
      }
      case fbs::Value_DoubleList: {
        DoubleList l;
        if (const auto* items = e->value_as_DoubleList()->items()) l.assign(items->begin(), items->end());
        values_.emplace_back(std::move(l));
        break;
      }
      case fbs::Value_BoolList: {
        BoolList l;
        if (const auto* items = e->value_as_BoolList()->items()) {
          for (auto b : *items) l.push_back(b != 0);
        }
        values_.emplace_back(std::move(l));
        break;
      }
      case fbs::Value_ValueList: {
        ValueList l;
        if (const auto* items = e->value_as_ValueList()->items()) {
          for (int id : *items) {
            check_id(id, where.c_str());
            l.ids.push_back(id);
          }
        }
        values_.emplace_back(std::move(l));
        break;
      }
      default:
        throw GraphError(where + ": unknown value type " +
                         std::to_string(static_cast<int>(e->value_type())));
    }
  }

  num_blob_values_ = values_.size();
  auto read_io = [&](const flatbuffers::Vector<int32_t>* ids, std::vector<int>& out,
                     const char* what) {
    if (!ids) return;
    for (int id : *ids) {
      check_id(id, what);
      if (!std::holds_alternative<Tensor>(values_[id])) {
        throw GraphError(std::string(what) + " " + std::to_string(id) + " is not a tensor");
      }
      if (std::get<Tensor>(values_[id]).is_state) {
        throw GraphError(std::string(what) + " " + std::to_string(id) +
                         " is a state tensor, which the graph keeps to itself");
      }
      if (std::get<Tensor>(values_[id]).mem_obj_id >= 0) {
        throw GraphError(std::string(what) + " " + std::to_string(id) +
                         " is in a shared memory object; inputs and outputs must have their own");
      }
      out.push_back(id);
    }
  };
  read_io(graph->input_ids(), input_ids_, "graph input");
  read_io(graph->output_ids(), output_ids_, "graph output");
  if (output_ids_.empty()) throw GraphError("graph has no outputs (corrupted)");
  for (int id : input_ids_) {
    Tensor& t = std::get<Tensor>(values_[id]);
    if (t.constant_id >= 0) throw GraphError("graph input " + std::to_string(id) + " is a constant");
    storages_[t.storage].is_input = true;
  }

  // Constants lie in the segment as the writer puts them (serialization/blob.py): in
  // order, each at the first aligned offset after the one before, the last ending the
  // segment. So an offset or size that a corruption changed cannot point elsewhere.
  uint64_t segment_end = 0;
  for (uint32_t c = 0; c < num_constants; ++c) {
    const fbs::ConstantRef* ref = fb_constants->Get(c);
    const uint64_t offset = (segment_end + kConstantAlignment - 1) / kConstantAlignment * kConstantAlignment;
    if (ref->offset() != offset || offset > view.constants_size ||
        ref->nbytes() > view.constants_size - offset) {
      throw GraphError("constant " + std::to_string(c) + " at " + std::to_string(ref->offset()) + "+" +
                       std::to_string(ref->nbytes()) + " is not where the constant segment of " +
                       std::to_string(view.constants_size) + " bytes puts it (" + std::to_string(offset) + ")");
    }
    segment_end = offset + ref->nbytes();
  }
  if (segment_end != view.constants_size) {
    throw GraphError("the constants end at " + std::to_string(segment_end) + ", the constant segment at " +
                     std::to_string(view.constants_size));
  }
  // Each constant belongs to one tensor (as the writer makes them) and matches its size in bytes.
  std::vector<bool> constant_used(num_constants, false);
  for (auto& v : values_) {
    auto* t = std::get_if<Tensor>(&v);
    if (!t || t->constant_id < 0) continue;
    if (constant_used[t->constant_id]) {
      throw GraphError("constant " + std::to_string(t->constant_id) + " belongs to two tensors");
    }
    constant_used[t->constant_id] = true;
    const fbs::ConstantRef* ref = fb_constants->Get(static_cast<uint32_t>(t->constant_id));
    if (ref->nbytes() != t->max_nbytes()) {
      throw GraphError("constant " + std::to_string(t->constant_id) + " has " +
                       std::to_string(ref->nbytes()) + " bytes but its tensor " +
                       sizes_str(t->max_sizes) + " " + dtype_name(t->dtype) + " needs " +
                       std::to_string(t->max_nbytes()));
    }
  }

  if (std::find(constant_used.begin(), constant_used.end(), false) != constant_used.end()) {
    throw GraphError("a constant belongs to no tensor");
  }
  check_dataflow(graph);
  std::vector<int> uses, writer;  // of each value (count_uses): the host casts' plans read them
  count_uses(graph, values_, uses, writer);
  plan_input_host_casts(graph, uses);
  build_ops(graph);
  plan_output_host_casts(graph, uses, writer);
  check_memory_plan(graph);
  check_perturbation();
  for (int id : output_ids_) {
    storages_[std::get<Tensor>(values_[id]).storage].is_output = true;
  }
  allocate();
  upload_constants(view.constants, view.constants_size, graph);
  zero_state();
  create_descriptors();
  stream_ = std::make_unique<CommandStream>(ctx_);
}

// As serialization/blob.py _validate_dataflow: each op writes new values (Tensor,
// SymInt or Null) and reads only tensors and SymInts written before it (graph
// inputs, constants, earlier outputs); graph outputs are written. So no value is
// used before it exists, none has two writers, and the chain has no cycle. Every
// other value (scalar, list, null) is the argument of one op, once.
void ComputeGraph::check_dataflow(const void* fb_graph) {
  const auto* graph = static_cast<const fbs::VkGraph*>(fb_graph);
  std::vector<bool> written(values_.size(), false);
  for (int id : input_ids_) written[id] = true;
  for (size_t id = 0; id < values_.size(); ++id) {
    const auto* t = std::get_if<Tensor>(&values_[id]);
    if (t && (t->constant_id >= 0 || t->is_state)) written[id] = true;
  }
  auto is_data = [this](int id) {
    return std::holds_alternative<Tensor>(values_[id]) || std::holds_alternative<SymInt>(values_[id]);
  };
  // Scalars, lists and nulls are made for the one argument that holds them.
  std::vector<bool> used(values_.size(), false);
  auto use_once = [&](int id, const std::string& where) {
    if (is_data(id)) return;
    if (used[id]) {
      throw GraphError(where + " takes value " + std::to_string(id) + ", an argument of another op or list");
    }
    used[id] = true;
  };
  auto check_read = [&](int id, const std::string& where) {
    use_once(id, where);
    std::vector<int> ids{id};
    if (const auto* list = std::get_if<ValueList>(&values_[id])) {
      ids = list->ids;
      for (int item : ids) use_once(item, where);
    }
    for (int item : ids) {
      if (is_data(item) && !written[item]) {
        throw GraphError(where + " reads value " + std::to_string(item) + " before any op writes it");
      }
    }
  };
  const auto* chain = graph->chain();
  const uint32_t num_ops = chain ? chain->size() : 0;
  for (uint32_t i = 0; i < num_ops; ++i) {
    const fbs::OpCall* call = chain->Get(i);
    const std::string where =
        "op #" + std::to_string(i) + " (" + (call->name() ? call->name()->str() : std::string()) + ")";
    const uint32_t num_args = call->args() ? call->args()->size() : 0;
    if (call->num_outputs() < 1 || static_cast<uint32_t>(call->num_outputs()) > num_args) {
      throw GraphError(where + " has " + std::to_string(call->num_outputs()) + " outputs among " +
                       std::to_string(num_args) + " arguments");
    }
    const uint32_t num_inputs = num_args - static_cast<uint32_t>(call->num_outputs());
    for (uint32_t a = 0; a < num_args; ++a) {
      const int id = call->args()->Get(a);
      if (id < 0 || static_cast<size_t>(id) >= values_.size()) {
        throw GraphError(where + " refers to value " + std::to_string(id) + ", but the graph has " +
                         std::to_string(values_.size()) + " values");
      }
      if (a < num_inputs) {
        check_read(id, where);
        continue;
      }
      if (!is_data(id) && !std::holds_alternative<Null>(values_[id])) {
        throw GraphError(where + " outputs value " + std::to_string(id) + ", a " + value_kind(values_[id]));
      }
      use_once(id, where);
      if (written[id]) {
        throw GraphError(where + " writes value " + std::to_string(id) + ", which is already written");
      }
      written[id] = true;
    }
  }
  for (int id : output_ids_) {
    if (!written[id]) throw GraphError("graph output " + std::to_string(id) + " is never written");
  }
}

// As backends/memory_planning.py plans it: the tensors of one shared memory object
// are live at disjoint times, a view together with the tensor it views. A plan that
// corruption changed would let one tensor overwrite another that is still to be read.
// Lifetimes are op index ranges [first use, last use], the writing op included.
void ComputeGraph::check_memory_plan(const void* fb_graph) {
  if (num_mem_objs_ == 0) return;
  const auto* chain = static_cast<const fbs::VkGraph*>(fb_graph)->chain();
  const size_t num_values = values_.size();
  std::vector<int64_t> first(num_values, -1), last(num_values, -1);
  auto use = [&](int id, int64_t op) {
    if (first[id] < 0) first[id] = op;
    last[id] = op;
  };
  for (uint32_t i = 0; chain && i < chain->size(); ++i) {
    const auto* args = chain->Get(i)->args();
    for (uint32_t a = 0; args && a < args->size(); ++a) {
      const int id = args->Get(a);  // in range: check_dataflow
      if (const auto* list = std::get_if<ValueList>(&values_[id])) {
        for (int item : list->ids) use(item, i);
      } else {
        use(id, i);
      }
    }
  }
  // The lifetime of each alias group (a tensor and the views of it), at its root.
  auto root_of = [this](int id) {
    for (size_t steps = 0; steps < values_.size(); ++steps) {
      const int source = std::get<Tensor>(values_[id]).view_of;
      if (source < 0) break;
      id = source;
    }
    return id;
  };
  std::vector<int64_t> group_first(num_values, -1), group_last(num_values, -1);
  for (size_t id = 0; id < num_values; ++id) {
    const auto* t = std::get_if<Tensor>(&values_[id]);
    if (!t || t->mem_obj_id < 0 || first[id] < 0) continue;
    const int root = root_of(static_cast<int>(id));
    group_first[root] = group_first[root] < 0 ? first[id] : std::min(group_first[root], first[id]);
    group_last[root] = std::max(group_last[root], last[id]);
  }
  std::vector<std::vector<std::pair<int64_t, int64_t>>> lifetimes(num_mem_objs_);
  for (size_t id = 0; id < num_values; ++id) {
    if (group_first[id] < 0) continue;
    const Tensor& t = std::get<Tensor>(values_[id]);
    if (t.mem_obj_id < 0) continue;  // a view of an unshared tensor: checked by add_view_node
    lifetimes[t.mem_obj_id].emplace_back(group_first[id], group_last[id]);
  }
  for (size_t m = 0; m < num_mem_objs_; ++m) {
    auto& spans = lifetimes[m];
    std::sort(spans.begin(), spans.end());
    for (size_t k = 1; k < spans.size(); ++k) {
      if (spans[k].first <= spans[k - 1].second) {
        throw GraphError("memory object " + std::to_string(m) + " holds tensors live at once (ops " +
                         std::to_string(spans[k - 1].first) + "-" + std::to_string(spans[k - 1].second) +
                         " and " + std::to_string(spans[k].first) + "-" + std::to_string(spans[k].second) +
                         "): the memory plan is corrupted");
      }
    }
  }
}


void ComputeGraph::plan_input_host_casts(const void* fb_graph, const std::vector<int>& uses) {
  const auto* graph = static_cast<const fbs::VkGraph*>(fb_graph);
  const VkDeviceSize limit = static_cast<VkDeviceSize>(settings_.host_casts_kb) * 1024;
  const auto* chain = graph->chain();
  if (limit == 0 || !chain) return;
  const auto is_io = [this](int id) {
    return std::count(input_ids_.begin(), input_ids_.end(), id) + std::count(output_ids_.begin(), output_ids_.end(), id);
  };
  for (uint32_t i = 0; i < chain->size(); ++i) {
    const fbs::OpCall* call = chain->Get(i);
    const auto* args = call->args();
    if (!call->name() || !is_cast_op(call->name()->str()) || !args || args->size() < 2) continue;
    const int in = args->Get(0), out = args->Get(args->size() - 1);
    auto* x = std::get_if<Tensor>(&values_[in]);
    auto* y = std::get_if<Tensor>(&values_[out]);
    if (!x || !y || in == out || x->dtype != DType::Float32 || y->dtype != DType::Float16) continue;
    if (std::count(input_ids_.begin(), input_ids_.end(), in) != 1 || is_io(in) != 1 || uses[in] != 1) continue;
    if (is_io(out) || y->constant_id >= 0 || y->is_state || x->is_state || x->max_nbytes() > limit) continue;
    x->storage_type = StorageType::F16;
    y->storage = x->storage;
    y->mem_obj_id = -1;
  }
}

void ComputeGraph::plan_output_host_casts(const void* fb_graph, const std::vector<int>& uses,
                                          const std::vector<int>& writer) {
  const auto* graph = static_cast<const fbs::VkGraph*>(fb_graph);
  const VkDeviceSize limit = static_cast<VkDeviceSize>(settings_.host_casts_kb) * 1024;
  if (limit == 0) return;
  const auto* chain = graph->chain();
  for (int out : output_ids_) {
    Tensor& z = std::get<Tensor>(values_[out]);
    const int op = writer[out];
    if (op < 0 || z.dtype != DType::Float32 || uses[out] != 1 || z.max_nbytes() > limit ||
        std::count(output_ids_.begin(), output_ids_.end(), out) != 1) {
      continue;
    }
    const fbs::OpCall* call = chain->Get(static_cast<uint32_t>(op));
    if (!call->name() || !is_cast_op(call->name()->str())) continue;
    const int in = call->args()->Get(0);
    auto* w = std::get_if<Tensor>(&values_[in]);
    // (w in an input's storage: an input host cast's output.)
    if (!w || w->dtype != DType::Float16 || w->is_view || w->is_state || w->constant_id >= 0 ||
        storages_[w->storage].is_input || std::count(output_ids_.begin(), output_ids_.end(), in)) {
      continue;
    }
    // No view of w (they took its storage when built), and the cast is the one dispatch of its op.
    bool viewed = false;
    for (const Value& v : values_) {
      const auto* t = std::get_if<Tensor>(&v);
      viewed = viewed || (t && t->is_view && t->view_of == in);
    }
    const BlobOp& ops = blob_ops_.at(static_cast<size_t>(op));
    std::vector<Node*> dispatches;
    for (size_t n = ops.first; n < ops.end; ++n) {
      if (nodes_[n].pipeline) dispatches.push_back(&nodes_[n]);
    }
    if (viewed || dispatches.size() != 1 || dispatches[0]->tensors != std::vector<int>{out, in}) continue;
    dispatches[0]->pipeline = nullptr;  // its update still sizes the output
    z.storage_type = StorageType::F16;
    w->storage = z.storage;
    w->mem_obj_id = -1;
  }
}

void ComputeGraph::build_ops(const void* fb_graph) {
  const auto* graph = static_cast<const fbs::VkGraph*>(fb_graph);
  const auto* chain = graph->chain();
  if (!chain) return;
  for (uint32_t i = 0; i < chain->size(); ++i) {
    const fbs::OpCall* call = chain->Get(i);
    const std::string name = call->name() ? call->name()->str() : std::string();
    current_op_ = "op #" + std::to_string(i) + " (" + name + ")";
    blob_ops_.push_back({name, nodes_.size(), nodes_.size()});
    const OpBuildFn* fn = find_op(name);
    if (!fn) fail("this runtime has no kernel for '" + name + "'");
    std::vector<int> args;
    if (call->args()) {
      for (int id : *call->args()) {
        if (id < 0 || static_cast<size_t>(id) >= values_.size()) {
          fail("argument refers to value " + std::to_string(id) + " out of range");
        }
        args.push_back(id);
      }
    }
    try {
      (*fn)(*this, args);
    } catch (const std::out_of_range& e) {
      // Build functions take their arguments with args.at(): a call with too few is corrupted.
      fail("an argument is missing (" + std::to_string(args.size()) + " given): " + e.what());
    } catch (const std::bad_variant_access&) {
      fail("an argument has the wrong kind of value");
    } catch (const GraphError& e) {
      // Helpers outside the graph (checked_mul) do not know the op: name it.
      const std::string message = e.what();
      if (message.rfind(current_op_, 0) == 0) throw;
      fail(message);
    }
    blob_ops_.back().end = nodes_.size();
    if (static_cast<int64_t>(i) == settings_.debug_perturb_op) {
      perturb_value_ = args.at(args.size() - static_cast<size_t>(call->num_outputs()));  // its first output
    }
  }
  current_op_.clear();
}

void ComputeGraph::check_perturbation() {
  const int64_t op = settings_.debug_perturb_op;
  if (op < 0) return;
  if (!settings_.debug_values) {
    throw GraphError("VKDELEGATE_DEBUG_PERTURB_OP (fault injection for the debugger) needs DEBUG_VALUES");
  }
  if (static_cast<size_t>(op) >= blob_ops_.size()) {
    throw GraphError("VKDELEGATE_DEBUG_PERTURB_OP=" + std::to_string(op) + ": the chain has " +
                     std::to_string(blob_ops_.size()) + " ops");
  }
  const auto& [name, first, end] = blob_ops_[static_cast<size_t>(op)];
  bool dispatches = false;
  for (size_t i = first; i < end; ++i) {
    if (!nodes_[i].pipeline) continue;
    perturb_last_node_ = i;
    dispatches = true;
  }
  if (!dispatches) {
    throw GraphError("VKDELEGATE_DEBUG_PERTURB_OP=" + std::to_string(op) + ": op " + std::to_string(op) +
                     " runs no kernel (a view or a SymInt op); choose an op that dispatches");
  }
  if (perturb_value_ < 0 || !std::holds_alternative<Tensor>(values_[perturb_value_]) ||
      tensor(perturb_value_).max_storage_nbytes() < 4) {
    perturb_value_ = -1;
    throw GraphError("VKDELEGATE_DEBUG_PERTURB_OP=" + std::to_string(op) + ": its output has no 4 bytes to overwrite");
  }
}

// ---------------------------------------------------------------- nodes

namespace {
// A node's update may only change sizes within the tensor's upper bound.
void check_bounds(ComputeGraph& g, const Node& node) {
  for (int id : node.tensors) {
    const Tensor& t = g.tensor(id);
    bool ok = t.sizes.size() == t.max_sizes.size();
    for (size_t d = 0; ok && d < t.sizes.size(); ++d) ok = t.sizes[d] <= t.max_sizes[d];
    if (!ok) {
      throw GraphError(node.op + ": sizes " + sizes_str(t.sizes) + " of value " +
                       std::to_string(id) + " exceed its planned sizes " +
                       sizes_str(t.max_sizes));
    }
  }
}
}  // namespace

Node& ComputeGraph::add_node(const std::string& op, const std::string& shader,
                             LocalSize local, std::vector<int> tensors, UpdateFn update) {
  for (int id : tensors) tensor(id);  // type check
  nodes_.emplace_back();
  Node& node = nodes_.back();
  node.source = static_cast<int>(blob_ops_.size()) - 1;  // the op being built
  node.op = op;
  node.tensors = std::move(tensors);
  node.update = std::move(update);
  node.pipeline = &ctx_.pipelines().get(shader, static_cast<uint32_t>(node.tensors.size()), local);
  for (size_t b = 0; b < node.tensors.size(); ++b) {
    if (fault_storage_ < 0 || std::get<Tensor>(values_[node.tensors[b]]).storage != fault_storage_) continue;
    for (size_t k = 0; k < fault_slots_.size(); ++k) {
      if (fault_slots_[k].value != node.tensors[b]) continue;
      if (fault_slots_[k].node >= 0) fail("internal error: a fault slot bound by two nodes");
      fault_slots_[k].node = static_cast<int>(nodes_.size()) - 1;
      node.set_window(b, k * fault_slot_stride_, kFaultSlotWords * 4);
    }
  }
  node.update(*this, node);
  check_bounds(*this, node);
  return node;
}

void ComputeGraph::rebind_last_node(const std::string& shader, LocalSize local, std::vector<int> tensors,
                                    UpdateFn update) {
  if (nodes_.empty() || !nodes_.back().windows.empty()) fail("internal error: no last node to rebind");
  for (int id : tensors) tensor(id);  // type check
  Node& node = nodes_.back();
  node.tensors = std::move(tensors);
  node.update = std::move(update);
  node.pipeline = &ctx_.pipelines().get(shader, static_cast<uint32_t>(node.tensors.size()), local);
  node.update(*this, node);
  check_bounds(*this, node);
}

int ComputeGraph::add_scratch_tensor(DType dtype, const Sizes& max_sizes) {
  if (scratch_storage_ < 0) {
    scratch_storage_ = static_cast<int>(storages_.size());
    storages_.emplace_back();
  }
  Tensor t;
  t.dtype = dtype;
  t.storage_type = storage_type_of(dtype);
  t.sizes = t.max_sizes = max_sizes;
  t.storage = scratch_storage_;
  values_.emplace_back(std::move(t));
  return static_cast<int>(values_.size()) - 1;
}

int ComputeGraph::add_zeroed_tensor(DType dtype, const Sizes& sizes) {
  storages_.emplace_back();
  storages_.back().zeroed = true;  // zero_state() fills it
  Tensor t;
  t.dtype = dtype;
  t.storage_type = storage_type_of(dtype);
  t.sizes = t.max_sizes = sizes;
  t.storage = static_cast<int>(storages_.size()) - 1;
  values_.emplace_back(std::move(t));
  return static_cast<int>(values_.size()) - 1;
}

int ComputeGraph::add_fault_slot() {
  if (settings_.no_gpu_checks) return -1;
  if (fault_storage_ < 0) {
    fault_storage_ = static_cast<int>(storages_.size());
    storages_.emplace_back();
    // A binding's offset is a multiple of the alignment (a power of two).
    const VkDeviceSize align = std::max<VkDeviceSize>(ctx_.info().min_storage_offset_alignment, 16);
    fault_slot_stride_ = (kFaultSlotWords * 4 + align - 1) / align * align;
  }
  Tensor t;
  t.dtype = DType::Int32;
  t.storage_type = StorageType::I32;
  t.sizes = t.max_sizes = {kFaultSlotWords};
  t.storage = fault_storage_;
  values_.emplace_back(std::move(t));
  const int id = static_cast<int>(values_.size()) - 1;
  fault_slots_.push_back({id, -1});
  return id;
}

void ComputeGraph::alias_state(int out, int state) {
  Tensor& s = tensor(state);
  Tensor& o = tensor(out);
  if (!s.is_state) {
    fail("updates value " + std::to_string(state) + " in place, so that argument must be a state tensor (a "
         "mutable buffer the delegate owns, such as a KV cache)");
  }
  if (s.dtype != o.dtype) fail("the output's dtype differs from the state's");
  if (o.constant_id >= 0 || o.mem_obj_id >= 0 || o.is_state) {
    fail("the output of an in-place update must be a plain tensor outside the memory plan");
  }
  if (o.max_sizes != s.max_sizes) {
    fail("the output's sizes " + sizes_str(o.max_sizes) + " differ from the state's " + sizes_str(s.max_sizes));
  }
  for (const Node& n : nodes_) {
    for (int id : n.tensors) {
      if (id != state) continue;
      // Earlier readers of the state would see it after the update: the graph
      // must read the state only through the update's output.
      fail("state value " + std::to_string(state) + " is read by " + n.op + " before its update");
    }
  }
  for (const auto& v : values_) {
    if (const auto* t = std::get_if<Tensor>(&v); t && t->view_of == state && t->is_view) {
      fail("state value " + std::to_string(state) + " is updated twice");
    }
  }
  o.storage = s.storage;
  o.is_view = true;
  o.view_of = state;
}

Node& ComputeGraph::add_view_node(const std::string& op, int out, int in, UpdateFn update) {
  Tensor& o = tensor(out);
  Tensor& i = tensor(in);
  if (o.dtype != i.dtype) fail("a view cannot change the dtype");
  if (o.constant_id >= 0) fail("the output of a view cannot be a constant");
  if (o.mem_obj_id != i.mem_obj_id) {
    fail("the memory plan puts the view's output in memory object " +
         std::to_string(o.mem_obj_id) + " and its input in " + std::to_string(i.mem_obj_id) +
         ": the op's registry entry must set aliases_input=True");
  }
  o.storage = i.storage;
  o.is_view = true;
  o.view_of = in;
  nodes_.emplace_back();
  Node& node = nodes_.back();
  node.source = static_cast<int>(blob_ops_.size()) - 1;  // the op being built
  node.op = op;
  node.tensors = {out, in};
  node.update = std::move(update);
  node.update(*this, node);
  check_bounds(*this, node);
  return node;
}

Node& ComputeGraph::add_scalar_node(const std::string& op, UpdateFn update) {
  nodes_.emplace_back();
  Node& node = nodes_.back();
  node.source = static_cast<int>(blob_ops_.size()) - 1;  // the op being built
  node.op = op;
  node.update = std::move(update);
  node.update(*this, node);
  return node;
}

void ComputeGraph::propagate_sizes() {
  uint8_t* mapped = params_buffer_ ? params_buffer_->mapped() : nullptr;
  for (Node& node : nodes_) {
    node.update(*this, node);
    check_bounds(*this, node);
    if (node.pipeline && !node.params.empty()) {
      std::memcpy(mapped + node.params_offset, node.params.data(), node.params.size());
    }
  }
}

// ---------------------------------------------------------------- memory

void ComputeGraph::allocate() {
  for (const auto& v : values_) {
    if (const auto* t = std::get_if<Tensor>(&v)) {
      Storage& s = storages_[t->storage];
      s.nbytes = std::max<VkDeviceSize>(s.nbytes, t->max_storage_nbytes());
      s.is_constant = s.is_constant || (t->constant_id >= 0 && !t->is_state);
    }
  }
  if (fault_storage_ >= 0) {
    storages_[fault_storage_].nbytes = fault_slots_.size() * fault_slot_stride_;
  }
  // Shared objects are sized to their largest member above; check it anyway,
  // since a short buffer would be an out-of-bounds write on the device.
  for (const auto& v : values_) {
    if (const auto* t = std::get_if<Tensor>(&v)) {
      if (storages_[t->storage].nbytes < t->max_storage_nbytes()) {
        throw GraphError("internal error: a storage of " +
                         std::to_string(storages_[t->storage].nbytes) + " bytes holds a tensor of " +
                         std::to_string(t->max_storage_nbytes()));
      }
    }
  }
  // A storage may exceed one binding's maxStorageBufferRange; each binding of
  // it is checked when descriptors are written (ops bind windows of it).
  std::vector<bool> used(storages_.size(), false);
  for (const auto& v : values_) {
    if (const auto* t = std::get_if<Tensor>(&v)) used[t->storage] = true;
  }
  check_memory_fits(used);
  for (size_t i = 0; i < storages_.size(); ++i) {
    Storage& s = storages_[i];
    if (!used[i]) continue;
    if (static_cast<int>(i) == fault_storage_) {
      // The host reads it after each execute, so host-visible; the shaders
      // write it only when they fault.
      s.buffer = std::make_unique<Buffer>(ctx_, s.nbytes, MemoryUsage::Readback);
      std::memset(s.buffer->mapped(), 0, s.nbytes);
      continue;
    }
    s.buffer = std::make_unique<Buffer>(ctx_, s.nbytes, storage_usage(s));
    if ((s.is_input || s.is_output) && !s.buffer->mapped()) {
      s.staging = std::make_unique<Buffer>(
          ctx_, s.nbytes, s.is_input ? MemoryUsage::Upload : MemoryUsage::Readback,
          VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT);
    }
  }
}

// Where a storage's buffer lives. Small inputs and outputs on a device whose memory the
// host cannot map skip the staging copies: an execute of a small graph spends more on a
// copy, and the barriers around it, than on its kernels (io_direct_kb).
MemoryUsage ComputeGraph::storage_usage(const Storage& s) const {
  if (!(s.is_input || s.is_output) || s.is_state) return MemoryUsage::Device;
  if (ctx_.allocator().device_memory_mapped()) return MemoryUsage::Device;
  if (s.nbytes > static_cast<VkDeviceSize>(settings_.io_direct_kb) * 1024) return MemoryUsage::Device;
  return s.is_input ? MemoryUsage::Upload : MemoryUsage::Readback;
}

// Out of memory is an error at load, before any buffer is made: the bytes the
// program's buffers take in each memory heap (tensors, input and output staging,
// the constants' staging for their upload) against what the heap has left.
void ComputeGraph::check_memory_fits(const std::vector<bool>& used) const {
  Allocator& allocator = ctx_.allocator();
  const bool device_mapped = allocator.device_memory_mapped();
  const auto aligned = [](VkDeviceSize n) { return (std::max<VkDeviceSize>(n, 4) + 255) / 256 * 256; };
  std::map<uint32_t, VkDeviceSize> needed;  // heap -> bytes
  VkDeviceSize constant_staging = 0;
  for (size_t i = 0; i < storages_.size(); ++i) {
    const Storage& s = storages_[i];
    if (!used[i]) continue;
    const MemoryUsage where = storage_usage(s);
    needed[allocator.heap_of(allocator.memory_type(where))] += aligned(s.nbytes);
    if (device_mapped) continue;
    if ((s.is_input || s.is_output) && where == MemoryUsage::Device) {
      const MemoryUsage usage = s.is_input ? MemoryUsage::Upload : MemoryUsage::Readback;
      needed[allocator.heap_of(allocator.memory_type(usage))] += aligned(s.nbytes);
    }
    if (s.is_constant) constant_staging += (s.nbytes + 15) / 16 * 16;
  }
  if (constant_staging > 0) {
    needed[allocator.heap_of(allocator.memory_type(MemoryUsage::Upload))] += aligned(constant_staging);
  }
  for (const auto& [heap, bytes] : needed) {
    const VkDeviceSize available = allocator.available(heap);
    if (bytes > available) {
      throw OutOfMemoryError(
          "out of GPU memory: the program needs " + bytes_str(bytes) + " of memory heap " +
          std::to_string(heap) + " (its tensors, constants and staging buffers), " +
          bytes_str(available) + " available" +
          (process_settings().memory_limit_mb ? " (VKDELEGATE_MEMORY_LIMIT_MB=" +
                                                    std::to_string(*process_settings().memory_limit_mb) + ")"
                                              : std::string()));
    }
  }
}

void ComputeGraph::upload_constants(const uint8_t* segment, size_t segment_size,
                                    const void* fb_graph) {
  const auto* graph = static_cast<const fbs::VkGraph*>(fb_graph);
  (void)segment_size;  // offsets were checked against it in parse()
  struct Upload {
    Storage* storage;
    const Tensor* tensor;
    const uint8_t* src;
  };
  std::vector<Upload> uploads;
  VkDeviceSize staged = 0;
  for (const auto& v : values_) {
    const auto* t = std::get_if<Tensor>(&v);
    if (!t || t->constant_id < 0) continue;
    const fbs::ConstantRef* ref = graph->constants()->Get(static_cast<uint32_t>(t->constant_id));
    Storage& s = storages_[t->storage];
    const size_t n = static_cast<size_t>(numel_of(t->max_sizes));
    if (s.buffer->mapped()) {
      to_storage(t->dtype, t->storage_type, segment + ref->offset(), s.buffer->mapped(), n);
    } else {
      uploads.push_back({&s, t, segment + ref->offset()});
      staged += (t->max_storage_nbytes() + 15) / 16 * 16;
    }
  }
  if (uploads.empty()) return;
  Buffer staging(ctx_, staged, MemoryUsage::Upload, VK_BUFFER_USAGE_TRANSFER_SRC_BIT);
  CommandStream stream(ctx_);
  VkCommandBuffer cmd = stream.begin();
  VkDeviceSize offset = 0;
  for (const Upload& u : uploads) {
    const size_t nbytes = u.tensor->max_storage_nbytes();
    to_storage(u.tensor->dtype, u.tensor->storage_type, u.src, staging.mapped() + offset,
               static_cast<size_t>(numel_of(u.tensor->max_sizes)));
    if (nbytes > 0) {
      VkBufferCopy region{offset, 0, nbytes};
      vkCmdCopyBuffer(cmd, staging.handle(), u.storage->buffer->handle(), 1, &region);
    }
    offset += (nbytes + 15) / 16 * 16;
  }
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       0, 1, &barrier, 0, nullptr, 0, nullptr);
  stream.end();
  stream.submit_and_wait();
}

void ComputeGraph::zero_state() {
  std::vector<const Storage*> zeros;
  for (const auto& v : values_) {
    const auto* t = std::get_if<Tensor>(&v);
    if (t && t->is_state && t->constant_id < 0 && !t->is_view) zeros.push_back(&storages_[t->storage]);
  }
  for (const Storage& s : storages_) {
    if (s.zeroed && s.buffer) zeros.push_back(&s);
  }
  if (zeros.empty()) return;
  CommandStream stream(ctx_);
  VkCommandBuffer cmd = stream.begin();
  for (const Storage* s : zeros) vkCmdFillBuffer(cmd, s->buffer->handle(), 0, VK_WHOLE_SIZE, 0);
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       0, 1, &barrier, 0, nullptr, 0, nullptr);
  stream.end();
  stream.submit_and_wait();
}

void ComputeGraph::create_descriptors() {
  // Parameter blocks are uniform or storage buffers (Pipeline::params_type): aligned for both.
  const VkDeviceSize align = std::max<VkDeviceSize>(
      {ctx_.info().min_uniform_offset_alignment, ctx_.info().min_storage_offset_alignment, 16});
  VkDeviceSize total = 0;
  uint32_t sets = 0, storage_descriptors = 0, uniform_descriptors = 0;
  for (Node& node : nodes_) {
    if (!node.pipeline) continue;
    node.params.resize(std::max<size_t>((node.params.size() + 15) / 16 * 16, 16));
    node.params_offset = total;
    total += (node.params.size() + align - 1) / align * align;
    sets += 1;
    storage_descriptors += static_cast<uint32_t>(node.tensors.size());
    (node.pipeline->params_type == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER ? uniform_descriptors
                                                                    : storage_descriptors) += 1;
  }
  if (sets == 0) return;
  params_buffer_ = std::make_unique<Buffer>(
      ctx_, total, MemoryUsage::Upload,
      VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);

  VkDescriptorPoolSize sizes[2] = {
      {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max<uint32_t>(storage_descriptors, 1)},
      {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, std::max<uint32_t>(uniform_descriptors, 1)}};
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.maxSets = sets;
  pci.poolSizeCount = 2;
  pci.pPoolSizes = sizes;
  VKD_CHECK(vkCreateDescriptorPool(ctx_.device(), &pci, nullptr, &descriptor_pool_));

  for (Node& node : nodes_) {
    if (!node.pipeline) continue;
    std::memcpy(params_buffer_->mapped() + node.params_offset, node.params.data(),
                node.params.size());
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = descriptor_pool_;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &node.pipeline->set_layout;
    VKD_CHECK(vkAllocateDescriptorSets(ctx_.device(), &ai, &node.set));
    write_descriptors(node, node.set, nullptr);
  }
}

void ComputeGraph::write_descriptors(const Node& node, VkDescriptorSet set,
                                     const std::vector<ExternalTensor>* external) const {
  std::vector<VkDescriptorBufferInfo> infos(node.tensors.size() + 1);
  std::vector<VkWriteDescriptorSet> writes(node.tensors.size() + 1);
  for (size_t b = 0; b < infos.size(); ++b) {
    const bool is_params = b == node.tensors.size();
    if (is_params) {
      infos[b] = {params_buffer_->handle(), node.params_offset, node.params.size()};
    } else {
      infos[b] = tensor_binding(node, b);
      for (const ExternalTensor& e : external ? *external : std::vector<ExternalTensor>{}) {
        if (e.value == node.tensors[b]) {  // bindable(): no window, within the device's range
          // As many bytes as the storage's own whole-buffer binding shows the shader.
          infos[b] = {e.buffer, e.offset, storages_[std::get<Tensor>(values_[e.value]).storage].buffer->size()};
        }
      }
    }
    writes[b] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[b].dstSet = set;
    writes[b].dstBinding = static_cast<uint32_t>(b);
    writes[b].descriptorCount = 1;
    writes[b].descriptorType = is_params ? node.pipeline->params_type : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[b].pBufferInfo = &infos[b];
  }
  vkUpdateDescriptorSets(ctx_.device(), static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
}

VkDescriptorBufferInfo ComputeGraph::tensor_binding(const Node& node, size_t b) const {
  const Tensor& t = std::get<Tensor>(values_[node.tensors[b]]);
  const Storage& s = storages_[t.storage];
  const DeviceInfo& info = ctx_.info();
  for (const auto& w : node.windows) {
    if (w[0] != b) continue;
    if (w[2] == 0 || w[1] + w[2] > s.nbytes || w[2] > info.max_storage_buffer_range ||
        w[1] % std::max<VkDeviceSize>(info.min_storage_offset_alignment, 1) != 0) {
      throw GraphError(node.op + ": internal error: binding window [" + std::to_string(w[1]) + ", +" +
                       std::to_string(w[2]) + ") of a " + std::to_string(s.nbytes) +
                       "-byte storage does not fit the device's binding limits");
    }
    return {s.buffer->handle(), w[1], w[2]};
  }
  // A shared memory object may be larger than the tensor: bind only the tensor.
  const VkDeviceSize range = s.nbytes <= info.max_storage_buffer_range ? VK_WHOLE_SIZE
                                                                      : t.max_storage_nbytes();
  if (range != VK_WHOLE_SIZE && range > info.max_storage_buffer_range) {
    throw GraphError(node.op + ": a tensor of " + std::to_string(range) +
                     " bytes is larger than this device's maxStorageBufferRange (" +
                     std::to_string(info.max_storage_buffer_range) +
                     " bytes), and this op cannot split it (embedding and index_select along dim 0 can)");
  }
  return {s.buffer->handle(), 0, range};
}

// ---------------------------------------------------------------- running

namespace {
void memory_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = src;
  b.dstAccessMask = dst;
  vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &b, 0, nullptr, 0, nullptr);
}
constexpr VkAccessFlags kShaderRW = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
constexpr VkAccessFlags kTransferRW = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
}  // namespace

// Barrier placement: what a dispatch touches, per bound range of a buffer.
void ComputeGraph::node_accesses(const Node& node, std::vector<BufferAccess>& out) const {
  out.clear();
  for (size_t b = 0; b < node.tensors.size(); ++b) {
    const VkDescriptorBufferInfo info = tensor_binding(node, b);
    const Storage& s = storages_[std::get<Tensor>(values_[node.tensors[b]]).storage];
    const VkDeviceSize end =
        info.range == VK_WHOLE_SIZE ? s.buffer->size() : info.offset + info.range;
    const bool write = b >= node.pipeline->writes.size() || node.pipeline->writes[b];
    out.push_back({info.buffer, info.offset, end, write});
  }
}

std::vector<std::vector<const Node*>> ComputeGraph::dispatch_batches(BarrierMode mode) const {
  std::vector<std::vector<const Node*>> batches;
  struct Past {
    BufferAccess access;
    size_t batch;
  };
  std::vector<Past> past;  // Levels: every access so far; InOrder: those of the last batch
  std::vector<BufferAccess> accesses;
  for (const Node& node : nodes_) {
    if (!node.pipeline || !(node.groups[0] && node.groups[1] && node.groups[2])) continue;
    size_t batch = 0;
    if (mode == BarrierMode::All) {
      batch = batches.size();
    } else if (mode != BarrierMode::None) {
      node_accesses(node, accesses);
      bool conflict = false;
      for (const Past& p : past) {
        if (mode == BarrierMode::Levels && p.batch + 1 <= batch) continue;
        for (const BufferAccess& a : accesses) {
          if (p.access.buffer == a.buffer && p.access.begin < a.end && a.begin < p.access.end &&
              (p.access.write || a.write)) {
            batch = std::max(batch, p.batch + 1);
            conflict = true;
            break;
          }
        }
      }
      if (mode == BarrierMode::InOrder) {
        batch = batches.empty() ? 0 : batches.size() - 1 + (conflict ? 1 : 0);
        if (conflict) past.clear();
      }
      for (const BufferAccess& a : accesses) past.push_back({a, batch});
    }
    if (batch >= batches.size()) batches.resize(batch + 1);
    batches[batch].push_back(&node);
  }
  return batches;
}

void ComputeGraph::dispatch(VkCommandBuffer cmd, const Node& node) {
  VkDescriptorSet set = node.set;
  if (external_ != nullptr) {
    for (const ExternalTensor& e : *external_) {
      if (std::find(node.tensors.begin(), node.tensors.end(), e.value) != node.tensors.end()) {
        set = (*allocate_set_)(node.pipeline->set_layout);
        write_descriptors(node, set, external_);
        break;
      }
    }
  }
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, node.pipeline->handle);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, node.pipeline->layout, 0, 1,
                          &set, 0, nullptr);
  vkCmdDispatch(cmd, node.groups[0], node.groups[1], node.groups[2]);
  ++num_dispatches_;
}

ComputeGraph::BarrierMode ComputeGraph::barrier_mode() const {
  // settings.def: NO_BARRIERS, ALL_BARRIERS, NO_REORDER.
  if (settings_.no_barriers) return BarrierMode::None;
  if (settings_.all_barriers) return BarrierMode::All;
  if (settings_.no_reorder) return BarrierMode::InOrder;
  return BarrierMode::Levels;
}

void ComputeGraph::record_batches(VkCommandBuffer cmd) {
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const auto batches = dispatch_batches(barrier_mode());
  // The fault injection goes after the last batch holding one of the op's nodes: its
  // output's readers come in later batches (they conflict with its writer).
  size_t perturb_batch = batches.size();
  if (perturb_value_ >= 0) {
    const auto& [name, first, end] = blob_ops_.at(static_cast<size_t>(settings_.debug_perturb_op));
    for (size_t b = 0; b < batches.size(); ++b) {
      for (const Node* node : batches[b]) {
        const size_t i = static_cast<size_t>(node - nodes_.data());
        if (i >= first && i < end) perturb_batch = b;
      }
    }
  }
  for (size_t b = 0; b < batches.size(); ++b) {
    if (num_dispatches_ > 0) {
      memory_barrier(cmd, compute, VK_ACCESS_SHADER_WRITE_BIT, compute, kShaderRW);
      ++num_barriers_;
    }
    for (const Node* node : batches[b]) dispatch(cmd, *node);
    if (b == perturb_batch) record_perturbation(cmd);
  }
}

void ComputeGraph::update_sizes() {
  if (dirty_sizes_) {
    propagate_sizes();
    dirty_sizes_ = false;
    recorded_ = false;
  }
}

void ComputeGraph::record_into(VkCommandBuffer cmd, const std::function<void(VkCommandBuffer)>& before,
                               const std::function<void(VkCommandBuffer)>& after) {
  if (profiling_) throw GraphError("a profiled graph records its own command buffer");
  update_sizes();
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkPipelineStageFlags transfer = VK_PIPELINE_STAGE_TRANSFER_BIT;
  // After everything recorded before it: other graphs, or an earlier run of this one, whose
  // storage this run overwrites.
  memory_barrier(cmd, compute | transfer, kShaderRW | kTransferRW, compute | transfer, kShaderRW | kTransferRW);
  before(cmd);
  memory_barrier(cmd, compute | transfer, kShaderRW | kTransferRW, compute, kShaderRW);
  num_dispatches_ = 0;
  num_barriers_ = 0;
  record_batches(cmd);
  memory_barrier(cmd, compute, VK_ACCESS_SHADER_WRITE_BIT, transfer, kTransferRW);
  after(cmd);
  ++num_executes_;
}

bool ComputeGraph::bindable(const std::vector<std::pair<VkDeviceSize, VkDeviceSize>>& offset_and_size) const {
  std::vector<int> ids(input_ids_);
  ids.insert(ids.end(), output_ids_.begin(), output_ids_.end());
  if (offset_and_size.size() != ids.size() || profiling_ || perturb_value_ >= 0) return false;
  const DeviceInfo& info = ctx_.info();
  const VkDeviceSize align = std::max<VkDeviceSize>(info.min_storage_offset_alignment, 1);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int id = ids[i];
    if (std::count(ids.begin(), ids.end(), id) != 1) return false;
    const Tensor& t = std::get<Tensor>(values_[id]);
    const Storage& s = storages_[t.storage];
    const auto [offset, size] = offset_and_size[i];
    if (t.is_view || t.is_state || s.nbytes == 0 || !s.buffer || s.buffer->size() > info.max_storage_buffer_range ||
        offset % align != 0 || offset > size || size - offset < s.buffer->size()) {
      return false;
    }
    for (size_t v = 0; v < values_.size(); ++v) {  // another value in its storage: a view, an alias
      const Tensor* other = std::get_if<Tensor>(&values_[v]);
      if (other != nullptr && static_cast<int>(v) != id && other->storage == t.storage) return false;
    }
    const bool input = i < input_ids_.size();
    bool written = false;
    for (const Node& node : nodes_) {
      if (!node.pipeline) continue;
      for (size_t b = 0; b < node.tensors.size(); ++b) {
        if (node.tensors[b] != id) continue;
        for (const auto& w : node.windows) {
          if (w[0] == b) return false;
        }
        const bool write = b >= node.pipeline->writes.size() || node.pipeline->writes[b];
        if (write && input) return false;
        written = written || write;
      }
    }
    if (!input && !written) return false;
  }
  return true;
}

void ComputeGraph::record_bound(VkCommandBuffer cmd, const std::vector<ExternalTensor>& external,
                                const std::function<VkDescriptorSet(VkDescriptorSetLayout)>& allocate_set) {
  if (profiling_) throw GraphError("a profiled graph records its own command buffer");
  update_sizes();
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkPipelineStageFlags transfer = VK_PIPELINE_STAGE_TRANSFER_BIT;
  // After everything recorded before it, which may have written the inputs or used the outputs.
  memory_barrier(cmd, compute | transfer, kShaderRW | kTransferRW, compute, kShaderRW);
  num_dispatches_ = 0;
  num_barriers_ = 0;
  external_ = &external;
  allocate_set_ = &allocate_set;
  try {
    record_batches(cmd);
  } catch (...) {
    external_ = nullptr;
    allocate_set_ = nullptr;
    throw;
  }
  external_ = nullptr;
  allocate_set_ = nullptr;
  ++num_executes_;
}

void ComputeGraph::record() {
  VkCommandBuffer cmd = stream_->begin();
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkPipelineStageFlags transfer = VK_PIPELINE_STAGE_TRANSFER_BIT;
  // No barrier before this execute's first command: every submit of a graph is waited for on the host
  // (its fence) before the next begins, and no two graphs share a buffer that either writes. The
  // previous submit's fence signal made all its device writes available; this submit's own memory
  // dependency (the host's operations before it -> every command of the batch, all device accesses)
  // makes the available values visible, and the host's wait between the two orders their execution
  // (Vulkan 1.4, "Fences", "Host Write Ordering Guarantees"). ~1 us of each execute on the H200
  // (benchmarks/results/splitk_ln_h200_2026-11-28_s16.md).

  bool copied = false;
  for (int id : input_ids_) {
    const Tensor& t = std::get<Tensor>(values_[id]);
    const Storage& s = storages_[t.storage];
    if (s.staging && t.storage_nbytes() > 0) {
      VkBufferCopy region{0, 0, t.storage_nbytes()};
      vkCmdCopyBuffer(cmd, s.staging->handle(), s.buffer->handle(), 1, &region);
      copied = true;
    }
  }
  if (copied) {
    // The prologue may copy into these buffers too (the eager device's inputs).
    memory_barrier(cmd, transfer, VK_ACCESS_TRANSFER_WRITE_BIT, prologue_ ? compute | transfer : compute,
                   prologue_ ? kShaderRW | kTransferRW : kShaderRW);
  }
  if (prologue_) {
    prologue_(cmd);
    memory_barrier(cmd, compute | transfer, kShaderRW | kTransferRW, compute, kShaderRW);
  }

  uint32_t query = 0;
  if (profiling_) {
    uint32_t count = 1;
    for (const Node& n : nodes_) count += n.pipeline ? 1 : 0;
    if (query_pool_) vkDestroyQueryPool(ctx_.device(), query_pool_, nullptr);
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = count;
    VKD_CHECK(vkCreateQueryPool(ctx_.device(), &qi, nullptr, &query_pool_));
    vkCmdResetQueryPool(cmd, query_pool_, 0, count);
    // Bottom of pipe: written once the input copies and the prologue have finished, so
    // the first dispatch's time holds neither.
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool_, query++);
  }
  // Barrier placement: dispatches go in batches separated by one compute barrier.
  // A dispatch conflicts with an earlier one when both touch overlapping bytes
  // of one VkBuffer and at least one writes them (RAW, WAR, WAW; memory planning
  // makes different tensors share buffers, so this also orders reuse). Default:
  // each dispatch goes to the batch after its latest conflicting predecessor's
  // (dependency levels; dispatches of one batch run in graph order and may
  // overlap). Profiling keeps one barrier per dispatch, so timestamps don't overlap.
  num_dispatches_ = 0;
  num_barriers_ = 0;
  if (profiling_) {
    for (const Node& node : nodes_) {
      if (!node.pipeline) continue;
      if (node.groups[0] && node.groups[1] && node.groups[2]) {
        if (num_dispatches_ > 0) {
          memory_barrier(cmd, compute, VK_ACCESS_SHADER_WRITE_BIT, compute, kShaderRW);
          ++num_barriers_;
        }
        dispatch(cmd, node);
        if (perturb_value_ >= 0 && &node == &nodes_[perturb_last_node_]) record_perturbation(cmd);
      }
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool_, query++);
    }
  } else {
    record_batches(cmd);
  }

  if (epilogue_) {
    memory_barrier(cmd, compute, VK_ACCESS_SHADER_WRITE_BIT, transfer, kTransferRW);
    epilogue_(cmd);
  }
  bool read_back = false;
  for (int id : output_ids_) {
    const Tensor& t = std::get<Tensor>(values_[id]);
    const Storage& s = storages_[t.storage];
    if (s.staging && t.storage_nbytes() > 0) {
      if (!read_back) {
        memory_barrier(cmd, compute | transfer, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                       transfer, VK_ACCESS_TRANSFER_READ_BIT);
      }
      VkBufferCopy region{0, 0, t.storage_nbytes()};
      vkCmdCopyBuffer(cmd, s.buffer->handle(), s.staging->handle(), 1, &region);
      read_back = true;
    }
  }
  memory_barrier(cmd, compute | transfer, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                 VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  stream_->end();
  recorded_ = true;
  ++num_records_;
}

void ComputeGraph::record_perturbation(VkCommandBuffer cmd) {
  const Tensor& t = std::get<Tensor>(values_[perturb_value_]);
  // 1000 in the storage type (two halves for float16; the low word of an int64).
  const uint32_t pattern = t.storage_type == StorageType::F32   ? 0x447A0000u
                           : t.storage_type == StorageType::F16 ? 0x63D063D0u
                                                                : 1000u;
  memory_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW, VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_TRANSFER_WRITE_BIT);
  vkCmdFillBuffer(cmd, storages_[t.storage].buffer->handle(), 0, 4, pattern);
  memory_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW);
}

void ComputeGraph::read_tensor(int id, void* dst, size_t nbytes) {
  if (id < 0 || static_cast<size_t>(id) >= num_blob_values_) {
    throw GraphError("value " + std::to_string(id) + " is out of range: the graph has " +
                     std::to_string(num_blob_values_) + " values");
  }
  if (!std::holds_alternative<Tensor>(values_[id])) {
    throw GraphError("value " + std::to_string(id) + " is " + value_kind(values_[id]) + ", not a tensor");
  }
  const Tensor& t = std::get<Tensor>(values_[id]);
  if (t.mem_obj_id >= 0 && !settings_.debug_values) {
    throw GraphError("value " + std::to_string(id) + " shares memory with other tensors (memory plan object " +
                     std::to_string(t.mem_obj_id) + "): load the graph with DEBUG_VALUES=1 to read it");
  }
  if (nbytes != t.nbytes()) {
    throw GraphError("value " + std::to_string(id) + " has " + std::to_string(t.nbytes()) + " bytes, not " +
                     std::to_string(nbytes));
  }
  const Storage& s = storages_[t.storage];
  const size_t n = static_cast<size_t>(t.numel());
  if (t.storage_nbytes() == 0) return;
  // Through a readback buffer even where the storage is mapped (a CPU driver): one path, the
  // one a discrete GPU takes, tested everywhere; speed does not matter here.
  Buffer staging(ctx_, t.storage_nbytes(), MemoryUsage::Readback, VK_BUFFER_USAGE_TRANSFER_DST_BIT);
  CommandStream stream(ctx_);
  VkCommandBuffer cmd = stream.begin();
  memory_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_TRANSFER_READ_BIT);
  VkBufferCopy region{0, 0, t.storage_nbytes()};
  vkCmdCopyBuffer(cmd, s.buffer->handle(), staging.handle(), 1, &region);
  memory_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                 VK_ACCESS_HOST_READ_BIT);
  stream.end();
  stream.submit_and_wait();
  from_storage(t.dtype, t.storage_type, staging.mapped(), dst, n);
}

void ComputeGraph::set_input_sizes(size_t i, const Sizes& sizes) {
  Tensor& t = std::get<Tensor>(values_[input_ids_.at(i)]);
  if (sizes.size() != t.max_sizes.size()) {
    throw GraphError("input " + std::to_string(i) + " has rank " + std::to_string(sizes.size()) +
                     " but the program expects rank " + std::to_string(t.max_sizes.size()) +
                     " " + sizes_str(t.max_sizes));
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0 || sizes[d] > t.max_sizes[d]) {
      throw GraphError("input " + std::to_string(i) + " has sizes " + sizes_str(sizes) +
                       ": dim " + std::to_string(d) + " is above its upper bound " +
                       std::to_string(t.max_sizes[d]) + " (the program was exported with sizes at most " +
                       sizes_str(t.max_sizes) + ")");
    }
    if (!t.min_sizes.empty() && sizes[d] < t.min_sizes[d]) {
      throw GraphError("input " + std::to_string(i) + " has sizes " + sizes_str(sizes) +
                       ": dim " + std::to_string(d) + " is below its minimum " +
                       std::to_string(t.min_sizes[d]) + " (the program was exported with sizes at least " +
                       sizes_str(t.min_sizes) + ")");
    }
  }
  if (sizes != t.sizes) {
    t.sizes = sizes;
    dirty_sizes_ = true;
  }
}

void ComputeGraph::copy_input(size_t i, const void* src, size_t nbytes) {
  const Tensor& t = std::get<Tensor>(values_[input_ids_.at(i)]);
  if (nbytes != t.nbytes()) {
    throw GraphError("input " + std::to_string(i) + " has " + std::to_string(nbytes) +
                     " bytes, expected " + std::to_string(t.nbytes()));
  }
  const Storage& s = storages_[t.storage];
  uint8_t* dst = s.staging ? s.staging->mapped() : s.buffer->mapped();
  to_storage(t.dtype, t.storage_type, src, dst, static_cast<size_t>(t.numel()));
}

void ComputeGraph::copy_output(size_t i, void* dst, size_t nbytes) {
  const Tensor& t = std::get<Tensor>(values_[output_ids_.at(i)]);
  if (nbytes != t.nbytes()) {
    throw GraphError("output " + std::to_string(i) + " has room for " + std::to_string(nbytes) +
                     " bytes, needs " + std::to_string(t.nbytes()));
  }
  const Storage& s = storages_[t.storage];
  const uint8_t* src = s.staging ? s.staging->mapped() : s.buffer->mapped();
  from_storage(t.dtype, t.storage_type, src, dst, static_cast<size_t>(t.numel()));
}

void ComputeGraph::prepare() {
  if (dirty_sizes_) {
    propagate_sizes();
    dirty_sizes_ = false;
    recorded_ = false;
  }
  if (!recorded_) record();
}

void ComputeGraph::execute() {
  prepare();
  stream_->submit_and_wait();
  ++num_executes_;
  if (profiling_) read_timings();
  check_faults();
}

namespace {
// glsl/fault.glslh's codes.
enum FaultCode : uint32_t { kFaultIndex = 1, kFaultDivZero = 2, kFaultDivOverflow = 3, kFaultInt64Range = 4 };
}  // namespace

namespace {
std::string float_text(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", f);
  return text;
}
}  // namespace

void ComputeGraph::check_faults() {
  if (fault_storage_ < 0) return;
  uint8_t* base = storages_[fault_storage_].buffer->mapped();
  std::string message;
  for (size_t k = 0; k < fault_slots_.size(); ++k) {
    uint32_t* slot = reinterpret_cast<uint32_t*>(base + k * fault_slot_stride_);
    if (slot[0] == 0) continue;
    if (message.empty()) {
      // value and bound: two words each, low first.
      const int64_t value = static_cast<int64_t>(static_cast<uint64_t>(slot[3]) << 32 | slot[2]);
      const int64_t bound = static_cast<int64_t>(static_cast<uint64_t>(slot[5]) << 32 | slot[4]);
      const std::string& op = nodes_.at(fault_slots_[k].node).op;
      switch (slot[0]) {
        case kFaultIndex:
          message = op + ": index " + std::to_string(value) + " is out of range for dimension " +
                    std::to_string(slot[1]) + " of size " + std::to_string(bound);
          break;
        case kFaultDivZero:
          message = op + ": integer division by zero (" + std::to_string(value) + " / 0)";
          break;
        case kFaultDivOverflow:  // detail: the storage's bits
          message = op + ": integer division overflows: " + std::to_string(value) + " / " +
                    std::to_string(bound) + " is outside the int" + std::to_string(slot[1]) + " range";
          break;
        case kFaultInt64Range: {
          // detail: the operator ('+', '-', '*', '^'; 'n': negation, 'a': abs; 'S': a sum, the value;
          // 'c': a float converted, value its bits, bound the storage's bits: 64 where int64 is int64).
          const std::string a = std::to_string(value), b = std::to_string(bound);
          if (slot[1] == 'c' && bound == 64) {
            message = op + ": converting " + float_text(slot[2]) + " to int64: outside the int64 range";
            break;
          }
          const std::string expr = slot[1] == 'n'   ? "-(" + a + ")"
                                   : slot[1] == 'a' ? "abs(" + a + ")"
                                   : slot[1] == 'S' ? "a sum, " + a + ","
                                   : slot[1] == '^' ? a + " ** " + b
                                   : slot[1] == 'c' ? "converting " + float_text(slot[2])
                                                    : a + " " + static_cast<char>(slot[1] & 0x7f) + " " + b;
          message = op + ": int64 result of " + expr + " leaves the int32 range the GPU stores int64 in" +
                    " (this device has no shaderInt64, or VKDELEGATE_INT64_STORAGE=32)";
          break;
        }
        default:
          message = op + ": unknown GPU fault code " + std::to_string(slot[0]);
      }
    }
    std::memset(slot, 0, kFaultSlotWords * 4);
  }
  if (!message.empty()) throw ExecuteFault(message);
}

void ComputeGraph::set_profiling(bool on) {
  if (on && !ctx_.info().timestamps) {
    throw GraphError("this device has no timestamp queries on its compute queue");
  }
  if (on != profiling_) {
    profiling_ = on;
    recorded_ = false;
  }
}

void ComputeGraph::set_prologue(std::function<void(VkCommandBuffer)> prologue) {
  prologue_ = std::move(prologue);
  recorded_ = false;
}

void ComputeGraph::set_epilogue(std::function<void(VkCommandBuffer)> epilogue) {
  epilogue_ = std::move(epilogue);
  recorded_ = false;
}

void ComputeGraph::read_timings() {
  uint32_t count = 1;
  for (const Node& n : nodes_) count += n.pipeline ? 1 : 0;
  std::vector<uint64_t> ts(count);
  VKD_CHECK(vkGetQueryPoolResults(ctx_.device(), query_pool_, 0, count, count * sizeof(uint64_t),
                                  ts.data(), sizeof(uint64_t),
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  timings_.clear();
  uint32_t q = 1;
  for (const Node& n : nodes_) {
    if (!n.pipeline) continue;
    NodeTiming nt;
    nt.op = n.op;
    nt.shape = sizes_str(std::get<Tensor>(values_[n.tensors[0]]).sizes);
    nt.us = static_cast<double>(ts[q] - ts[q - 1]) * ctx_.info().timestamp_period_ns / 1000.0;
    timings_.push_back(std::move(nt));
    ++q;
  }
}

MemoryReport ComputeGraph::memory_report() const {
  MemoryReport r;
  for (const Storage& s : storages_) {
    if (!s.buffer) continue;
    r.num_storages += 1;
    (s.is_constant ? r.constant_bytes : r.intermediate_bytes) += s.buffer->size();
    if (s.is_state) r.state_bytes += s.buffer->size();
    if (s.is_shared) {
      r.planned_bytes += s.buffer->size();
      r.num_shared_objects += 1;
    }
    if (s.staging) r.staging_bytes += s.staging->size();
  }
  // Without sharing, each planned tensor that is not a view would have its own buffer.
  for (const auto& v : values_) {
    const auto* t = std::get_if<Tensor>(&v);
    if (t && t->mem_obj_id >= 0 && !t->is_view) r.unshared_bytes += t->max_storage_nbytes();
  }
  if (params_buffer_) r.params_bytes = params_buffer_->size();
  return r;
}

}  // namespace vkd
