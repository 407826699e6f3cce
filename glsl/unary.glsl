// Elementwise unary ops and activations: out = F(x).
// variant unary_relu: F(x)=(x<0.0?0.0:x)
// variant unary_sigmoid: F(x)=sigmoid(x)
// variant unary_tanh: F(x)=safe_tanh(x)
// variant unary_gelu: F(x)=gelu_erf(x)
// variant unary_gelu_tanh: F(x)=gelu_tanh(x)
// variant unary_clamp: F(x)=clamp_nan(x)
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { float out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { float in_data[]; };
layout(set = 0, binding = 2) uniform Params {
  int numel;
  float min_value;  // clamp bounds (+-inf when absent)
  float max_value;
  int pad;
} p;

float sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

// tanh through exp(-2|x|), which cannot overflow.
float safe_tanh(float x) {
  float e = exp(-2.0 * abs(x));
  return sign(x) * (1.0 - e) / (1.0 + e);
}

// erf with |error| < 1.2e-7 (Numerical Recipes erfc, Chebyshev fit).
float erf_approx(float x) {
  float z = abs(x);
  float t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}

float gelu_erf(float x) { return 0.5 * x * (1.0 + erf_approx(x * 0.70710678118654752)); }
float gelu_tanh(float x) {
  return 0.5 * x * (1.0 + safe_tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
}
// clamp that keeps NaN, as torch.clamp does.
float clamp_nan(float x) { return isnan(x) ? x : min(max(x, p.min_value), p.max_value); }

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  out_data[i] = F(in_data[i]);
}
