// Reductions over any set of dims. The input is viewed as kept dims x reduced dims
// (each a strided index space of up to rank 8); one workgroup reduces the reduced
// elements of one output element with a shared-memory tree. Where the graph stores
// int64 as int32, reduce_sum_int64 (an int64 sum) adds exactly in pairs of words,
// since a partial sum may leave int32 where the total does not; a total outside
// int32 is a fault (fault.glslh). reduce_sum_of_i32_i64 sums int32 storage (int32,
// bool) into int64 storage. argmax and argmin write int64 positions as words
// (READ_INDEX in common.glslh).
// dtypes: f32 f16 i32 i64
// variant reduce_sum: OP=0
// variant reduce_sum_int64(i32): OP=0 SUM64=1 CHECKED=1
// variant reduce_sum_of_i32(i64): OP=0 IN_T=int
// variant reduce_mean(f32 f16): OP=0 MEAN=1
// variant reduce_amax: OP=1
// variant reduce_amin: OP=2
// variant reduce_argmax: OP=1 ARG=1
// variant reduce_argmin: OP=2 ARG=1
// variant reduce_var(f32 f16): OP=0 VAR=1
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
#include "common.glslh"

#if ARG
#define OUT_T int
#else
#define OUT_T T
#endif

#ifndef IN_T
#define IN_T T
#endif

layout(set = 0, binding = 0) writeonly buffer Out { OUT_T out_data[]; };
layout(set = 0, binding = 1) readonly buffer In { IN_T in_data[]; };
#define FAULT_BINDING 2
#include "fault.glslh"
// params-struct: ReduceParams
layout(set = 0, binding = PARAMS_BINDING) uniform Params {
  ivec4 kept_sizes[2];
  ivec4 kept_strides[2];
  ivec4 red_sizes[2];
  ivec4 red_strides[2];
  int out_numel;
  int red_numel;
  int kept_rank;
  int red_rank;
  float divisor;  // mean: the count; var: the count less the correction
  int index_words;  // argmax, argmin: words per output element (1: int32 storage, 2: int64)
  int pad1;
  int pad2;
} p;

shared CT partial[gl_WorkGroupSize.x];
shared int partial_index[gl_WorkGroupSize.x];

#if IS_FLOAT
#define IS_NAN(v) isnan(v)
const float kInit[3] = float[3](0.0, -1.0 / 0.0, 1.0 / 0.0);
#elif STORAGE_I64
#define IS_NAN(v) false
const int64_t kInit[3] = int64_t[3](0l, -9223372036854775807l - 1l, 9223372036854775807l);
#else
#define IS_NAN(v) false
const int kInit[3] = int[3](0, -2147483647 - 1, 2147483647);
#endif

// Whether (v, i) wins over (w, j) for max (OP 1) or min (OP 2): NaN wins (torch
// propagates it), then the larger (smaller) value, then the first index. Index
// -1 marks an empty slot.
bool beats(CT v, int i, CT w, int j) {
  if (j < 0) return true;
  if (i < 0) return false;
  if (IS_NAN(v) || IS_NAN(w)) return IS_NAN(v) && (!IS_NAN(w) || i < j);
  if (v != w) return OP == 1 ? v > w : v < w;
  return i < j;
}

// Reduces (v, i) over the workgroup; the result is in partial[0], partial_index[0].
void tree(CT v, int i) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  partial_index[t] = i;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) {
#if OP == 0
      partial[t] += partial[t + s];
#else
      if (beats(partial[t + s], partial_index[t + s], partial[t], partial_index[t])) {
        partial[t] = partial[t + s];
        partial_index[t] = partial_index[t + s];
      }
#endif
    }
    barrier();
  }
}

#if SUM64
shared uint partial_lo[gl_WorkGroupSize.x];
shared int partial_hi[gl_WorkGroupSize.x];

// (lo, hi) += (b_lo, b_hi), two's complement over 64 bits.
void add64(inout uint lo, inout int hi, uint b_lo, int b_hi) {
  uint carry;
  lo = uaddCarry(lo, b_lo, carry);
  hi += b_hi + int(carry);
}

void main() {
  const int o = int(flat_group());
  if (o >= p.out_numel) return;  // uniform across the workgroup
  const int base = strided_offset(o, p.kept_rank, p.kept_sizes, p.kept_strides);
  const uint t = gl_LocalInvocationID.x;
  uint lo = 0u;
  int hi = 0;
  for (int r = int(t); r < p.red_numel; r += int(gl_WorkGroupSize.x)) {
    const int v = in_data[base + strided_offset(r, p.red_rank, p.red_sizes, p.red_strides)];
    add64(lo, hi, uint(v), v >> 31);
  }
  partial_lo[t] = lo;
  partial_hi[t] = hi;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) add64(partial_lo[t], partial_hi[t], partial_lo[t + s], partial_hi[t + s]);
    barrier();
  }
  if (t == 0) {
    const int sum = int(partial_lo[0]);
    // value: the sum ('S').
    if (partial_hi[0] != (sum >> 31)) {
      report_fault_words(FAULT_INT64_RANGE, uint(0x53), partial_lo[0], uint(partial_hi[0]), 0u, 0u);
    }
    out_data[o] = sum;
  }
}
#else
void main() {
  const int o = int(flat_group());
  if (o >= p.out_numel) return;  // uniform across the workgroup
  const int base = strided_offset(o, p.kept_rank, p.kept_sizes, p.kept_strides);
  const int t = int(gl_LocalInvocationID.x);
  const int n = int(gl_WorkGroupSize.x);

  CT acc = kInit[OP];
  int acc_index = -1;
  for (int r = t; r < p.red_numel; r += n) {
    CT v = CT(in_data[base + strided_offset(r, p.red_rank, p.red_sizes, p.red_strides)]);
#if OP == 0
    acc += v;
#else
    if (beats(v, r, acc, acc_index)) {
      acc = v;
      acc_index = r;
    }
#endif
  }
  tree(acc, acc_index);
#if VAR
  // Second pass around the mean.
  const float mean = partial[0] / float(p.red_numel);
  barrier();
  acc = 0.0;
  for (int r = t; r < p.red_numel; r += n) {
    float d = in_data[base + strided_offset(r, p.red_rank, p.red_sizes, p.red_strides)] - mean;
    acc += d * d;
  }
  tree(acc, -1);
#endif
  if (t == 0) {
#if ARG
    WRITE_INDEX(out_data, o, p.index_words, max(partial_index[0], 0));
#elif MEAN || VAR
    out_data[o] = T(partial[0] / p.divisor);
#else
    out_data[o] = T(partial[0]);
#endif
  }
}
#endif
