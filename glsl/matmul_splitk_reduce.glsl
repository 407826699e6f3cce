// Float32 tiled matmul, split-K: the second pass of a matmul_tiled.glsl product split
// along K (runtime/ops/matmul.cpp). The first wrote each slice's raw partial sums
// into a scratch [splits, batch * M * N]; this one adds the slices in order and
// applies the epilogue:
//   out[b, m, n] = alpha * sum_s part[s, b, m, n] + beta * bias[b, m, n]
// Each invocation makes 4 consecutive outputs of a row (16-byte loads and stores
// when N is a multiple of 4).
// The _res variant adds a residual (matmul_params.glslh) after the activation.
// The _ln variants (LN_OUT=1) also layer-norm each output row into a second tensor: the
// layer norm before the next linear (et_vk.vkd_ln_linear) whose input this product makes,
// folded into this pass by the runtime (matmul.cpp: fold_norm_into_reduce). One workgroup
// a row of at most 4 * LN_QUADS * its size outputs, kept in registers; mean, then the
// variance around it (as layer_norm.glsl).
// variant matmul_splitk_reduce: RESIDUAL=0 LN_OUT=0
// variant matmul_splitk_reduce_res: RESIDUAL=1 LN_OUT=0
// variant matmul_splitk_reduce_ln: RESIDUAL=0 LN_OUT=1
// variant matmul_splitk_reduce_res_ln: RESIDUAL=1 LN_OUT=1
// subgroup-variants
// dtypes: f32
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"
#if LN_OUT
#include "workgroup_reduce.glslh"
#endif

layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
layout(set = 0, binding = 0) writeonly buffer Out4 { vec4 out4[]; };
layout(set = 0, binding = 1) restrict readonly buffer Part { float part_data[]; };
layout(set = 0, binding = 1) restrict readonly buffer Part4 { vec4 part4[]; };
layout(set = 0, binding = 2) restrict readonly buffer Bias { float bias_data[]; };
#if LN_OUT
layout(set = 0, binding = 3) writeonly buffer Normed { float normed_data[]; };
// The norm's weight and bias (bound to the scratch where absent; p.ln_affine says which are).
layout(set = 0, binding = 4) restrict readonly buffer LnWeight { float ln_w[]; };
layout(set = 0, binding = 5) restrict readonly buffer LnBias { float ln_b[]; };
#define PARAMS_BINDING 6
#else
#define PARAMS_BINDING 3
#endif
#define MATMUL_SPLITK_REDUCE
#include "matmul_params.glslh"

// The 4 outputs of row `row` (b * M + m) from column n: the slices' sums in order, then the epilogue.
vec4 reduce4(int row, int n) {
  const int o = row * p.N + n;  // the output's (and each slice's) offset
  const int slice = p.batch * p.M * p.N;
  const int b = row / p.M, m = row % p.M;
  vec4 acc = vec4(0.0);
  if (p.aligned != 0) {
    acc = part4[o >> 2];
    for (int s = 1; s < p.splits; ++s) acc += part4[(s * slice + o) >> 2];
  } else {
    for (int j = 0; j < 4 && n + j < p.N; ++j) {
      acc[j] = part_data[o + j];
      for (int s = 1; s < p.splits; ++s) acc[j] += part_data[s * slice + o + j];
    }
  }
  acc *= p.alpha;
  for (int j = 0; j < 4 && n + j < p.N; ++j) {
    if (p.has_bias != 0) acc[j] += p.beta * bias_data[b * p.bias_sb + m * p.bias_sm + (n + j) * p.bias_sn];
    acc[j] = epilogue_tail(acc[j], o + j);
  }
  return acc;
}

void store4(int o, int n, vec4 v) {
  if (p.aligned != 0) {
    out4[o >> 2] = v;
    return;
  }
  for (int j = 0; j < 4 && n + j < p.N; ++j) out_data[o + j] = v[j];
}

#if LN_OUT
#define LN_QUADS 4  // a row's 4-output groups per invocation (the host folds rows up to 4 * 4 * 64)

void main() {
  const int row = int(flat_group());
  if (row >= p.batch * p.M) return;  // uniform across the workgroup
  const int t = int(gl_LocalInvocationID.x), wg = int(gl_WorkGroupSize.x);
  const int row_quads = (p.N + 3) / 4;
  vec4 v[LN_QUADS];
  float s = 0.0;
  [[unroll]] for (int i = 0; i < LN_QUADS; ++i) {
    const int n = (t + i * wg) * 4;
    v[i] = vec4(0.0);
    if (n < p.N) {
      v[i] = reduce4(row, n);
      store4(row * p.N + n, n, v[i]);
      for (int j = 0; j < 4 && n + j < p.N; ++j) s += v[i][j];
    }
  }
  const float mean = workgroup_sum(s) / float(p.N);
  s = 0.0;
  [[unroll]] for (int i = 0; i < LN_QUADS; ++i) {
    const int n = (t + i * wg) * 4;
    for (int j = 0; j < 4 && n + j < p.N; ++j) {
      const float d = v[i][j] - mean;
      s += d * d;
    }
  }
  const float rstd = inversesqrt(workgroup_sum(s) / float(p.N) + p.ln_eps);
  [[unroll]] for (int i = 0; i < LN_QUADS; ++i) {
    const int n = (t + i * wg) * 4;
    for (int j = 0; j < 4 && n + j < p.N; ++j) {
      float y = (v[i][j] - mean) * rstd;
      if ((p.ln_affine & 1) != 0) y *= ln_w[n + j];
      if ((p.ln_affine & 2) != 0) y += ln_b[n + j];
      normed_data[row * p.N + n + j] = y;
    }
  }
}
#else
void main() {
  const int row_quads = (p.N + 3) / 4;
  const int q = int(flat_index());
  if (q >= p.batch * p.M * row_quads) return;
  const int row = q / row_quads;  // b * M + m
  const int n = (q % row_quads) * 4;
  store4(row * p.N + n, n, reduce4(row, n));
}
#endif
