// conv2d_coop with the matrix operations emulated by loops
// over shared memory (no extension), so the kernel's indexing is tested on
// devices without cooperative matrices (VKDELEGATE_COOPMAT_EMULATE=1).
// variant conv2d_coop_emu_l: WM=2 WN=2 S=1 FM=2 FN=2 KSUB=2
// variant conv2d_coop_emu_m: WM=2 WN=2 S=2 FM=1 FN=1 KSUB=2
// variant conv2d_coop_emu_s: WM=1 WN=1 S=8 FM=1 FN=1 KSUB=8
// variant conv2d_coop_emu_l_sk: WM=2 WN=2 S=1 FM=2 FN=2 KSUB=2 SPLITK=1
// variant conv2d_coop_emu_m_sk: WM=2 WN=2 S=2 FM=1 FN=1 KSUB=2 SPLITK=1
// variant conv2d_coop_emu_s_sk: WM=1 WN=1 S=8 FM=1 FN=1 KSUB=8 SPLITK=1
// dtypes: f16
#version 450
#define EMULATE 1
#include "conv2d_coop.glslh"
