// The cooperative-matrix implicit-GEMM convolution
// (conv2d_coop.glslh says how it works). Local size (NT, 1, 1), NT = WM*WN*S*32;
// _sk: K split over workgroups too (SPLITK, see there).
// variants-from: conv_variants.py
// dtypes: f16
// requires: GL_KHR_cooperative_matrix GL_KHR_memory_scope_semantics GL_KHR_shader_subgroup_basic
// target-env: vulkan1.3
#version 450
#define EMULATE 0
#include "conv2d_coop.glslh"
