// Matrix products: mm, bmm, addmm, linear, on the strided matmul shader (and matmul_tiled.glsl for large float32
// ones, matmul_coop.glsl for float16 ones on devices with cooperative matrices).
#include <cstring>

#include "../vk/pipeline.h"
#include "matmul_choice.h"
#include "norm.h"  // add_layer_norm_node: et_vk.vkd_ln_linear where no kernel normalizes A itself
#include "op_utils.h"
#include "shader_params.h"  // MatmulParams, MatmulSplitkReduceParams: glsl/matmul_params.glslh

namespace vkd {

namespace {

// An activation the matrix products apply in their epilogue (MatmulParams.act; glsl/activation.glslh).
enum class Activation : int32_t { None = 0, Relu = 1, Gelu = 2, GeluTanh = 3, Silu = 4 };

// et_vk.vkd_linear_act's names.
Activation activation_named(ComputeGraph& g, const std::string& name) {
  if (name == "none") return Activation::None;
  if (name == "relu") return Activation::Relu;
  if (name == "gelu") return Activation::Gelu;
  if (name == "gelu_tanh") return Activation::GeluTanh;
  if (name == "silu") return Activation::Silu;
  g.fail("unknown activation '" + name + "' (none, relu, gelu, gelu_tanh or silu)");
}

// What the kernels apply after alpha and the bias, as they store (glsl/matmul_params.glslh).
struct Epilogue {
  Activation act = Activation::None;
  int residual = -1;  // a tensor of the output's sizes and dtype added after the activation
};

// A layer norm of A's rows over K (the last dim) before a linear (et_vk.vkd_ln_linear): the
// cooperative-matrix kernel's and gemv.glsl's _ln variants apply it as they fetch A; elsewhere a
// layer_norm node first, into a tensor of the node's own.
struct LnPrologue {
  bool on = false;
  int weight = -1, bias = -1;  // the norm's affine parts, -1 for none
  float eps = 0.f;
};

// The variant of `shader` (NAME_DTYPE) that adds a residual: NAME_res_DTYPE, whose residual
// binding follows the shader's buffers.
std::string residual_variant(ComputeGraph& g, const std::string& shader) {
  const size_t dtype = shader.rfind('_');
  const std::string name =
      dtype == std::string::npos ? shader + "_res" : shader.substr(0, dtype) + "_res" + shader.substr(dtype);
  if (find_shader(name) == nullptr) g.fail("the kernel " + shader + " has no variant that adds a residual (" + name + ")");
  return name;
}

// The residual resizes with the output: it must have the output's sizes at every update.
void check_residual(ComputeGraph& g, int residual, const Sizes& out_sizes) {
  if (residual >= 0 && g.tensor(residual).sizes != out_sizes) {
    g.fail("residual of sizes " + sizes_str(g.tensor(residual).sizes) + " does not match the output's " +
           sizes_str(out_sizes));
  }
}

// Shapes of one product, recomputed from the current sizes at every update.
struct Problem {
  Sizes out_sizes;
  MatmulParams p{};
};

using ShapeFn = Problem (*)(ComputeGraph& g, const std::vector<int>& ids);

// Sets bias strides for a bias broadcast against [M, N].
void bias_strides(ComputeGraph& g, const Tensor& bias, int64_t M, int64_t N, MatmulParams& p) {
  const Sizes st = broadcast_strides(bias, {M, N});
  if (bias.dim() > 2 || broadcast_sizes(g, bias.sizes, {M, N}) != Sizes{M, N}) {
    g.fail("bias of sizes " + sizes_str(bias.sizes) + " does not broadcast to [" +
           std::to_string(M) + ", " + std::to_string(N) + "]");
  }
  p.bias_sm = static_cast<int32_t>(st[0]);
  p.bias_sn = static_cast<int32_t>(st[1]);
  p.has_bias = 1;
}

// The split-K product on matmul_tiled.glsl `shader` (an _sk variant): slices into a scratch
// tensor, then matmul_splitk_reduce.glsl into the output with the epilogue.
void add_splitk_matmul(ComputeGraph& g, const std::vector<int>& ids, ShapeFn shape, float alpha, float beta,
                       const std::string& shader, LocalSize local, uint32_t tile_m, uint32_t tile_n, int32_t group_m,
                       int64_t splits, Epilogue epi) {
  const Problem planned = shape(g, ids);
  const int part = g.add_scratch_tensor(DType::Float32, {splits * planned.p.batch * planned.p.M * planned.p.N});
  const uint32_t bk = shader.find("tiled16") != std::string::npos ? 16 : 8;
  g.add_node(g.current_op(), shader, local, {part, ids[0], ids[1], ids[0]},
             [ids, shape, tile_m, tile_n, group_m, splits, part, bk](ComputeGraph& g, Node& node) {
               Problem pr = shape(g, ids);
               g.tensor(part).sizes = {splits * pr.p.batch * pr.p.M * pr.p.N};
               pr.p.alpha = 1.f;
               pr.p.has_bias = 0;
               pr.p.c_sb = pr.p.M * pr.p.N;
               pr.p.aligned = pr.p.K % 4 == 0 && pr.p.N % 4 == 0;
               pr.p.group_m = group_m;
               // K per slice, a multiple of bk (at least one step).
               const int64_t per = (pr.p.K + splits - 1) / splits;
               pr.p.k_chunk = static_cast<int32_t>(std::max<int64_t>(1, (per + bk - 1) / bk) * bk);
               node.set_params(pr.p);
               node.groups = {static_cast<uint32_t>((pr.p.N + tile_n - 1) / tile_n),
                              static_cast<uint32_t>((pr.p.M + tile_m - 1) / tile_m),
                              static_cast<uint32_t>(splits * pr.p.batch)};
               if (pr.p.M == 0 || pr.p.N == 0 || pr.p.batch == 0) node.groups = {0, 0, 0};
             });
  const int bias = ids[2], out = ids[3];
  std::vector<int> bound{out, part, bias >= 0 ? bias : part};
  std::string reduce = "matmul_splitk_reduce_f32";
  if (epi.residual >= 0) {
    bound.push_back(epi.residual);
    reduce = residual_variant(g, reduce);
  }
  g.add_node(g.current_op(), reduce, kLocal1D, bound,
             [ids, shape, alpha, beta, splits, epi](ComputeGraph& g, Node& node) {
               const Problem pr = shape(g, ids);
               g.tensor(ids[3]).sizes = pr.out_sizes;
               check_residual(g, epi.residual, pr.out_sizes);
               MatmulSplitkReduceParams r{pr.p.M, pr.p.N, pr.p.batch, static_cast<int32_t>(splits),
                              pr.p.bias_sb, pr.p.bias_sm, pr.p.bias_sn, beta == 0.f ? 0 : pr.p.has_bias,
                              alpha, beta, pr.p.N % 4 == 0, static_cast<int32_t>(epi.act)};
               node.set_params(r);
               node.set_groups_1d(int64_t{pr.p.batch} * pr.p.M * ((pr.p.N + 3) / 4), kLocal1D[0]);
             });
}

// A layer norm over the last dim of `a` (et_vk.vkd_ln_linear's, where the product's kernel does not
// normalize A itself) folded into the split-K reduce that made `a`, when that reduce is the graph's
// last node (a float32 transformer's norm after a linear with its residual: 23 of ViT-tiny's 24): its _ln
// variant writes each row normed into `normed` too, one dispatch fewer. False where it cannot.
constexpr int64_t kFoldMaxRow = 4 * 4 * 64;  // matmul_splitk_reduce.glsl: LN_QUADS x 4 x 64 invocations
constexpr LocalSize kFoldLocal{64, 1, 1};
bool fold_norm_into_reduce(ComputeGraph& g, int a, const LnPrologue& ln, int normed) {
  const Node* last = g.last_node();
  if (last == nullptr || last->pipeline == nullptr || last->tensors.size() < 3 || last->tensors[0] != a) return false;
  const bool res = last->pipeline->shader == "matmul_splitk_reduce_res_f32";
  if (!res && last->pipeline->shader != "matmul_splitk_reduce_f32") return false;
  if (g.tensor(a).max_sizes.empty() || g.tensor(a).max_sizes.back() > kFoldMaxRow) return false;
  const int part = last->tensors[1];
  std::vector<int> bound{last->tensors[0], part, last->tensors[2], normed, ln.weight >= 0 ? ln.weight : part,
                         ln.bias >= 0 ? ln.bias : part};
  if (res) bound.push_back(last->tensors[3]);
  const UpdateFn reduce = last->update;
  const float eps = ln.eps;
  const int32_t affine = (ln.weight >= 0 ? 1 : 0) | (ln.bias >= 0 ? 2 : 0);
  g.rebind_last_node(variant(g, res ? "matmul_splitk_reduce_res_ln" : "matmul_splitk_reduce_ln", a), kFoldLocal,
                     bound, [reduce, a, normed, eps, affine](ComputeGraph& g, Node& node) {
                       reduce(g, node);
                       MatmulSplitkReduceParams r{};
                       std::memcpy(&r, node.params.data(), sizeof(r));
                       r.ln_eps = eps;
                       r.ln_affine = affine;
                       node.set_params(r);
                       g.tensor(normed).sizes = g.tensor(a).sizes;
                       node.set_groups_1d(int64_t{r.batch} * r.M, 1);  // one workgroup per row
                     });
  return true;
}

// ids: a, b, bias (or -1), out. epi: an activation and a residual after the bias, in the kernel's
// epilogue (the residual's variants are built for linears only: B contiguous in k).
void add_matmul(ComputeGraph& g, std::vector<int> ids, ShapeFn shape, float alpha, float beta,
                Epilogue epi = {}, LnPrologue ln = {}) {
  const int a = ids[0], b = ids[1], bias = ids[2], out = ids[3];
  require_float_same(g, {a, b, bias, out, epi.residual, ln.weight, ln.bias});
  // The kernel from the planned (largest) sizes (matmul_choice.cpp).
  const Problem planned = shape(g, ids);
  const MatmulParams& pp = planned.p;
  MatmulProblem problem;
  problem.dtype = g.tensor(a).dtype;
  problem.M = pp.M, problem.N = pp.N, problem.K = pp.K, problem.batch = pp.batch;
  problem.a_sb = pp.a_sb, problem.a_sm = pp.a_sm, problem.a_sk = pp.a_sk;
  problem.b_sb = pp.b_sb, problem.b_sk = pp.b_sk, problem.b_sn = pp.b_sn;
  problem.c_sb = pp.c_sb;
  problem.ln = ln.on;
  const MatmulChoice choice = choose_matmul(problem, g.context().info(), g.settings());
  if (ln.on && choice.kernel != MatmulKernel::Coop && choice.kernel != MatmulKernel::Gemv) {
    // No kernel here normalizes A as it fetches it: the norm first, into tensors of this node's own
    // (the planned sizes; not the scratch storage, which a split-K product uses meanwhile), in the
    // split-K reduce that made A where it can, else the layer norm's kernel.
    const Tensor& x = g.tensor(a);
    const DType dtype = x.dtype;
    const Sizes sizes = x.sizes;
    Sizes stat = sizes;
    stat.back() = 1;
    const int normed = g.add_zeroed_tensor(dtype, sizes);
    if (!fold_norm_into_reduce(g, a, ln, normed)) {
      const int mean = g.add_zeroed_tensor(dtype, stat);
      const int rstd = g.add_zeroed_tensor(dtype, stat);
      add_layer_norm_node(g, a, ln.weight, ln.bias, 1, ln.eps, normed, mean, rstd);
    }
    ids[0] = normed;
    add_matmul(g, ids, shape, alpha, beta, epi);
    return;
  }
  const bool plain = choice.kernel == MatmulKernel::Strided || choice.kernel == MatmulKernel::Gemv;
  // gemv's _ln variant normalizes its row of A itself (the coop kernel's choice names its own).
  const bool gemv_ln = ln.on && choice.kernel == MatmulKernel::Gemv;
  std::string shader = plain ? variant(g, gemv_ln ? choice.shader + "_ln" : choice.shader, a) : choice.shader;
  const LocalSize local = choice.local;
  const uint32_t tile_m = choice.tile_m, tile_n = choice.tile_n;
  const int32_t group_m =
      choice.kernel == MatmulKernel::Tiled || choice.kernel == MatmulKernel::Coop ? choice.group_m : 0;
  const bool coop2 = choice.coop2;
  if (choice.splits > 1) {
    add_splitk_matmul(g, ids, shape, alpha, beta, shader, local, tile_m, tile_n, group_m, choice.splits, epi);
    return;
  }
  // A missing bias still needs a buffer at binding 3; bind `a`, never read.
  std::vector<int> bound{out, a, b, bias >= 0 ? bias : a};
  if (epi.residual >= 0) {
    if (ln.on) g.fail("a layer norm before a linear and a residual after it are not supported together");
    bound.push_back(epi.residual);
    shader = residual_variant(g, shader);
  }
  if (ln.on) {  // an _ln variant (matmul_coop.glslh, gemv.glsl: LN_A)
    bound.push_back(ln.weight >= 0 ? ln.weight : a);
    bound.push_back(ln.bias >= 0 ? ln.bias : a);
  }
  g.add_node(g.current_op(), shader, local, bound,
             [ids, shape, alpha, beta, tile_m, tile_n, group_m, coop2, epi, ln, gemv_ln](ComputeGraph& g, Node& node) {
               Problem pr = shape(g, ids);
               g.tensor(ids[3]).sizes = pr.out_sizes;
               check_residual(g, epi.residual, pr.out_sizes);
               pr.p.alpha = alpha;
               pr.p.beta = beta;
               pr.p.act = static_cast<int32_t>(epi.act);
               if (beta == 0.f) pr.p.has_bias = 0;  // torch ignores the bias then, NaN or not
               pr.p.aligned = pr.p.K % 4 == 0 && pr.p.N % 4 == 0;
               pr.p.group_m = group_m;
               // matmul_coop: rows of 8 halves (16 bytes) from 16-byte aligned starts.
               const auto rows16 = [](int32_t row_stride, int32_t batch_stride) {
                 return row_stride % 8 == 0 && batch_stride % 8 == 0;
               };
               pr.p.vec_a = rows16(pr.p.a_sm, pr.p.a_sb);
               pr.p.vec_b = pr.p.b_sn == 1 ? rows16(pr.p.b_sk, pr.p.b_sb) : rows16(pr.p.b_sn, pr.p.b_sb);
               pr.p.vec_c = rows16(pr.p.N, pr.p.c_sb);
               if (ln.on) {
                 if (!gemv_ln && !pr.p.vec_a) g.fail("the layer-normed linear's rows of A must be multiples of 8 halves");
                 pr.p.ln_eps = ln.eps;
                 pr.p.ln_affine = (ln.weight >= 0 ? 1 : 0) | (ln.bias >= 0 ? 2 : 0);
               }
               if (coop2 && !coop2_aligned(pr.p.K, pr.p.N, pr.p.a_sm, pr.p.a_sb, pr.p.b_sb,
                                           pr.p.b_sn == 1 ? pr.p.b_sk : pr.p.b_sn, pr.p.c_sb)) {
                 g.fail("sizes " + sizes_str(pr.out_sizes) + " with K = " + std::to_string(pr.p.K) +
                        ": the cooperative-matrix-2 kernel (VKDELEGATE_COOPMM_TILE=c2_*) chosen at load needs "
                        "K and N multiples of 8");
               }
               node.set_params(pr.p);
               node.groups = {static_cast<uint32_t>((pr.p.N + tile_n - 1) / tile_n),
                              static_cast<uint32_t>((pr.p.M + tile_m - 1) / tile_m),
                              static_cast<uint32_t>(pr.p.batch)};
               if (pr.p.M == 0 || pr.p.N == 0) node.groups = {0, 0, 0};
             });
}

void check_k(ComputeGraph& g, int64_t ka, int64_t kb, const Tensor& a, const Tensor& b) {
  if (ka != kb) {
    g.fail("inner dimensions differ: " + sizes_str(a.sizes) + " x " + sizes_str(b.sizes));
  }
}

// mm / addmm: a [M, K], b [K, N]
Problem mm_shape(ComputeGraph& g, const std::vector<int>& ids) {
  const Tensor& a = g.tensor(ids[0]);
  const Tensor& b = g.tensor(ids[1]);
  if (a.dim() != 2 || b.dim() != 2) g.fail("mm needs 2-D tensors");
  check_k(g, a.sizes[1], b.sizes[0], a, b);
  Problem pr;
  const int64_t M = a.sizes[0], K = a.sizes[1], N = b.sizes[1];
  pr.out_sizes = {M, N};
  pr.p.M = M, pr.p.N = N, pr.p.K = K, pr.p.batch = 1;
  pr.p.a_sm = K, pr.p.a_sk = 1;
  pr.p.b_sk = N, pr.p.b_sn = 1;
  pr.p.c_sb = M * N;
  if (ids[2] >= 0) bias_strides(g, g.tensor(ids[2]), M, N, pr.p);
  return pr;
}

// bmm: a [B, M, K], b [B, K, N]
Problem bmm_shape(ComputeGraph& g, const std::vector<int>& ids) {
  const Tensor& a = g.tensor(ids[0]);
  const Tensor& b = g.tensor(ids[1]);
  if (a.dim() != 3 || b.dim() != 3) g.fail("bmm needs 3-D tensors");
  if (a.sizes[0] != b.sizes[0]) g.fail("batch sizes differ: " + sizes_str(a.sizes) + " x " + sizes_str(b.sizes));
  check_k(g, a.sizes[2], b.sizes[1], a, b);
  Problem pr;
  const int64_t B = a.sizes[0], M = a.sizes[1], K = a.sizes[2], N = b.sizes[2];
  if (B > 65535) g.fail("batch of " + std::to_string(B) + " is above 65535");
  pr.out_sizes = {B, M, N};
  pr.p.M = M, pr.p.N = N, pr.p.K = K, pr.p.batch = B;
  pr.p.a_sb = checked_mul(M, K), pr.p.a_sm = K, pr.p.a_sk = 1;
  pr.p.b_sb = checked_mul(K, N), pr.p.b_sk = N, pr.p.b_sn = 1;
  pr.p.c_sb = checked_mul(M, N);
  return pr;
}

// linear: x [..., K], weight [N, K], bias [N]
Problem linear_shape(ComputeGraph& g, const std::vector<int>& ids) {
  const Tensor& x = g.tensor(ids[0]);
  const Tensor& w = g.tensor(ids[1]);
  if (x.dim() < 1 || w.dim() != 2) g.fail("linear needs an input of rank >= 1 and a 2-D weight");
  const int64_t K = x.sizes.back(), N = w.sizes[0];
  check_k(g, K, w.sizes[1], x, w);
  Problem pr;
  const int64_t M = K == 0 ? 0 : x.numel() / K;
  pr.out_sizes = x.sizes;
  pr.out_sizes.back() = N;
  pr.p.M = M, pr.p.N = N, pr.p.K = K, pr.p.batch = 1;
  pr.p.a_sm = K, pr.p.a_sk = 1;
  pr.p.b_sk = 1, pr.p.b_sn = K;
  pr.p.c_sb = M * N;
  if (ids[2] >= 0) {
    const Tensor& bias = g.tensor(ids[2]);
    if (bias.dim() != 1 || bias.sizes[0] != N) g.fail("linear bias must have sizes [" + std::to_string(N) + "]");
    pr.p.bias_sm = 0, pr.p.bias_sn = 1, pr.p.has_bias = 1;
  }
  return pr;
}

}  // namespace

VKD_REGISTER_OPS(register_matmul_ops) {
  // mm(self, mat2)
  register_op("aten.mm.default", [](ComputeGraph& g, const OpArgs& a) {
    add_matmul(g, {a.at(0), a.at(1), -1, a.back()}, mm_shape, 1.f, 0.f);
  });
  // bmm(self, mat2)
  register_op("aten.bmm.default", [](ComputeGraph& g, const OpArgs& a) {
    add_matmul(g, {a.at(0), a.at(1), -1, a.back()}, bmm_shape, 1.f, 0.f);
  });
  // addmm(self, mat1, mat2, *, beta=1, alpha=1)
  register_op("aten.addmm.default", [](ComputeGraph& g, const OpArgs& a) {
    add_matmul(g, {a.at(1), a.at(2), a.at(0), a.back()}, mm_shape,
               static_cast<float>(g.get_double(a.at(4))), static_cast<float>(g.get_double(a.at(3))));
  });
  // linear(input, weight, bias=None)
  register_op("aten.linear.default", [](ComputeGraph& g, const OpArgs& a) {
    const int bias = g.is_null(a.at(2)) ? -1 : a.at(2);
    add_matmul(g, {a.at(0), a.at(1), bias, a.back()}, linear_shape, 1.f, 1.f);
  });
  // et_vk.vkd_linear_act(input, weight, bias, activation, residual=None): the activation, then the
  // residual added, in the epilogue
  register_op("et_vk.vkd_linear_act.default", [](ComputeGraph& g, const OpArgs& a) {
    // Programs exported before the residual argument have 4 arguments.
    if (a.size() != 5 && a.size() != 6) g.fail("expected 4 or 5 arguments and 1 output");
    const int bias = g.is_null(a.at(2)) ? -1 : a.at(2);
    Epilogue epi;
    epi.act = activation_named(g, g.get_string(a.at(3)));
    epi.residual = a.size() == 6 && !g.is_null(a.at(4)) ? a.at(4) : -1;
    if (epi.residual == a.back()) g.fail("the residual must not be the output");
    add_matmul(g, {a.at(0), a.at(1), bias, a.back()}, linear_shape, 1.f, 1.f, epi);
  });
  // et_vk.vkd_ln_linear(input, ln_weight, ln_bias, eps, weight, bias, activation): layer_norm of the
  // input's last dim, then the linear with the activation in its epilogue (backends/ln_linear_fusion.py).
  register_op("et_vk.vkd_ln_linear.default", [](ComputeGraph& g, const OpArgs& a) {
    if (a.size() != 8) g.fail("expected 7 arguments and 1 output");
    const int x = a.at(0);
    if (g.tensor(x).dim() < 1) g.fail("the input needs at least one dim");
    const int64_t K = g.tensor(x).sizes.back();
    LnPrologue ln;
    ln.on = true;
    ln.weight = g.is_null(a.at(1)) ? -1 : a.at(1);
    ln.bias = g.is_null(a.at(2)) ? -1 : a.at(2);
    ln.eps = static_cast<float>(g.get_double(a.at(3)));
    for (int id : {ln.weight, ln.bias}) {
      if (id >= 0 && (g.tensor(id).dim() != 1 || g.tensor(id).sizes[0] != K)) {
        g.fail("the layer norm's weight and bias must have sizes [" + std::to_string(K) + "]");
      }
    }
    Epilogue epi;
    epi.act = activation_named(g, g.get_string(a.at(6)));
    const int bias = g.is_null(a.at(5)) ? -1 : a.at(5);
    add_matmul(g, {x, a.at(4), bias, a.back()}, linear_shape, 1.f, 1.f, epi, ln);
  });
}

}  // namespace vkd
