// The weight-only quantized linear on cooperative matrices (qlinear_coop.glslh
// says how it works), for many rows. Local size (NT, 1, 1), NT = WM*WN*32; tile
// BM x BN = (WM*FM*16) x (WN*FN*16); _b4, _b8: the weight's bits.
// variants-from: coopmm_variants.py
// requires: GL_KHR_cooperative_matrix GL_KHR_memory_scope_semantics GL_KHR_shader_subgroup_basic
// target-env: vulkan1.3
#version 450
#define EMULATE 0
#include "qlinear_coop.glslh"
