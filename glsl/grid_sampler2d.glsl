// grid_sampler_2d: out[n, c, h, w] samples input[n, c] at grid[n, h, w] = (x, y)
// in [-1, 1]; bilinear or nearest; zeros, border or reflection padding.
// One invocation per output element.
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
layout(set = 0, binding = 2) readonly buffer Grid { T grid_data[]; };
// params-struct: GridSamplerParams
layout(set = 0, binding = 3) uniform Params {
  int total, C, H, W;
  int OH, OW, nearest, padding_mode;  // padding 0 zeros, 1 border, 2 reflection
  int align_corners, pad0, pad1, pad2;
} p;

float reflect_coordinate(float x, float twice_low, float twice_high) {
  if (twice_low == twice_high) return 0.0;
  const float lo = twice_low / 2.0;
  const float span = (twice_high - twice_low) / 2.0;
  x = abs(x - lo);
  const float extra = mod(x, span);
  const float flips = floor(x / span);
  return mod(flips, 2.0) == 0.0 ? extra + lo : span - extra + lo;
}

float source_index(float coord, int size) {
  float x = p.align_corners != 0 ? (coord + 1.0) / 2.0 * float(size - 1)
                                 : ((coord + 1.0) * float(size) - 1.0) / 2.0;
  if (p.padding_mode == 2) {
    x = p.align_corners != 0 ? reflect_coordinate(x, 0.0, 2.0 * float(size - 1))
                             : reflect_coordinate(x, -1.0, 2.0 * float(size) - 1.0);
  }
  if (p.padding_mode != 0) x = clamp(x, 0.0, float(size - 1));
  // Like PyTorch, NaN and infinities sample far outside the input.
  return (isnan(x) || isinf(x)) ? -100.0 : x;
}

float at(int base, int y, int x) {
  return (y >= 0 && y < p.H && x >= 0 && x < p.W) ? in_data[base + y * p.W + x] : 0.0;
}

void main() {
  const int i = int(flat_index());
  if (i >= p.total) return;
  const int ow = i % p.OW;
  const int oh = (i / p.OW) % p.OH;
  const int c = (i / (p.OW * p.OH)) % p.C;
  const int n = i / (p.OW * p.OH * p.C);
  const int g = ((n * p.OH + oh) * p.OW + ow) * 2;
  const float x = source_index(grid_data[g], p.W);
  const float y = source_index(grid_data[g + 1], p.H);
  const int base = (n * p.C + c) * p.H * p.W;
  if (p.nearest != 0) {
    out_data[i] = T(at(base, int(roundEven(y)), int(roundEven(x))));
    return;
  }
  const float x0 = floor(x), y0 = floor(y);
  const float fx = x - x0, fy = y - y0;
  const int ix = int(x0), iy = int(y0);
  out_data[i] = T(at(base, iy, ix) * (1.0 - fx) * (1.0 - fy) + at(base, iy, ix + 1) * fx * (1.0 - fy) +
                  at(base, iy + 1, ix) * (1.0 - fx) * fy + at(base, iy + 1, ix + 1) * fx * fy);
}
