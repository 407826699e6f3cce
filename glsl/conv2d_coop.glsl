// The cooperative-matrix implicit-GEMM convolution
// (conv2d_coop.glslh says how it works). Local size (NT, 1, 1), NT = WM*WN*S*32;
// _sk: K split over workgroups too (SPLITK, see there).
// variant conv2d_coop_l: WM=2 WN=2 S=1 FM=2 FN=2 KSUB=2
// variant conv2d_coop_m: WM=2 WN=2 S=2 FM=1 FN=1 KSUB=2
// variant conv2d_coop_s: WM=1 WN=1 S=8 FM=1 FN=1 KSUB=8
// variant conv2d_coop_l_sk: WM=2 WN=2 S=1 FM=2 FN=2 KSUB=2 SPLITK=1
// variant conv2d_coop_m_sk: WM=2 WN=2 S=2 FM=1 FN=1 KSUB=2 SPLITK=1
// variant conv2d_coop_s_sk: WM=1 WN=1 S=8 FM=1 FN=1 KSUB=8 SPLITK=1
// dtypes: f16
// requires: GL_KHR_cooperative_matrix GL_KHR_memory_scope_semantics GL_KHR_shader_subgroup_basic
// target-env: vulkan1.3
#version 450
#define EMULATE 0
#include "conv2d_coop.glslh"
