// aten.cat: one copy node per input, each writing its slice of the output.
#include "op_utils.h"
#include "shader_params.h"  // CatParams: glsl/cat.glsl

namespace vkd {

namespace {


// The output sizes of cat(tensors, dim) from the current input sizes. Like
// torch, 1-D empty tensors ([0]) are skipped whatever the rank of the others.
Sizes cat_sizes(ComputeGraph& g, const std::vector<int>& ins, int64_t dim) {
  Sizes out;
  for (int id : ins) {
    const Tensor& t = g.tensor(id);
    if (t.dim() == 1 && t.sizes[0] == 0) continue;
    if (out.empty()) {
      out = t.sizes;
      out[normalize_dim(g, dim, t.dim())] = 0;
    }
    const int64_t d = normalize_dim(g, dim, static_cast<int64_t>(out.size()));
    if (t.dim() != static_cast<int64_t>(out.size())) g.fail("cat inputs differ in rank");
    for (int64_t k = 0; k < t.dim(); ++k) {
      if (k != d && t.sizes[k] != out[k]) {
        g.fail("cat inputs " + sizes_str(t.sizes) + " and " + sizes_str(out) + " differ outside dim " +
               std::to_string(d));
      }
    }
    out[d] += t.sizes[d];
  }
  if (out.empty()) out = {0};
  return out;
}

// cat(Tensor[] tensors, int dim=0)
void add_cat(ComputeGraph& g, const OpArgs& a) {
  const std::vector<int> ins = g.get_value_list(a.at(0)).ids;
  const int64_t dim = g.get_int(a.at(1));
  const int out = a.back();
  if (ins.empty()) g.fail("cat needs at least one tensor");
  for (int id : ins) require_same_dtype(g, {id, out});
  cat_sizes(g, ins, dim);  // checks the sizes at build
  for (size_t k = 0; k < ins.size(); ++k) {
    g.add_node(g.current_op(), variant(g, "cat", out), kLocal1D, {out, ins[k]},
               [ins, k, dim, out](ComputeGraph& g, Node& node) {
                 Tensor& to = g.tensor(out);
                 to.sizes = cat_sizes(g, ins, dim);
                 const Tensor& t = g.tensor(ins[k]);
                 CatParams p{};
                 p.numel = static_cast<int32_t>(t.numel());
                 if (p.numel > 0) {
                   const int64_t d = normalize_dim(g, dim, to.dim());
                   int64_t inner = 1, offset = 0;
                   for (int64_t q = d + 1; q < to.dim(); ++q) inner *= to.sizes[q];
                   for (size_t j = 0; j < k; ++j) {
                     const Tensor& prev = g.tensor(ins[j]);
                     if (!(prev.dim() == 1 && prev.sizes[0] == 0)) offset += prev.sizes[d];
                   }
                   p.inner = static_cast<int32_t>(inner);
                   p.in_dim = static_cast<int32_t>(t.sizes[d]);
                   p.out_dim = static_cast<int32_t>(to.sizes[d]);
                   p.offset = static_cast<int32_t>(offset);
                 }
                 node.set_params(p);
                 node.set_groups_1d(t.numel(), kLocal1D[0]);
               });
  }
}

}  // namespace

VKD_REGISTER_OPS(register_cat_ops) {
  register_op("aten.cat.default", add_cat);
}

}  // namespace vkd
