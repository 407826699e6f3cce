// Resampling: upsample_nearest2d, upsample_bilinear2d, pixel_shuffle, pixel_unshuffle,
// grid_sampler_2d.
#include <cmath>
#include <optional>

#include "op_utils.h"
#include "shader_params.h"  // UpsampleParams, ShuffleParams, GridSamplerParams: glsl/upsample2d, pixel_shuffle, grid_sampler2d.glsl

namespace vkd {

namespace {


// How to size the output: an explicit size, or scale factors of the input.
struct Resize {
  std::optional<std::pair<int64_t, int64_t>> size;
  std::optional<std::pair<double, double>> scales;
};

Resize resize_args(ComputeGraph& g, int output_size, int scale_factors) {
  Resize r;
  if (!g.is_null(output_size)) {
    const IntList& v = g.get_int_list(output_size);
    if (v.size() != 2 || v[0] < 1 || v[1] < 1) g.fail("output_size must hold 2 positive sizes");
    r.size = {{v[0], v[1]}};
  }
  if (!g.is_null(scale_factors)) {
    const Value& val = g.value(scale_factors);
    if (const auto* d = std::get_if<DoubleList>(&val)) {
      if (d->size() != 2 || !((*d)[0] > 0) || !((*d)[1] > 0)) g.fail("scale_factors must hold 2 positive values");
      r.scales = {{(*d)[0], (*d)[1]}};
    } else {
      g.fail("scale_factors must be a list of floats");
    }
  }
  if (r.size.has_value() == r.scales.has_value()) g.fail("give exactly one of output_size and scale_factors");
  return r;
}

// ATen's mapping from output to input coordinates along one dim.
float coordinate_scale(int64_t in, int64_t out, std::optional<double> scale, bool align_corners) {
  if (align_corners) return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.f;
  return scale ? static_cast<float>(1.0 / *scale) : static_cast<float>(in) / static_cast<float>(out);
}

void add_upsample(ComputeGraph& g, int in, int out, Resize r, bool bilinear, bool align_corners) {
  require_float_same(g, {in, out});
  g.add_node(g.current_op(), variant(g, bilinear ? "upsample_bilinear2d" : "upsample_nearest2d", in), kLocal1D, {out, in},
             [=](ComputeGraph& g, Node& node) {
               const Tensor& x = g.tensor(in);
               if (x.dim() != 4) g.fail("input must be [N, C, H, W], got " + sizes_str(x.sizes));
               const int64_t H = x.sizes[2], W = x.sizes[3];
               int64_t OH, OW;
               if (r.size) {
                 std::tie(OH, OW) = *r.size;
               } else {
                 const double oh = std::floor(H * r.scales->first), ow = std::floor(W * r.scales->second);
                 // Scales come from the blob: a size past 2^40 (or NaN) is no size.
                 if (!(oh < 0x1p40 && ow < 0x1p40)) g.fail("the scales give an output too large");
                 OH = static_cast<int64_t>(oh), OW = static_cast<int64_t>(ow);
               }
               if (OH < 1 || OW < 1) g.fail("the output of input " + sizes_str(x.sizes) + " would be empty");
               Tensor& o = g.tensor(out);
               o.sizes = {x.sizes[0], x.sizes[1], OH, OW};
               std::optional<double> sh, sw;
               if (r.scales) sh = r.scales->first, sw = r.scales->second;
               UpsampleParams p{};
               p.total = static_cast<int32_t>(o.numel());
               p.H = H, p.W = W, p.OH = OH, p.OW = OW;
               p.align_corners = align_corners;
               p.scale_h = coordinate_scale(H, OH, sh, align_corners);
               p.scale_w = coordinate_scale(W, OW, sw, align_corners);
               node.set_params(p);
               node.set_groups_1d(o.numel(), kLocal1D[0]);
             });
}


void add_pixel_shuffle(ComputeGraph& g, int in, int out, int64_t r, bool shuffle) {
  require_same_dtype(g, {in, out});
  if (r < 1) g.fail("the factor must be positive");
  g.add_node(g.current_op(), variant(g, shuffle ? "pixel_shuffle" : "pixel_unshuffle", out), kLocal1D, {out, in},
             [=](ComputeGraph& g, Node& node) {
               const Tensor& x = g.tensor(in);
               if (x.dim() < 3) g.fail("input must have rank 3 or more");
               const int64_t C = x.sizes[x.dim() - 3], H = x.sizes[x.dim() - 2], W = x.sizes[x.dim() - 1];
               Sizes os = x.sizes;
               const int64_t r2 = checked_mul(r, r);  // r comes from the blob: any int64
               if (shuffle) {
                 if (C % r2 != 0) g.fail("channels " + std::to_string(C) + " are not divisible by factor^2");
                 os[x.dim() - 3] = C / r2, os[x.dim() - 2] = checked_mul(H, r), os[x.dim() - 1] = checked_mul(W, r);
               } else {
                 if (H % r != 0 || W % r != 0) g.fail("height and width must be divisible by the factor");
                 os[x.dim() - 3] = checked_mul(C, r2), os[x.dim() - 2] = H / r, os[x.dim() - 1] = W / r;
               }
               Tensor& o = g.tensor(out);
               o.sizes = os;
               ShuffleParams p{};
               p.total = static_cast<int32_t>(o.numel());
               p.OC = os[x.dim() - 3], p.OH = os[x.dim() - 2], p.OW = os[x.dim() - 1], p.r = r;
               node.set_params(p);
               node.set_groups_1d(o.numel(), kLocal1D[0]);
             });
}



// grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)
void add_grid_sampler(ComputeGraph& g, const OpArgs& a) {
  const int in = a.at(0), grid = a.at(1), out = a.back();
  require_float_same(g, {in, grid, out});
  const int64_t mode = g.get_int(a.at(2)), padding = g.get_int(a.at(3));
  const bool align_corners = g.get_bool(a.at(4));
  if (mode != 0 && mode != 1) g.fail("interpolation mode " + std::to_string(mode) + " is not supported (bilinear and nearest only)");
  if (padding < 0 || padding > 2) g.fail("unknown padding mode " + std::to_string(padding));
  g.add_node(g.current_op(), variant(g, "grid_sampler2d", in), kLocal1D, {out, in, grid}, [=](ComputeGraph& g, Node& node) {
    const Tensor& x = g.tensor(in);
    const Tensor& gr = g.tensor(grid);
    if (x.dim() != 4 || gr.dim() != 4 || gr.sizes[3] != 2 || gr.sizes[0] != x.sizes[0]) {
      g.fail("input " + sizes_str(x.sizes) + " and grid " + sizes_str(gr.sizes) + " must be [N, C, H, W] and [N, OH, OW, 2]");
    }
    Tensor& o = g.tensor(out);
    o.sizes = {x.sizes[0], x.sizes[1], gr.sizes[1], gr.sizes[2]};
    GridSamplerParams p{};
    p.total = static_cast<int32_t>(o.numel());
    p.C = x.sizes[1], p.H = x.sizes[2], p.W = x.sizes[3];
    p.OH = gr.sizes[1], p.OW = gr.sizes[2];
    p.nearest = mode == 1, p.padding_mode = padding, p.align_corners = align_corners;
    node.set_params(p);
    node.set_groups_1d(o.numel(), kLocal1D[0]);
  });
}

}  // namespace

VKD_REGISTER_OPS(register_sample_ops) {
  // upsample_nearest2d.vec(input, output_size?, scale_factors?)
  register_op("aten.upsample_nearest2d.vec", [](ComputeGraph& g, const OpArgs& a) {
    add_upsample(g, a.at(0), a.back(), resize_args(g, a.at(1), a.at(2)), false, false);
  });
  // upsample_bilinear2d.vec(input, output_size?, align_corners, scale_factors?)
  register_op("aten.upsample_bilinear2d.vec", [](ComputeGraph& g, const OpArgs& a) {
    add_upsample(g, a.at(0), a.back(), resize_args(g, a.at(1), a.at(3)), true, g.get_bool(a.at(2)));
  });
  register_op("aten.grid_sampler_2d.default", add_grid_sampler);
  register_op("aten.pixel_shuffle.default", [](ComputeGraph& g, const OpArgs& a) {
    add_pixel_shuffle(g, a.at(0), a.back(), g.get_int(a.at(1)), true);
  });
  register_op("aten.pixel_unshuffle.default", [](ComputeGraph& g, const OpArgs& a) {
    add_pixel_shuffle(g, a.at(0), a.back(), g.get_int(a.at(1)), false);
  });
}

}  // namespace vkd
