// Static int8 from PT2E: quantized_decomposed quantize/dequantize per tensor,
// and the fused et_vk.vkd_q8ta_conv2d / vkd_q8ta_linear / vkd_q8ta_add that
// backends/q8ta_fusion.py makes from PT2E's dq -> op -> [relu] -> q patterns.
// int8 tensors are stored as int32 (values.h); packing four per word is a later
// optimization.
#include <cmath>
#include <tuple>

#include "op_utils.h"
#include "shader_params.h"  // Q8taConvertParams, Q8taConvParams, Q8taLinearParams, Q8taAddParams: glsl/q8ta_*.glsl

namespace vkd {

namespace {

// The partitioner bounds reductions so that int32 accumulation of products of
// two int8 differences (each at most 255 in magnitude) cannot overflow.
constexpr int64_t kMaxReduction = (int64_t{1} << 31) / (255 * 255);

void require_dtype(ComputeGraph& g, int id, DType dtype, const char* what) {
  if (g.tensor(id).dtype != dtype) {
    g.fail(std::string(what) + " must be " + dtype_name(dtype) + ", got " + dtype_name(g.tensor(id).dtype));
  }
}

struct Requant {
  float scale;
  int32_t zero_point, out_min, out_max;
};

int32_t int8_arg(ComputeGraph& g, int id, const char* what) {
  const int64_t v = g.get_int(id);
  if (v < -128 || v > 127) g.fail(std::string(what) + " " + std::to_string(v) + " is not an int8 value");
  return static_cast<int32_t>(v);
}

float scale_arg(ComputeGraph& g, int id) {
  const double s = g.get_double(id);
  if (!(s > 0) || !std::isfinite(s)) g.fail("scale " + std::to_string(s) + " is not a positive finite number");
  return static_cast<float>(s);
}

// The reciprocal as quantize_per_tensor computes it: 1.0 / scale in double, used as a float.
float inverse(ComputeGraph& g, int scale_id) { return static_cast<float>(1.0 / g.get_double(scale_id)); }

Requant requant_args(ComputeGraph& g, int scale, int zero_point, int out_min, int out_max) {
  Requant r{scale_arg(g, scale), int8_arg(g, zero_point, "zero point"), int8_arg(g, out_min, "quant_min"),
            int8_arg(g, out_max, "quant_max")};
  if (r.out_min > r.out_max) g.fail("quant_min is above quant_max");
  return r;
}

// quantize_per_tensor(input, scale, zero_point, quant_min, quant_max, dtype) and
// dequantize_per_tensor(..., dtype, *, out_dtype=None): int8 only.
void add_convert(ComputeGraph& g, const OpArgs& a, bool quantize) {
  const int in = a.at(0), out = a.back();
  if (g.get_int(a.at(5)) != static_cast<int64_t>(DType::Int8)) g.fail("only int8 quantization is supported");
  if (!quantize && a.size() == 8 && !g.is_null(a.at(6)) && g.get_int(a.at(6)) != static_cast<int64_t>(DType::Float32)) {
    g.fail("only float32 out_dtype is supported");
  }
  const Requant r = requant_args(g, a.at(1), a.at(2), a.at(3), a.at(4));
  require_dtype(g, quantize ? in : out, DType::Float32, quantize ? "the input" : "the output");
  require_dtype(g, quantize ? out : in, DType::Int8, quantize ? "the output" : "the input");
  Q8taConvertParams base{0, r.scale, inverse(g, a.at(1)), r.zero_point, r.out_min, r.out_max, 0, 0};
  g.add_node(g.current_op(), quantize ? "q8ta_quantize" : "q8ta_dequantize", kLocal1D, {out, in},
             [in, out, base](ComputeGraph& g, Node& node) {
               Tensor& o = g.tensor(out);
               o.sizes = g.tensor(in).sizes;
               Q8taConvertParams p = base;
               p.numel = static_cast<int32_t>(o.numel());
               node.set_params(p);
               node.set_groups_1d(o.numel(), kLocal1D[0]);
             });
}

// The per-channel weight arguments shared by conv2d and linear.
struct Weights {
  int weight, scales, zeros, bias;
};

Weights weight_args(ComputeGraph& g, int weight, int scales, int zeros, int bias_id, int64_t rank) {
  const Weights w{weight, scales, zeros, g.is_null(bias_id) ? -1 : bias_id};
  require_dtype(g, weight, DType::Int8, "the weight");
  require_dtype(g, scales, DType::Float32, "the weight scales");
  const DType zt = g.tensor(zeros).dtype;
  if (zt != DType::Int32 && zt != DType::Int64) g.fail("the weight zero points must be int32 or int64");
  if (w.bias >= 0) require_dtype(g, w.bias, DType::Float32, "the bias");
  const Tensor& wt = g.tensor(weight);
  if (wt.dim() != rank) g.fail("the weight must have rank " + std::to_string(rank));
  const int64_t channels = wt.sizes[0];
  for (int id : {scales, zeros, w.bias}) {
    if (id >= 0 && (g.tensor(id).dim() != 1 || g.tensor(id).sizes[0] != channels)) {
      g.fail("weight scales, zero points and bias need one value per output channel");
    }
  }
  const int64_t reduction = wt.numel() / std::max<int64_t>(channels, 1);
  if (reduction > kMaxReduction) {
    g.fail("a reduction of " + std::to_string(reduction) + " products could overflow the int32 accumulator");
  }
  return w;
}

// vkd_q8ta_conv2d(x, x_scale, x_zero_point, weight, weight_scales, weight_zero_points, bias?,
//                 stride, padding, dilation, groups, out_scale, out_zero_point, out_min, out_max)
void add_q8ta_conv2d(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 16) g.fail("expected 15 arguments and 1 output");
  const int in = a[0], out = a[15];
  require_dtype(g, in, DType::Int8, "the input");
  require_dtype(g, out, DType::Int8, "the output");
  const float x_scale = scale_arg(g, a[1]);
  const int32_t x_zero_point = int8_arg(g, a[2], "input zero point");
  const Weights w = weight_args(g, a[3], a[4], a[5], a[6], 4);
  // Not structured bindings: the update lambda captures them (see conv.cpp).
  int64_t sh, sw, ph, pw, dh, dw;
  std::tie(sh, sw) = pair_arg(g, a[7], "stride");
  std::tie(ph, pw) = pair_arg(g, a[8], "padding");
  std::tie(dh, dw) = pair_arg(g, a[9], "dilation");
  const int64_t groups = g.get_int(a[10]);
  const Requant r = requant_args(g, a[11], a[12], a[13], a[14]);
  const float inv_out = inverse(g, a[11]);
  if (sh < 1 || sw < 1 || dh < 1 || dw < 1 || ph < 0 || pw < 0 || groups < 1) {
    g.fail("stride and dilation must be positive, padding non-negative, groups positive");
  }
  std::vector<int> tensors{out, in, w.weight, w.scales, w.zeros, w.bias >= 0 ? w.bias : w.scales};
  g.add_node(g.current_op(), "q8ta_conv2d", kLocal1D, tensors, [=](ComputeGraph& g, Node& node) {
    const Tensor& x = g.tensor(in);
    const Tensor& wt = g.tensor(w.weight);
    if (x.dim() != 4) g.fail("the input must be NCHW (rank 4)");
    const int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3];
    const int64_t OC = wt.sizes[0], KH = wt.sizes[2], KW = wt.sizes[3];
    if (C % groups != 0 || OC % groups != 0 || wt.sizes[1] != C / groups) {
      g.fail("weight " + sizes_str(wt.sizes) + " does not fit input " + sizes_str(x.sizes) + " with groups=" +
             std::to_string(groups));
    }
    const int64_t OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1;
    const int64_t OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
    if (OH < 1 || OW < 1) g.fail("input " + sizes_str(x.sizes) + " is too small for the kernel");
    Tensor& o = g.tensor(out);
    o.sizes = {N, OC, OH, OW};
    Q8taConvParams p{};
    p.N = N, p.C = C, p.H = H, p.W = W;
    p.OC = OC, p.OH = OH, p.OW = OW, p.KH = KH;
    p.KW = KW, p.stride_h = sh, p.stride_w = sw, p.pad_h = ph;
    p.pad_w = pw, p.dil_h = dh, p.dil_w = dw, p.groups = groups;
    p.icpg = C / groups, p.ocpg = OC / groups, p.has_bias = w.bias >= 0;
    p.total = static_cast<int32_t>(o.numel());
    p.x_zero_point = x_zero_point, p.out_zero_point = r.zero_point, p.out_min = r.out_min, p.out_max = r.out_max;
    p.x_scale = x_scale, p.inv_out_scale = inv_out;
    p.zero_words = index_words(g.tensor(w.zeros));  // int64 zero points: their low words
    node.set_params(p);
    node.set_groups_1d(o.numel(), kLocal1D[0]);
  });
}

