// Symbolic ints of dynamic shapes: aten.sym_size.int reads a tensor's current
// size, sym.add / sym.sub / sym.mul / sym.floordiv / sym.mod / sym.neg do
// Python int arithmetic on SymInt and Int values. They have no dispatch: their
// update functions recompute the output SymInt whenever input sizes change,
// before the ops that read it (they come earlier in the chain).
#include "op_utils.h"

namespace vkd {

namespace {

int64_t floor_div(ComputeGraph& g, int64_t a, int64_t b) {
  if (b == 0) g.fail("SymInt division by zero");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}

int64_t floor_mod(ComputeGraph& g, int64_t a, int64_t b) {
  return a - floor_div(g, a, b) * b;
}

using BinaryFn = int64_t (*)(ComputeGraph&, int64_t, int64_t);

void add_binary(ComputeGraph& g, const OpArgs& a, BinaryFn fn) {
  if (a.size() != 3) g.fail("expects two operands and one output");
  const int lhs = a[0], rhs = a[1], out = a[2];
  g.get_int(lhs);
  g.get_int(rhs);
  g.symint(out);
  g.add_scalar_node(g.current_op(), [lhs, rhs, out, fn](ComputeGraph& g, Node&) {
    g.symint(out).value = fn(g, g.get_int(lhs), g.get_int(rhs));
  });
}

}  // namespace

VKD_REGISTER_OPS(register_symint_ops) {
  // sym_size.int(self, dim) -> SymInt
  register_op("aten.sym_size.int", [](ComputeGraph& g, const OpArgs& a) {
    if (a.size() != 3) g.fail("expects a tensor, a dim and one output");
    const int in = a[0], out = a[2];
    const int64_t dim = g.get_int(a[1]);
    normalize_dim(g, dim, g.tensor(in).dim());
    g.symint(out);
    g.add_scalar_node(g.current_op(), [in, dim, out](ComputeGraph& g, Node&) {
      const Tensor& t = g.tensor(in);
      g.symint(out).value = t.sizes[normalize_dim(g, dim, t.dim())];
    });
  });
  register_op("sym.add", [](ComputeGraph& g, const OpArgs& a) {
    add_binary(g, a, [](ComputeGraph&, int64_t x, int64_t y) { return x + y; });
  });
  register_op("sym.sub", [](ComputeGraph& g, const OpArgs& a) {
    add_binary(g, a, [](ComputeGraph&, int64_t x, int64_t y) { return x - y; });
  });
  register_op("sym.mul", [](ComputeGraph& g, const OpArgs& a) {
    add_binary(g, a, [](ComputeGraph&, int64_t x, int64_t y) { return x * y; });
  });
  register_op("sym.floordiv", [](ComputeGraph& g, const OpArgs& a) {
    add_binary(g, a, floor_div);
  });
  register_op("sym.mod", [](ComputeGraph& g, const OpArgs& a) {
    add_binary(g, a, floor_mod);
  });
  register_op("sym.neg", [](ComputeGraph& g, const OpArgs& a) {
    if (a.size() != 2) g.fail("expects one operand and one output");
    const int in = a[0], out = a[1];
    g.get_int(in);
    g.symint(out);
    g.add_scalar_node(g.current_op(), [in, out](ComputeGraph& g, Node&) {
      g.symint(out).value = -g.get_int(in);
    });
  });
}

}  // namespace vkd
