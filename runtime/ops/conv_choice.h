// Which kernel runs a convolution: a pure function of its planned sizes, the
// device's properties and the graph's settings. No GPU: tests call it through the
// Python module (choose_conv). conv.cpp builds the chosen kernel's node.
#pragma once

#include <cstdint>
#include <string>

#include "../graph/values.h"
#include "../settings.h"
#include "../vk/context.h"
#include "../vk/pipeline.h"

namespace vkd {

// Output channels per invocation of conv2d.glsl (TOC); fewer per group take conv2d_dw.glsl.
constexpr int kConvDirectTileOC = 4;

struct ConvProblem {
  DType dtype = DType::Float32;
  bool transposed = false;
  int64_t groups = 1, batch = 1;
  int64_t icpg = 0, ocpg = 0;  // input and output channels per group
  int64_t kernel_taps = 1;     // KH * KW
  int64_t out_pixels = 0;      // OH * OW of one image (0 where the input is too small)
};

enum class ConvKernel {
  Tiled,       // conv2d_tiled.glsl (float32, groups 1)
  Coop,        // conv2d_coop.glsl and its _emu twin (float16); splits > 1: _sk + conv2d_splitk_reduce
  Gemm,        // conv2d_gemm.glsl's variants
  Transposed,  // conv_transpose2d.glsl
  Depthwise,   // conv2d_dw.glsl
  Direct,      // conv2d.glsl
};

struct ConvChoice {
  ConvKernel kernel = ConvKernel::Direct;
  // Tiled, Coop: the shader; the others: the base name, whose dtype and subgroup
  // variant the op picks (op_utils.h: variant).
  std::string shader;
  LocalSize local{64, 1, 1};
  int64_t tile_m = 0, tile_n = 0;  // Coop, Gemm: output channels and pixels per workgroup
  int64_t splits = 1;              // Coop: slices of K over workgroups
  int64_t kc = 0;                  // Coop: K per stage (slices are whole stages)
};

ConvChoice choose_conv(const ConvProblem& p, const DeviceInfo& device, const Settings& settings);

}  // namespace vkd
