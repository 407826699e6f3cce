// qlinear_coop with the matrix operations emulated by loops over shared memory
// (no extension), so the kernel's tiling, dequantization and indexing are tested
// on devices without cooperative matrices (VKDELEGATE_COOPMAT_EMULATE=1).
// variants-from: coopmm_variants.py
#version 450
#define EMULATE 1
#include "qlinear_coop.glslh"
