// The cooperative-matrix float16 matmul (matmul_coop.glslh says
// how it works). Local size (NT, 1, 1), NT = WM*WN*32; tile BM x BN =
// (WM*FM*16) x (WN*FN*16); _nb: B contiguous in n (mm, bmm, addmm), _kb: in k
// (linear). STAGES=1 for tiles whose two shared buffers would not fit 48 KiB.
// variants-from: coopmm_variants.py
// dtypes: f16
// requires: GL_KHR_cooperative_matrix GL_KHR_memory_scope_semantics GL_KHR_shader_subgroup_basic
// target-env: vulkan1.3
#version 450
#define EMULATE 0
#include "matmul_coop.glslh"
