// The cooperative-matrix float16 matmul (matmul_coop.glslh says
// how it works). Local size (NT, 1, 1), NT = WM*WN*32; tile BM x BN =
// (WM*FM*16) x (WN*FN*16); _nb: B contiguous in n (mm, bmm, addmm), _kb: in k
// (linear). STAGES=1 for tiles whose two shared buffers would not fit 48 KiB.
// variant matmul_coop_l_nb: WM=2 WN=4 FM=4 FN=2 STAGES=2 BK=32 B_KMAJOR=0
// variant matmul_coop_l_kb: WM=2 WN=4 FM=4 FN=2 STAGES=2 BK=32 B_KMAJOR=1
// variant matmul_coop_lt_nb: WM=4 WN=2 FM=2 FN=4 STAGES=2 BK=32 B_KMAJOR=0
// variant matmul_coop_lt_kb: WM=4 WN=2 FM=2 FN=4 STAGES=2 BK=32 B_KMAJOR=1
// variant matmul_coop_l1_nb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=32 B_KMAJOR=0
// variant matmul_coop_l1_kb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=32 B_KMAJOR=1
// variant matmul_coop_lt1_nb: WM=4 WN=2 FM=2 FN=4 STAGES=1 BK=32 B_KMAJOR=0
// variant matmul_coop_lt1_kb: WM=4 WN=2 FM=2 FN=4 STAGES=1 BK=32 B_KMAJOR=1
// variant matmul_coop_w_nb: WM=2 WN=4 FM=4 FN=4 STAGES=1 BK=32 B_KMAJOR=0
// variant matmul_coop_w_kb: WM=2 WN=4 FM=4 FN=4 STAGES=1 BK=32 B_KMAJOR=1
// variant matmul_coop_w16_nb: WM=2 WN=4 FM=4 FN=4 STAGES=2 BK=16 B_KMAJOR=0
// variant matmul_coop_w16_kb: WM=2 WN=4 FM=4 FN=4 STAGES=2 BK=16 B_KMAJOR=1
// variant matmul_coop_wt_nb: WM=4 WN=2 FM=4 FN=4 STAGES=1 BK=32 B_KMAJOR=0
// variant matmul_coop_wt_kb: WM=4 WN=2 FM=4 FN=4 STAGES=1 BK=32 B_KMAJOR=1
// variant matmul_coop_q_nb: WM=2 WN=2 FM=4 FN=4 STAGES=2 BK=32 B_KMAJOR=0
// variant matmul_coop_q_kb: WM=2 WN=2 FM=4 FN=4 STAGES=2 BK=32 B_KMAJOR=1
// variant matmul_coop_q64_nb: WM=2 WN=2 FM=4 FN=4 STAGES=1 BK=64 B_KMAJOR=0
// variant matmul_coop_q64_kb: WM=2 WN=2 FM=4 FN=4 STAGES=1 BK=64 B_KMAJOR=1
// variant matmul_coop_l64_nb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=64 B_KMAJOR=0
// variant matmul_coop_l64_kb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=64 B_KMAJOR=1
// variant matmul_coop_w2_nb: WM=2 WN=4 FM=4 FN=4 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=0
// variant matmul_coop_w2_kb: WM=2 WN=4 FM=4 FN=4 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=1
// variant matmul_coop_wt2_nb: WM=4 WN=2 FM=4 FN=4 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=0
// variant matmul_coop_wt2_kb: WM=4 WN=2 FM=4 FN=4 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=1
// variant matmul_coop_l2_nb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=0
// variant matmul_coop_l2_kb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=1
// variant matmul_coop_l64p2_nb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=64 PREFETCH=2 B_KMAJOR=0
// variant matmul_coop_l64p2_kb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=64 PREFETCH=2 B_KMAJOR=1
// variant matmul_coop_m_nb: WM=2 WN=2 FM=2 FN=2 STAGES=2 BK=32 B_KMAJOR=0
// variant matmul_coop_m_kb: WM=2 WN=2 FM=2 FN=2 STAGES=2 BK=32 B_KMAJOR=1
// dtypes: f16
// requires: GL_KHR_cooperative_matrix GL_KHR_memory_scope_semantics GL_KHR_shader_subgroup_basic
// target-env: vulkan1.3
#version 450
#define EMULATE 0
#include "matmul_coop.glslh"
