// 2-D pooling: max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d, on
// inputs [C, H, W] or [N, C, H, W].
#include "op_utils.h"
#include "shader_params.h"  // PoolParams: glsl/pool2d.glsl

namespace vkd {

namespace {


struct Window {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
  bool ceil_mode = false;
};

int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t dil, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

void check_window(ComputeGraph& g, const Window& w) {
  if (w.kh < 1 || w.kw < 1 || w.sh < 1 || w.sw < 1 || w.dh < 1 || w.dw < 1 || w.ph < 0 || w.pw < 0) {
    g.fail("kernel, stride and dilation must be positive and padding non-negative");
  }
  if (w.ph * 2 > w.kh || w.pw * 2 > w.kw) g.fail("padding must be at most half the kernel size");
}

void require_pool_input(ComputeGraph& g, const Tensor& x) {
  if (x.dim() != 3 && x.dim() != 4) g.fail("input must be [C, H, W] or [N, C, H, W], got " + sizes_str(x.sizes));
}

// outs: the outputs bound first; the input follows them.
void add_pool(ComputeGraph& g, const std::string& shader, std::vector<int> outs, int in, Window win,
              bool count_include_pad, int64_t divisor_override, bool adaptive, std::pair<int64_t, int64_t> out_hw) {
  require_float_same(g, {in, outs[0]});
  require_pool_input(g, g.tensor(in));
  std::vector<int> bound = outs;
  bound.push_back(in);
  g.add_node(g.current_op(), variant(g, shader, in), kLocal1D, bound, [=](ComputeGraph& g, Node& node) {
    const Tensor& x = g.tensor(in);
    require_pool_input(g, x);
    const int64_t H = x.sizes[x.dim() - 2], W = x.sizes[x.dim() - 1];
    int64_t OH, OW;
    if (adaptive) {
      OH = out_hw.first, OW = out_hw.second;
    } else {
      OH = pooled_size(H, win.kh, win.sh, win.ph, win.dh, win.ceil_mode);
      OW = pooled_size(W, win.kw, win.sw, win.pw, win.dw, win.ceil_mode);
    }
    if (OH < 1 || OW < 1) g.fail("input " + sizes_str(x.sizes) + " is too small for the pooling window");
    Sizes os = x.sizes;
    os[os.size() - 2] = OH;
    os[os.size() - 1] = OW;
    for (int o : outs) g.tensor(o).sizes = os;
    PoolParams p{};
    p.total = static_cast<int32_t>(numel_of(os));
    p.H = H, p.W = W, p.OH = OH, p.OW = OW;
    p.KH = win.kh, p.KW = win.kw, p.stride_h = win.sh, p.stride_w = win.sw;
    p.pad_h = win.ph, p.pad_w = win.pw, p.dil_h = win.dh, p.dil_w = win.dw;
    p.count_include_pad = count_include_pad;
    p.divisor_override = static_cast<int32_t>(divisor_override);
    p.index_words = outs.size() > 1 ? index_words(g.tensor(outs[1])) : 1;
    node.set_params(p);
    node.set_groups_1d(p.total, kLocal1D[0]);
  });
}

Window window_args(ComputeGraph& g, int kernel, int stride, int padding) {
  Window w;
  std::tie(w.kh, w.kw) = pair_arg(g, kernel, "kernel_size", IntPair{0, 0});
  std::tie(w.sh, w.sw) = pair_arg(g, stride, "stride", IntPair{w.kh, w.kw});
  std::tie(w.ph, w.pw) = pair_arg(g, padding, "padding", IntPair{0, 0});
  return w;
}

}  // namespace

VKD_REGISTER_OPS(register_pool_ops) {
  // max_pool2d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False) -> (out, indices)
  register_op("aten.max_pool2d_with_indices.default", [](ComputeGraph& g, const OpArgs& a) {
    if (a.size() != 8) g.fail("expected 6 arguments and 2 outputs");
    Window w = window_args(g, a[1], a[2], a[3]);
    std::tie(w.dh, w.dw) = pair_arg(g, a[4], "dilation", IntPair{1, 1});
    w.ceil_mode = g.get_bool(a[5]);
    check_window(g, w);
    if (g.tensor(a[7]).dtype != DType::Int32 && g.tensor(a[7]).dtype != DType::Int64) {
      g.fail("indices must be an int32 or int64 tensor");
    }
    add_pool(g, "max_pool2d", {a[6], a[7]}, a[0], w, false, 0, false, {0, 0});
  });
  // avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None)
  register_op("aten.avg_pool2d.default", [](ComputeGraph& g, const OpArgs& a) {
    if (a.size() != 8) g.fail("expected 7 arguments and 1 output");
    Window w = window_args(g, a[1], a[2], a[3]);
    w.ceil_mode = g.get_bool(a[4]);
    check_window(g, w);
    const int64_t divisor = g.is_null(a[6]) ? 0 : g.get_int(a[6]);
    if (!g.is_null(a[6]) && divisor == 0) g.fail("divisor_override must be non-zero");
    add_pool(g, "avg_pool2d", {a[7]}, a[0], w, g.get_bool(a[5]), divisor, false, {0, 0});
  });
  // _adaptive_avg_pool2d(self, output_size)
  register_op("aten._adaptive_avg_pool2d.default", [](ComputeGraph& g, const OpArgs& a) {
    const auto hw = pair_arg(g, a.at(1), "output_size", IntPair{0, 0});
    if (hw.first < 1 || hw.second < 1) g.fail("output_size must be positive");
    add_pool(g, "adaptive_avg_pool2d", {a.back()}, a.at(0), Window{1, 1, 1, 1, 0, 0}, false, 0, true, hw);
  });
}

}  // namespace vkd