// vkd_q8ta_linear(x, x_scale, x_zero_point, weight, weight_scales, weight_zero_points, bias?,
//                 out_scale, out_zero_point, out_min, out_max)
void add_q8ta_linear(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 12) g.fail("expected 11 arguments and 1 output");
  const int in = a[0], out = a[11];
  require_dtype(g, in, DType::Int8, "the input");
  require_dtype(g, out, DType::Int8, "the output");
  const float x_scale = scale_arg(g, a[1]);
  const int32_t x_zero_point = int8_arg(g, a[2], "input zero point");
  const Weights w = weight_args(g, a[3], a[4], a[5], a[6], 2);
  const Requant r = requant_args(g, a[7], a[8], a[9], a[10]);
  const float inv_out = inverse(g, a[7]);
  std::vector<int> tensors{out, in, w.weight, w.scales, w.zeros, w.bias >= 0 ? w.bias : w.scales};
  g.add_node(g.current_op(), "q8ta_linear", kLocal1D, tensors, [=](ComputeGraph& g, Node& node) {
    const Tensor& x = g.tensor(in);
    const Tensor& wt = g.tensor(w.weight);
    if (x.dim() < 1) g.fail("the input must have rank 1 or more");
    const int64_t K = wt.sizes[1], N = wt.sizes[0];
    if (x.sizes.back() != K) g.fail("input " + sizes_str(x.sizes) + " does not fit weight " + sizes_str(wt.sizes));
    Tensor& o = g.tensor(out);
    o.sizes = x.sizes;
    o.sizes.back() = N;
    Q8taLinearParams p{};
    p.K = K, p.N = N, p.total = static_cast<int32_t>(o.numel()), p.has_bias = w.bias >= 0;
    p.x_zero_point = x_zero_point, p.out_zero_point = r.zero_point, p.out_min = r.out_min, p.out_max = r.out_max;
    p.x_scale = x_scale, p.inv_out_scale = inv_out;
    p.zero_words = index_words(g.tensor(w.zeros));  // int64 zero points: their low words
    node.set_params(p);
    node.set_groups_1d(o.numel(), kLocal1D[0]);
  });
}

