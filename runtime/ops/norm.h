// What other ops' build functions take from norm.cpp.
#pragma once
#include "op_utils.h"

namespace vkd {

// A native_layer_norm node: `in` normalized over its trailing `nd` dims (weight, bias: -1 for none)
// into `out`, its rows' mean and 1 / std into `mean` and `rstd` (sized at each update).
void add_layer_norm_node(ComputeGraph& g, int in, int weight, int bias, int64_t nd, float eps, int out, int mean,
                         int rstd);

}  // namespace vkd
