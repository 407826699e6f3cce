// Which kernel runs a matrix product (mm, bmm, addmm, linear): a pure function of
// the product's planned sizes and strides, the device's properties and the graph's
// settings. No GPU: tests call it through the Python module (choose_matmul).
// matmul.cpp builds the chosen kernel's nodes.
#pragma once

#include <cstdint>
#include <string>

#include "../graph/values.h"
#include "../settings.h"
#include "../vk/context.h"
#include "../vk/pipeline.h"

namespace vkd {

// A product C[batch, M, N] = A[batch, M, K] x B[batch, K, N], strides in elements.
struct MatmulProblem {
  DType dtype = DType::Float32;
  int64_t M = 0, N = 0, K = 0, batch = 1;
  int64_t a_sb = 0, a_sm = 0, a_sk = 1;
  int64_t b_sb = 0, b_sk = 0, b_sn = 1;
  int64_t c_sb = 0;
};

enum class MatmulKernel {
  Strided,  // matmul.glsl
  Gemv,     // gemv.glsl
  Tiled,    // matmul_tiled.glsl (splits > 1: its _sk variant + matmul_splitk_reduce.glsl)
  Coop,     // matmul_coop.glsl (and its _emu twin), matmul_coop2.glsl
};

struct MatmulChoice {
  MatmulKernel kernel = MatmulKernel::Strided;
  // Strided, Gemv: the base name ("matmul", "gemv"), whose dtype and subgroup
  // variant the op picks (op_utils.h: variant); Tiled, Coop: the shader.
  std::string shader;
  LocalSize local{1, 1, 1};
  uint32_t tile_m = 1, tile_n = 1;  // output rows and columns per workgroup
  int64_t splits = 1;               // Tiled: slices of K over workgroups
  int32_t group_m = 0;              // Tiled, Coop: workgroups swizzled in groups of this many tile rows
  bool coop2 = false;               // matmul_coop2.glsl: K and N must stay multiples of 8
};

MatmulChoice choose_matmul(const MatmulProblem& p, const DeviceInfo& device, const Settings& settings);

// matmul_coop2 reads slices at 16-byte aligned starts: rows of A, B and the
// output, and batch strides, in multiples of 8 halves.
bool coop2_aligned(int64_t K, int64_t N, int64_t a_sm, int64_t a_sb, int64_t b_sb, int64_t b_row, int64_t c_sb);

// Cooperative-matrix kernels (coopconv, coopmm): `base` on a device with 16x16x16
// f16->f32 subgroup matrices and subgroups of 32 (the setting NO_COOPMAT turns
// them off), `base`_emu (the twin with loops instead of matrices, any device)
// with COOPMAT_EMULATE, else "" (the float kernels).
std::string coopmat_f16_base(const DeviceInfo& device, const Settings& settings, const std::string& base);

}  // namespace vkd
