// Float32 tiled matmul, split-K: the second pass of a matmul_tiled.glsl product split
// along K (runtime/ops/matmul.cpp). The first wrote each slice's raw partial sums
// into a scratch [splits, batch * M * N]; this one adds the slices in order and
// applies the epilogue:
//   out[b, m, n] = alpha * sum_s part[s, b, m, n] + beta * bias[b, m, n]
// Each invocation makes 4 consecutive outputs of a row (16-byte loads and stores
// when N is a multiple of 4).
// The _res variant adds a residual (matmul_params.glslh) after the activation.
// variant matmul_splitk_reduce: RESIDUAL=0
// variant matmul_splitk_reduce_res: RESIDUAL=1
// dtypes: f32
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
layout(set = 0, binding = 0) writeonly buffer Out4 { vec4 out4[]; };
layout(set = 0, binding = 1) restrict readonly buffer Part { float part_data[]; };
layout(set = 0, binding = 1) restrict readonly buffer Part4 { vec4 part4[]; };
layout(set = 0, binding = 2) restrict readonly buffer Bias { float bias_data[]; };
#define PARAMS_BINDING 3
#define MATMUL_SPLITK_REDUCE
#include "matmul_params.glslh"

void main() {
  const int row_quads = (p.N + 3) / 4;
  const int q = int(flat_index());
  if (q >= p.batch * p.M * row_quads) return;
  const int row = q / row_quads;  // b * M + m
  const int n = (q % row_quads) * 4;
  const int o = row * p.N + n;    // the output's (and each slice's) offset
  const int slice = p.batch * p.M * p.N;
  const int b = row / p.M, m = row % p.M;
  if (p.aligned != 0) {
    vec4 acc = part4[o >> 2];
    for (int s = 1; s < p.splits; ++s) acc += part4[(s * slice + o) >> 2];
    acc *= p.alpha;
    if (p.has_bias != 0) {
      for (int j = 0; j < 4; ++j) acc[j] += p.beta * bias_data[b * p.bias_sb + m * p.bias_sm + (n + j) * p.bias_sn];
    }
    if (p.act != 0 || RESIDUAL != 0) {
      for (int j = 0; j < 4; ++j) acc[j] = epilogue_tail(acc[j], o + j);
    }
    out4[o >> 2] = acc;
    return;
  }
  for (int j = 0; j < 4 && n + j < p.N; ++j) {
    float acc = part_data[o + j];
    for (int s = 1; s < p.splits; ++s) acc += part_data[s * slice + o + j];
    acc *= p.alpha;
    if (p.has_bias != 0) acc += p.beta * bias_data[b * p.bias_sb + m * p.bias_sm + (n + j) * p.bias_sn];
    out_data[o + j] = epilogue_tail(acc, o + j);
  }
}
