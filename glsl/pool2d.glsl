// 2-D pooling over the last two dims of a [planes, H, W] view of the input;
// one invocation per output element.
// variant max_pool2d: MAX_POOL=1
// variant avg_pool2d: AVG_POOL=1
// variant adaptive_avg_pool2d: ADAPTIVE_AVG=1
// dtypes: f32 f16
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
#ifdef MAX_POOL
layout(set = 0, binding = 1) writeonly buffer Indices { int indices_data[]; };
layout(set = 0, binding = 2) readonly buffer In { T in_data[]; };
#define PARAMS_BINDING 3
#else
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
#define PARAMS_BINDING 2
#endif
// params-struct: PoolParams
layout(set = 0, binding = PARAMS_BINDING) uniform Params {
  int total, H, W, OH;
  int OW, KH, KW, stride_h;
  int stride_w, pad_h, pad_w, dil_h;
  int dil_w, count_include_pad, divisor_override, index_words;  // index_words: per index (2: int64 storage)
} p;

void main() {
  const int i = int(flat_index());
  if (i >= p.total) return;
  const int ow = i % p.OW;
  const int oh = (i / p.OW) % p.OH;
  const int plane = i / (p.OW * p.OH);
  const int base = plane * p.H * p.W;
#if defined(MAX_POOL)
  const int h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
  float m = -1.0 / 0.0;
  int arg = -1;
  for (int kh = 0; kh < p.KH; ++kh) {
    const int h = h0 + kh * p.dil_h;
    if (h < 0 || h >= p.H) continue;
    for (int kw = 0; kw < p.KW; ++kw) {
      const int w = w0 + kw * p.dil_w;
      if (w < 0 || w >= p.W) continue;
      const float v = in_data[base + h * p.W + w];
      // NaN wins, as in PyTorch; the first of equal maxima keeps its index.
      if (arg < 0 || v > m || (isnan(v) && !isnan(m))) {
        m = v;
        arg = h * p.W + w;
      }
    }
  }
  out_data[i] = T(m);
  WRITE_INDEX(indices_data, i, p.index_words, arg);
#elif defined(AVG_POOL)
  int hs = oh * p.stride_h - p.pad_h, ws = ow * p.stride_w - p.pad_w;
  int he = min(hs + p.KH, p.H + p.pad_h), we = min(ws + p.KW, p.W + p.pad_w);
  const int pool_size = (he - hs) * (we - ws);
  hs = max(hs, 0);
  ws = max(ws, 0);
  he = min(he, p.H);
  we = min(we, p.W);
  float s = 0.0;
  for (int h = hs; h < he; ++h)
    for (int w = ws; w < we; ++w) s += in_data[base + h * p.W + w];
  const int divisor = p.divisor_override != 0 ? p.divisor_override
                      : p.count_include_pad != 0 ? pool_size : (he - hs) * (we - ws);
  out_data[i] = T(s / float(divisor));
#else
  const int hs = (oh * p.H) / p.OH, he = ((oh + 1) * p.H + p.OH - 1) / p.OH;
  const int ws = (ow * p.W) / p.OW, we = ((ow + 1) * p.W + p.OW - 1) / p.OW;
  float s = 0.0;
  for (int h = hs; h < he; ++h)
    for (int w = ws; w < we; ++w) s += in_data[base + h * p.W + w];
  out_data[i] = T(s / float((he - hs) * (we - ws)));
#endif
}
