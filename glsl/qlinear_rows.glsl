// Quantized linear over a few rows of x (decode, M small): out[m, n] = sum_k x[m, k] * w[n, k] + bias[n]
// with w[n, k] = (q[n, k] - zero[n, g]) * scale[n, g], g = k / group_size, q packed
// 32 / bits per uint word (two's complement, lowest bits first; rows padded to words).
// A workgroup of 64 invocations makes R rows x NB columns; invocations split K by
// words, then reduce. A word never straddles groups (group size is a multiple of
// the values per word, or K).
// DQ8A: x is quantized per row to int8 as torchao's asymmetric choose_qparams_affine
// and quantize_affine do, inside the kernel; the products of (qx - zero_x) and
// (qw - zero_w) sum in int32 per word and scale once per word.
#version 450
#extension GL_GOOGLE_include_directive : require
// variant qlinear_rows: DQ8A=0 DOT=0
// variant qlinear_dq8a_rows: DQ8A=1 DOT=0
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "qlinear_rows.glslh"
