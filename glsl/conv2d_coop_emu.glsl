// conv2d_coop with the matrix operations emulated by loops
// over shared memory (no extension), so the kernel's indexing is tested on
// devices without cooperative matrices (VKDELEGATE_COOPMAT_EMULATE=1).
// variants-from: conv_variants.py
// dtypes: f16
#version 450
#define EMULATE 1
#include "conv2d_coop.glslh"
