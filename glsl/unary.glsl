// Elementwise unary ops and activations: out = F(x). Float-only bodies carry (f32 f16).
// The _int64 variants (CHECKED), where the graph stores int64 as int32, report int64 results outside
// int32 (fault.glslh).
// dtypes: f32 f16 i32 i64
// variant unary_relu: F(x)=relu_nan(x)
// variant unary_neg: F(x)=(-x)
// variant unary_abs: F(x)=abs(x)
// variant unary_sign: F(x)=sign_nan(x)
// variant unary_clamp: F(x)=clamp_nan(x)
// variant unary_neg_int64(i32): F(x)=neg_int64(x) CHECKED=1
// variant unary_abs_int64(i32): F(x)=abs_int64(x) CHECKED=1
// variant unary_bitwise_not(i32 i64): F(x)=(~x)
// variant unary_sigmoid(f32 f16): F(x)=sigmoid(x)
// variant unary_tanh(f32 f16): F(x)=safe_tanh(x)
// variant unary_gelu(f32 f16): F(x)=gelu_erf(x)
// variant unary_gelu_tanh(f32 f16): F(x)=gelu_tanh(x)
// variant unary_exp(f32 f16): F(x)=exp(x)
// variant unary_log(f32 f16): F(x)=safe_log(x)
// variant unary_log10(f32 f16): F(x)=(safe_log(x)*0.43429448190325182)
// variant unary_sqrt(f32 f16): F(x)=safe_sqrt(x)
// variant unary_rsqrt(f32 f16): F(x)=(1.0/safe_sqrt(x))
// variant unary_reciprocal(f32 f16): F(x)=(1.0/x)
// variant unary_sin(f32 f16): F(x)=sin(x)
// variant unary_cos(f32 f16): F(x)=cos(x)
// variant unary_round(f32 f16): F(x)=roundEven(x)
// variant unary_erf(f32 f16): F(x)=erf_approx(x)
// variant unary_silu(f32 f16): F(x)=(x*sigmoid(x))
// variant unary_hardswish(f32 f16): F(x)=(x*hard_sigmoid(x))
// variant unary_hardsigmoid(f32 f16): F(x)=hard_sigmoid(x)
// variant unary_leaky_relu(f32 f16): F(x)=(x>0.0?x:x*p.a)
// variant unary_softplus(f32 f16): F(x)=softplus(x)
// variant unary_elu(f32 f16): F(x)=elu(x)
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { T in_data[]; };
#define FAULT_BINDING 2
#include "fault.glslh"
// params-struct: UnaryParams
layout(set = 0, binding = PARAMS_BINDING) uniform Params {
  int numel;
  float a;  // float clamp min; leaky_relu slope; softplus beta; elu alpha
  float b;  // float clamp max; softplus threshold; elu scale
  float c;  // elu input_scale
  int int_min;  // integer clamp bounds (their low words)
  int int_max;
  int int_min_hi;
  int int_max_hi;
} p;

#if IS_FLOAT
#include "activation.glslh"
// clamp that keeps NaN, as torch.clamp does.
float clamp_nan(float x) { return clamp_keep_nan(x, p.a, p.b); }
float relu_nan(float x) { return relu_keep_nan(x); }
float sign_nan(float x) { return isnan(x) ? 0.0 : sign(x); }  // torch: sign(NaN) = 0

// GLSL leaves log and sqrt undefined outside their domains; torch (IEEE) does not.
float safe_log(float x) {
  if (x < 0.0) return uintBitsToFloat(0x7fc00000u);
  if (x == 0.0) return -1.0 / 0.0;
  return log(x);
}
float safe_sqrt(float x) { return x < 0.0 ? uintBitsToFloat(0x7fc00000u) : sqrt(x); }

float hard_sigmoid(float x) { return isnan(x) ? x : clamp(x + 3.0, 0.0, 6.0) / 6.0; }  // clamp drops NaN

// log(1 + u), accurate for small u (Goldberg's trick).
float log1p_accurate(float u) {
  float v = 1.0 + u;
  return v == 1.0 ? u : log(v) * u / (v - 1.0);
}
float softplus(float x) {
  float bx = x * p.a;
  return bx > p.b ? x : log1p_accurate(exp(bx)) / p.a;
}
float elu(float x) { return x > 0.0 ? p.b * x : p.b * p.a * (exp(x * p.c) - 1.0); }
#else
CT clamp_nan(CT x) { return min(max(x, INT_PARAM(p.int_min, p.int_min_hi)), INT_PARAM(p.int_max, p.int_max_hi)); }
CT sign_nan(CT x) { return sign(x); }
CT relu_nan(CT x) { return max(x, CT(0)); }
#endif

void main() {
  int i = int(flat_index());
  if (i >= p.numel) return;
  CT x = CT(in_data[i]);
  out_data[i] = T(F(x));
}
