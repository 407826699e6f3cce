// The float16 matmul on VK_NV_cooperative_matrix2 (H100 and
// other NVIDIA devices that have it), to compare with matmul_coop.glslh:
//   out[b, m, n] = alpha * sum_k A[b, m, k] * B[b, k, n] + beta * bias[b, m, n]
// A workgroup computes one BM x BN tile as one workgroup-scope matrix, float
// accumulation. A and B slices are loaded straight from the buffers through
// tensor layouts that clamp: elements past M, N or K read as zero (no edge
// code); the store drops those past M and N. B is [K][N] (_nb) or [N][K] read
// through a transposing view (_kb, linear's weight). The epilogue (alpha, beta
// * bias with its broadcast strides) is a per-element operation before the one
// rounding to half. The host takes it only for rows and batch strides that are
// multiples of 8 halves (16-byte aligned slices), and only when forced
// (VKDELEGATE_COOPMM_TILE=c2_*): on the H100 it measured no faster than
// matmul_coop's w, w2 (matmul.cpp has the figures). Local size (256, 1, 1).
// variants-from: coopmm_variants.py
// dtypes: f16
// requires: GL_KHR_cooperative_matrix GL_NV_cooperative_matrix2 GL_KHR_memory_scope_semantics
// target-env: vulkan1.3
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer A { T a_data[]; };
layout(set = 0, binding = 2) readonly buffer B { T b_data[]; };
layout(set = 0, binding = 3) readonly buffer Bias { T bias_data[]; };
#define PARAMS_BINDING 4
#include "matmul_params.glslh"

#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>

float epilogue(const in uint r, const in uint c, const in float v, const in int m0, const in int n0, const in int bz) {
  const int m = m0 + int(r), n = n0 + int(c);
  float x = p.alpha * v;
  const bool stored = m < p.M && n < p.N;  // no branch around the activation (matmul_coop.glslh)
  if (p.has_bias != 0 && stored) x += p.beta * float(bias_data[bz * p.bias_sb + m * p.bias_sm + n * p.bias_sn]);
  return epilogue_tail(x, stored ? bz * p.c_sb + m * p.N + n : 0);
}

void main() {
  // Workgroup order as in matmul_coop.glslh (runs of group_m tile rows).
  int tile_m = int(gl_WorkGroupID.y), tile_n = int(gl_WorkGroupID.x);
  if (p.group_m > 0) {
    const int gx = int(gl_NumWorkGroups.x), gy = int(gl_NumWorkGroups.y);
    const int id = tile_m * gx + tile_n;
    const int per_group = p.group_m * gx;
    const int first = (id / per_group) * p.group_m;
    const int rows = min(gy - first, p.group_m);
    tile_m = first + (id % per_group) % rows;
    tile_n = (id % per_group) / rows;
  }
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const int bz = int(gl_WorkGroupID.z);

  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> la =
      createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  la = setTensorLayoutDimensionNV(la, p.M, p.K);
  la = setTensorLayoutStrideNV(la, p.a_sm, 1);
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lb =
      createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
#if B_KMAJOR
  lb = setTensorLayoutDimensionNV(lb, p.N, p.K);
  lb = setTensorLayoutStrideNV(lb, p.b_sn, 1);
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
#else
  lb = setTensorLayoutDimensionNV(lb, p.K, p.N);
  lb = setTensorLayoutStrideNV(lb, p.b_sk, 1);
#endif
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lc =
      createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  lc = setTensorLayoutDimensionNV(lc, p.M, p.N);
  lc = setTensorLayoutStrideNV(lc, p.N, 1);

  ACC acc = ACC(0.0);
  const uint a_base = uint(bz * p.a_sb), b_base = uint(bz * p.b_sb);
  for (int k0 = 0; k0 < p.K; k0 += BK) {
    coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
    coopMatLoadTensorNV(ma, a_data, a_base, sliceTensorLayoutNV(la, m0, BM, k0, BK));
    coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
#if B_KMAJOR
    coopMatLoadTensorNV(mb, b_data, b_base, sliceTensorLayoutNV(lb, n0, BN, k0, BK), transposed);
#else
    coopMatLoadTensorNV(mb, b_data, b_base, sliceTensorLayoutNV(lb, k0, BK, n0, BN));
#endif
    acc = coopMatMulAdd(ma, mb, acc);
  }
  coopMatPerElementNV(acc, acc, epilogue, m0, n0, bz);
  coopmat<T, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> o =
      coopmat<T, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(acc);
  coopMatStoreTensorNV(o, out_data, uint(bz * p.c_sb), sliceTensorLayoutNV(lc, m0, BM, n0, BN));
}
