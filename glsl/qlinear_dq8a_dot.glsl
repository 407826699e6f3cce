// qlinear_dq8a_rows (qlinear_rows.glsl) with the int8 products summed by the
// device's packed integer dot product (dotPacked4x8EXT: 4 signed bytes x 4 signed
// bytes). Chosen where the device has shaderIntegerDotProduct and this binary was
// compiled; the plain kernel otherwise. Variants as qlinear_rows.glsl's.
// requires: GL_EXT_integer_dot_product
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_integer_dot_product : require
// subgroup-variants
// variant qlinear_dq8a_dot_b4: BITS=4 VEC4=0 DQ8A=1 DOT=1
// variant qlinear_dq8a_dot_b4_vec4: BITS=4 VEC4=1 DQ8A=1 DOT=1
// variant qlinear_dq8a_dot_b8: BITS=8 VEC4=0 DQ8A=1 DOT=1
// variant qlinear_dq8a_dot_b8_vec4: BITS=8 VEC4=1 DQ8A=1 DOT=1
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "qlinear_rows.glslh"
