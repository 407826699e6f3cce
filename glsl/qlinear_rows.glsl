// Quantized linear over a few rows of x (decode, M small): out[m, n] = sum_k x[m, k] * w[n, k] + bias[n]
// with w[n, k] = (q[n, k] - zero[n, g]) * scale[n, g], g = k / group_size, q packed
// 32 / bits per uint word (two's complement, lowest bits first; rows padded to words).
// Float32 accumulation: each word's products sum in float, then scale once per word.
// A workgroup makes 4 rows x 4 columns; its invocations split K (qlinear_rows.glslh
// says how). A word never straddles groups (group size is a multiple of the values
// per word, or K).
// DQ8A: x comes quantized per row by qlinear_dq8a_quant.glsl (torchao's asymmetric
// choose_qparams_affine and quantize_affine); the products of (qx - zero_x) and
// (qw - zero_w) sum exactly in int32 per word and scale once per word.
// The host (runtime/ops/quantized_linear.cpp) picks: _b4 / _b8 by the weight's bits;
// _vec4 (16-byte loads of 4 words, no bounds checks) where K is a multiple of
// 4 words' values (32 for int4, 16 for int8), the one-word kernel otherwise; _sg
// where the device has subgroup arithmetic. Weight-only products take it up to 4
// rows (qlinear_tiled.glsl above), dq8a ones at every row count.
#version 450
#extension GL_GOOGLE_include_directive : require
// subgroup-variants
// variant qlinear_rows_b4: BITS=4 VEC4=0 DQ8A=0 DOT=0
// variant qlinear_rows_b4_vec4: BITS=4 VEC4=1 DQ8A=0 DOT=0
// variant qlinear_rows_b8: BITS=8 VEC4=0 DQ8A=0 DOT=0
// variant qlinear_rows_b8_vec4: BITS=8 VEC4=1 DQ8A=0 DOT=0
// variant qlinear_dq8a_rows_b4: BITS=4 VEC4=0 DQ8A=1 DOT=0
// variant qlinear_dq8a_rows_b4_vec4: BITS=4 VEC4=1 DQ8A=1 DOT=0
// variant qlinear_dq8a_rows_b8: BITS=8 VEC4=0 DQ8A=1 DOT=0
// variant qlinear_dq8a_rows_b8_vec4: BITS=8 VEC4=1 DQ8A=1 DOT=0
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "qlinear_rows.glslh"
