// qlinear_dq8a_rows with the int8 products summed by the device's packed
// integer dot product (dotPacked4x8EXT: 4 signed bytes x 4 signed bytes),
// zero points applied once per word. Chosen where the device has
// shaderIntegerDotProduct and this binary was compiled; the plain kernel otherwise.
// requires: GL_EXT_integer_dot_product
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_integer_dot_product : require
#define DQ8A 1
#define DOT 1
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "qlinear_rows.glslh"
