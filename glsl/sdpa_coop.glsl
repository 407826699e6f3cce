// scaled_dot_product_attention over few keys on cooperative matrices (sdpa_coop.glslh says how).
// dtypes: f16
// variant sdpa_coop_d64: MAX_D=64
// variant sdpa_coop_d128: MAX_D=128
// requires: GL_KHR_cooperative_matrix GL_KHR_memory_scope_semantics GL_KHR_shader_subgroup_basic
// target-env: vulkan1.3
#version 450
#define EMULATE 0
#include "sdpa_coop.glslh"
