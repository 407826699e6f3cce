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
#include "coopmm_variants.h"  // VKD_COOPMM_VARIANT_ROWS, generated from glsl/coopmm_variants.py

namespace vkd {

// A product C[batch, M, N] = A[batch, M, K] x B[batch, K, N], strides in elements.
struct MatmulProblem {
  DType dtype = DType::Float32;
  int64_t M = 0, N = 0, K = 0, batch = 1;
  int64_t a_sb = 0, a_sm = 0, a_sk = 1;
  int64_t b_sb = 0, b_sk = 0, b_sn = 1;
  int64_t c_sb = 0;
  // A layer norm of A's rows over K before the product (et_vk.vkd_ln_linear): only matmul_coop's
  // _kb_ln variants apply it, for 16-byte rows of A; where none fits, no cooperative-matrix kernel.
  bool ln = false;
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

// The tiles of the cooperative-matrix kernels (coopmat_tile.glslh: matmul_coop.glslh,
// qlinear_coop.glslh). Per variant: warps
// WM x WN, 16x16 accumulators per warp FM x FN, shared stages, BK, and ks groups
// of those warps splitting each K step.
struct CoopMmVariant {
  const char* name;
  uint32_t wm, wn, fm, fn, stages, bk;
  bool coop2 = false;  // matmul_coop2.glsl (its shared memory is the driver's)
  uint32_t ks = 1;
  uint32_t tile_m() const { return wm * fm * 16; }
  uint32_t tile_n() const { return wn * fn * 16; }
  uint32_t invocations() const { return wm * wn * ks * 32; }
  // The A and B tiles per stage, rows padded by 8 halves (the epilogue's scratch,
  // 1 KiB per warp, reuses the A tiles, grown to it where they are smaller).
  uint32_t shared_bytes(bool b_kmajor) const {
    const uint32_t b = b_kmajor ? tile_n() * (bk / 8 + 1) : bk * (tile_n() / 8 + 1);
    const uint32_t a = stages * tile_m() * (bk / 8 + 1);
    return 16 * ((a > wm * wn * ks * 64 ? a : wm * wn * ks * 64) + stages * b);
  }
};
// The tiles of glsl/coopmm_variants.py (which says what they are), through the generated header.
inline constexpr CoopMmVariant kCoopMmVariants[] = {VKD_COOPMM_VARIANT_ROWS};

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