// vkd_q8ta_add(a, a_scale, a_zero_point, b, b_scale, b_zero_point, out_scale, out_zero_point, out_min, out_max)
void add_q8ta_add(ComputeGraph& g, const OpArgs& a) {
  if (a.size() != 11) g.fail("expected 10 arguments and 1 output");
  const int ta = a[0], tb = a[3], out = a[10];
  for (int id : {ta, tb, out}) require_dtype(g, id, DType::Int8, "operands and output");
  Q8taAddParams base{};
  base.a_scale = scale_arg(g, a[1]), base.a_zero_point = int8_arg(g, a[2], "zero point");
  base.b_scale = scale_arg(g, a[4]), base.b_zero_point = int8_arg(g, a[5], "zero point");
  const Requant r = requant_args(g, a[6], a[7], a[8], a[9]);
  base.inv_out_scale = inverse(g, a[6]);
  base.out_zero_point = r.zero_point, base.out_min = r.out_min, base.out_max = r.out_max;
  g.add_node(g.current_op(), "q8ta_add", kLocal1D, {out, ta, tb}, [=](ComputeGraph& g, Node& node) {
    const Tensor& x = g.tensor(ta);
    const Tensor& y = g.tensor(tb);
    Tensor& o = g.tensor(out);
    o.sizes = broadcast_sizes(g, x.sizes, y.sizes);
    if (o.dim() > kMaxRank) g.fail("rank above 8");
    Q8taAddParams p = base;
    pack8(p.out_sizes, o.sizes);
    pack8(p.a_strides, broadcast_strides(x, o.sizes));
    pack8(p.b_strides, broadcast_strides(y, o.sizes));
    p.numel = static_cast<int32_t>(o.numel());
    p.rank = static_cast<int32_t>(o.dim());
    p.same_shape = x.sizes == o.sizes && y.sizes == o.sizes;
    node.set_params(p);
    node.set_groups_1d(o.numel(), kLocal1D[0]);
  });
}

}  // namespace

VKD_REGISTER_OPS(register_quantized_ops) {
  register_op("quantized_decomposed.quantize_per_tensor.default",
              [](ComputeGraph& g, const OpArgs& a) { add_convert(g, a, true); });
  register_op("quantized_decomposed.dequantize_per_tensor.default",
              [](ComputeGraph& g, const OpArgs& a) { add_convert(g, a, false); });
  register_op("et_vk.vkd_q8ta_conv2d.default", add_q8ta_conv2d);
  register_op("et_vk.vkd_q8ta_linear.default", add_q8ta_linear);
  register_op("et_vk.vkd_q8ta_add.default", add_q8ta_add);
}

}  // namespace vkd
