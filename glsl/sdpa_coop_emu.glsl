// sdpa_coop with the matrix operations emulated by loops over shared memory (no extension), so
// the kernel's tiling and indexing are tested on devices without cooperative matrices
// (VKDELEGATE_COOPMAT_EMULATE=1).
// dtypes: f16
// variant sdpa_coop_emu_d64: MAX_D=64
// variant sdpa_coop_emu_d128: MAX_D=128
#version 450
#define EMULATE 1
#include "sdpa_coop.glslh"
