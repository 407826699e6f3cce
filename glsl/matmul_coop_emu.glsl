// matmul_coop with the matrix operations emulated by loops over
// shared memory (no extension), so the kernel's tiling and indexing are tested
// on devices without cooperative matrices (VKDELEGATE_COOPMAT_EMULATE=1).
// variant matmul_coop_emu_l_nb: WM=2 WN=4 FM=4 FN=2 STAGES=2 BK=32 B_KMAJOR=0
// variant matmul_coop_emu_l_kb: WM=2 WN=4 FM=4 FN=2 STAGES=2 BK=32 B_KMAJOR=1
// variant matmul_coop_emu_lt_nb: WM=4 WN=2 FM=2 FN=4 STAGES=2 BK=32 B_KMAJOR=0
// variant matmul_coop_emu_lt_kb: WM=4 WN=2 FM=2 FN=4 STAGES=2 BK=32 B_KMAJOR=1
// variant matmul_coop_emu_l1_nb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=32 B_KMAJOR=0
// variant matmul_coop_emu_l1_kb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=32 B_KMAJOR=1
// variant matmul_coop_emu_lt1_nb: WM=4 WN=2 FM=2 FN=4 STAGES=1 BK=32 B_KMAJOR=0
// variant matmul_coop_emu_lt1_kb: WM=4 WN=2 FM=2 FN=4 STAGES=1 BK=32 B_KMAJOR=1
// variant matmul_coop_emu_w_nb: WM=2 WN=4 FM=4 FN=4 STAGES=1 BK=32 B_KMAJOR=0
// variant matmul_coop_emu_w_kb: WM=2 WN=4 FM=4 FN=4 STAGES=1 BK=32 B_KMAJOR=1
// variant matmul_coop_emu_w16_nb: WM=2 WN=4 FM=4 FN=4 STAGES=2 BK=16 B_KMAJOR=0
// variant matmul_coop_emu_w16_kb: WM=2 WN=4 FM=4 FN=4 STAGES=2 BK=16 B_KMAJOR=1
// variant matmul_coop_emu_wt_nb: WM=4 WN=2 FM=4 FN=4 STAGES=1 BK=32 B_KMAJOR=0
// variant matmul_coop_emu_wt_kb: WM=4 WN=2 FM=4 FN=4 STAGES=1 BK=32 B_KMAJOR=1
// variant matmul_coop_emu_q_nb: WM=2 WN=2 FM=4 FN=4 STAGES=2 BK=32 B_KMAJOR=0
// variant matmul_coop_emu_q_kb: WM=2 WN=2 FM=4 FN=4 STAGES=2 BK=32 B_KMAJOR=1
// variant matmul_coop_emu_q64_nb: WM=2 WN=2 FM=4 FN=4 STAGES=1 BK=64 B_KMAJOR=0
// variant matmul_coop_emu_q64_kb: WM=2 WN=2 FM=4 FN=4 STAGES=1 BK=64 B_KMAJOR=1
// variant matmul_coop_emu_l64_nb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=64 B_KMAJOR=0
// variant matmul_coop_emu_l64_kb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=64 B_KMAJOR=1
// variant matmul_coop_emu_w2_nb: WM=2 WN=4 FM=4 FN=4 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=0
// variant matmul_coop_emu_w2_kb: WM=2 WN=4 FM=4 FN=4 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=1
// variant matmul_coop_emu_wt2_nb: WM=4 WN=2 FM=4 FN=4 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=0
// variant matmul_coop_emu_wt2_kb: WM=4 WN=2 FM=4 FN=4 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=1
// variant matmul_coop_emu_l2_nb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=0
// variant matmul_coop_emu_l2_kb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=32 PREFETCH=2 B_KMAJOR=1
// variant matmul_coop_emu_l64p2_nb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=64 PREFETCH=2 B_KMAJOR=0
// variant matmul_coop_emu_l64p2_kb: WM=2 WN=4 FM=4 FN=2 STAGES=1 BK=64 PREFETCH=2 B_KMAJOR=1
// variant matmul_coop_emu_m_nb: WM=2 WN=2 FM=2 FN=2 STAGES=2 BK=32 B_KMAJOR=0
// variant matmul_coop_emu_m_kb: WM=2 WN=2 FM=2 FN=2 STAGES=2 BK=32 B_KMAJOR=1
// dtypes: f16
#version 450
#define EMULATE 1
#include "matmul_coop.glslh"
