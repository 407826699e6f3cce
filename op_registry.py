"""The single source of truth of what vkdelegate runs.

One OpEntry per op: the edge-dialect overloads it covers, the dtypes it takes
(float16 where its kernels have f16 variants), whether the runtime can resize
it for dynamic shapes, an argument check and notes for the docs. Each entry's
sample cases, from which the op tests are generated, live beside the tests
(tests/op_samples.py, keyed by entry name).
The partitioner delegates a node only if `REGISTRY.lookup(node)` accepts it.
"""

from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (defines the quantized_decomposed ops)
from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

# Absolute, so that the runtime tests can also `import op_registry` from the repo root.
from vkdelegate.fx_nodes import arg, fake_tensor, node_inputs, op_name, output_tensors
# These define the et_vk ops that entries below name.
from vkdelegate.quant import gguf_dequant as _gguf_dequant
from vkdelegate.quant import gguf_linear as _gguf
from vkdelegate.quant import library  # noqa: F401
from vkdelegate.quant import q8ta_ops  # noqa: F401
from vkdelegate.quant import torchao_ops as _qops
from vkdelegate.quant.q8ta_patterns import per_tensor_qparams, pattern_reason

MAX_RANK = 8
FP32: FrozenSet[torch.dtype] = frozenset({torch.float32})
# In an entry's dtypes where its kernels have f16 variants (half storage, math in
# float, one rounding on store, as PyTorch computes half).
FP16: FrozenSet[torch.dtype] = frozenset({torch.float16})
FLOATS: FrozenSet[torch.dtype] = FP32 | FP16
# int64 tensors are int64 on the GPU where the device has shaderInt64, else int32
# (values must fit; the runtime errors otherwise); bool and int8 are int32.
NUMERIC: FrozenSet[torch.dtype] = frozenset({torch.float32, torch.int32, torch.int64})
# Ops that only move data work for every dtype the runtime stores.
ANY_DTYPE: FrozenSet[torch.dtype] = frozenset({torch.float32, torch.int32, torch.int64, torch.bool})

aten = exir_ops.edge.aten
dim_order_ops = exir_ops.edge.dim_order_ops
et_vk = exir_ops.edge.et_vk
quantized_decomposed = exir_ops.edge.quantized_decomposed


Check = Callable[[Node], Optional[str]]


def _accept(node: Node) -> Optional[str]:
    return None


@dataclass(frozen=True)
class OpEntry:
    name: str
    # Edge-dialect overloads this entry covers.
    targets: Tuple[object, ...]
    notes: str = ""
    dtypes: FrozenSet[torch.dtype] = FP32
    supports_resize: bool = True
    # Returns why this node cannot run, or None; called after the dtype and rank checks.
    check: Check = _accept
    # Natively implemented: the partitioner asks ExecuTorch not to decompose it.
    keep_undecomposed: bool = False
    # The runtime makes the output a view of the first argument (add_view_node:
    # same storage) whenever both have one dtype, so memory planning keeps them
    # in one allocation. Set it exactly: a kernel's input and output must not share.
    aliases_input: bool = False
    # Int arguments may be symbolic (dynamic sizes): the runtime reads them with
    # g.get_int / g.get_int_list inside its update function, so they follow
    # every resize. Without it, a node with a symbolic int argument stays on CPU.
    symint_args: bool = False
    # Numerical kind, which picks the test tolerance against eager PyTorch:
    # "elementwise", "transcendental", "reduction" or "matmul".
    kind: str = "elementwise"
    # A preprocess pass fuses every accepted node of this op into another op (check
    # accepts only the patterns it fuses), so it never reaches the runtime, and the
    # partitioner never folds it as a constant computation (quantized weights must
    # reach their fused op packed, not folded to float32).
    fused: bool = False
    # The output dtype may differ from the inputs' (to_copy). Every other node needs its
    # float tensors in one dtype: mixed float32/float16 nodes stay on CPU.
    converts_dtype: bool = False
    # The op writes its first argument in place (the runtime's ComputeGraph::alias_state):
    # the partitioner accepts it only on a mutable buffer that nothing else reads (a KV
    # cache) and takes that buffer into the partition, where it stays on the GPU as state.
    updates_state: bool = False
    # With updates_state: the arguments, by name, that the op writes in place; its last
    # outputs are their updated values, in this order. Empty: the first argument, whose
    # update is the op's one output (index_put).
    state_args: Tuple[str, ...] = ()

    @property
    def op_names(self) -> Tuple[str, ...]:
        return tuple(op_name(target) for target in self.targets)


class OpRegistry:
    def __init__(self, entries: Sequence[OpEntry]):
        self.entries: Tuple[OpEntry, ...] = tuple(entries)
        self._by_target: Dict[object, OpEntry] = {}
        for entry in self.entries:
            for target in entry.targets:
                # ATen overloads too: ops_to_not_decompose filters ATen graphs.
                for key in (target, target._op):
                    if key in self._by_target:
                        raise ValueError(f"{op_name(target)} is in entries {self._by_target[key].name} and {entry.name}")
                    self._by_target[key] = entry

    def __iter__(self) -> Iterator[OpEntry]:
        return iter(self.entries)

    def entry_for(self, target: object) -> Optional[OpEntry]:
        """The entry covering an edge or ATen op overload, whatever the node's arguments."""
        return self._by_target.get(target)

    def lookup(self, node: Node) -> Tuple[Optional[OpEntry], Optional[str]]:
        """(entry, None) if node can run on vkdelegate, else (None, the reason)."""
        if node.op != "call_function":
            return None, f"{node.op} node"
        entry = self.entry_for(node.target)
        if entry is None:
            return None, f"{op_name(node.target)} is not in the vkdelegate op registry"
        # pattern_reason: PT2E's quantized patterns run only as a whole.
        reason = _check_tensors(node, entry) or entry.check(node) or pattern_reason(node)
        return (None, reason) if reason else (entry, None)

    def ops_to_keep_undecomposed(self) -> List[torch._ops.OpOverload]:
        return [target._op for entry in self.entries if entry.keep_undecomposed for target in entry.targets]


def _check_tensors(node: Node, entry: OpEntry) -> Optional[str]:
    tensors = [(f"input {item.name}", fake_tensor(item)) for item in node_inputs(node)]
    tensors += [("output", val) for val in output_tensors(node)]
    for what, val in tensors:
        if val is None:
            continue
        if val.dtype not in entry.dtypes:
            supported = ", ".join(sorted(str(dtype).replace("torch.", "") for dtype in entry.dtypes))
            return f"{what} is {str(val.dtype).replace('torch.', '')}; {entry.name} supports {supported}"
        if val.dim() > MAX_RANK:
            return f"{what} has rank {val.dim()}; at most {MAX_RANK} is supported"
    if not entry.converts_dtype and len(_tensor_dtypes(node) & FLOATS) > 1:
        return "mixed float32 and float16 tensors are not supported"
    return None


# ----------------------------------------------------------------------------
# Argument checks


def _contiguous_layout(node: Node) -> Optional[str]:
    """Delegated tensors are contiguous, so only copies into contiguous layout are copies."""
    argument_names = {argument.name for argument in node.target._schema.arguments}
    if "memory_format" in argument_names:
        memory_format = arg(node, "memory_format")
        if memory_format not in (None, torch.contiguous_format, torch.preserve_format):
            return f"memory_format {memory_format} is not supported (tensors are contiguous)"
    if "dim_order" in argument_names:
        dim_order = arg(node, "dim_order")
        rank = output_tensors(node)[0].dim()
        if dim_order is not None and list(dim_order) != list(range(rank)):
            return f"dim_order {list(dim_order)} is not contiguous (tensors are contiguous)"
    return None


def _check_to_copy(node: Node) -> Optional[str]:
    dtype = arg(node, "dtype")
    if dtype is not None and dtype not in ANY_DTYPE | FP16:
        return f"conversion to {dtype} is not supported"
    return _contiguous_layout(node)


def _dtype_names(dtypes) -> str:
    return ", ".join(sorted(str(d).replace("torch.", "") for d in dtypes))


def _tensor_dtypes(node: Node, outputs: bool = True) -> set:
    vals = [fake_tensor(item) for item in node_inputs(node)] + (output_tensors(node) if outputs else [])
    return {val.dtype for val in vals if val is not None}


def _scalar_args(node: Node) -> List[object]:
    """The Scalar-typed arguments of node (numbers, not tensors)."""
    return [arg(node, a.name) for a in node.target._schema.arguments
            if str(a.type) in ("number", "Optional[number]")]


def _check_int_scalars(node: Node, dtypes: set) -> Optional[str]:
    """Scalars with integer tensors must be integers: the runtime has no type promotion."""
    if dtypes & {torch.int32, torch.int64, torch.bool}:
        for value in _scalar_args(node):
            if value is not None and not isinstance(value, (bool, int)):
                return f"a non-integer scalar ({value}) with an integer tensor is not supported"
    return None


def _check_binary(node: Node) -> Optional[str]:
    """Tensor operands and output of one dtype (no type promotion); integer scalars with integer tensors."""
    dtypes = _tensor_dtypes(node)
    if len(dtypes) > 1:
        return f"mixed dtypes ({_dtype_names(dtypes)}) are not supported"
    return _check_int_scalars(node, dtypes)


def _check_compare(node: Node) -> Optional[str]:
    """Operands of one dtype, bool output."""
    dtypes = _tensor_dtypes(node, outputs=False)
    if len(dtypes) > 1:
        return f"mixed dtypes ({_dtype_names(dtypes)}) are not supported"
    if any(val.dtype != torch.bool for val in output_tensors(node)):
        return "the output must be bool"
    return _check_int_scalars(node, dtypes)


def _check_div(node: Node) -> Optional[str]:
    if "rounding_mode" in {a.name for a in node.target._schema.arguments}:
        mode = arg(node, "rounding_mode")
        if mode not in (None, "trunc", "floor"):
            return f"rounding_mode {mode!r} is not supported"
        if mode is None and len(_tensor_dtypes(node)) == 1 and not _tensor_dtypes(node) <= FLOATS:
            return "true division is supported for float32 and float16 only"
    return _check_binary(node)


def _check_where(node: Node) -> Optional[str]:
    condition = fake_tensor(arg(node, "condition"))
    if condition is None or condition.dtype != torch.bool:
        return "the condition must be a bool tensor"
    dtypes = {val.dtype for val in [fake_tensor(arg(node, "self")), fake_tensor(arg(node, "other"))]
              + output_tensors(node) if val is not None}
    if len(dtypes) > 1:
        return f"mixed dtypes ({_dtype_names(dtypes)}) are not supported"
    return None


def _check_sum(node: Node) -> Optional[str]:
    """Integer and bool sums give int64; no float <-> int conversion."""
    dtypes = _tensor_dtypes(node)
    if dtypes & FLOATS and len(dtypes) > 1:
        return f"mixed dtypes ({_dtype_names(dtypes)}) are not supported"
    return None


def _check_same_dtype(node: Node) -> Optional[str]:
    dtypes = _tensor_dtypes(node)
    if len(dtypes) > 1:
        return f"mixed dtypes ({_dtype_names(dtypes)}) are not supported"
    return None


def _check_static_dim_step(node: Node) -> Optional[str]:
    """slice/select: start, end and index may be symbolic, the dim and step may not."""
    names = ("dim", "step") if "slice" in str(node.target) else ("dim",)
    for name in names:
        if isinstance(arg(node, name), Node):
            return f"a symbolic {name} is not supported"
    return None


def _check_softplus(node: Node) -> Optional[str]:
    if arg(node, "beta") == 0:
        return "softplus beta must be nonzero"
    return None


def _check_gelu(node: Node) -> Optional[str]:
    approximate = arg(node, "approximate")
    if approximate not in ("none", "tanh"):
        return f"gelu approximate={approximate!r} is not supported"
    return None


def _check_clamp(node: Node) -> Optional[str]:
    argument_names = {argument.name for argument in node.target._schema.arguments}
    if "min" in argument_names and arg(node, "min") is None and arg(node, "max") is None:
        return "clamp needs min or max"
    return _check_binary(node)


def _check_softmax(node: Node) -> Optional[str]:
    if arg(node, "half_to_float"):
        return "half_to_float=True is not supported"
    return None


def _check_linear(node: Node) -> Optional[str]:
    weight = fake_tensor(arg(node, "weight"))
    if weight is None or weight.dim() != 2:
        return "linear weight must be a 2-D tensor"
    bias = arg(node, "bias")
    if bias is not None and (fake_tensor(bias) is None or fake_tensor(bias).dim() != 1):
        return "linear bias must be a 1-D tensor"
    return None


def _check_ln_linear(node: Node) -> Optional[str]:
    problem = _check_linear(node)
    if problem is not None:
        return problem
    k = fake_tensor(arg(node, "input")).shape[-1]
    for name in ("ln_weight", "ln_bias"):
        value = arg(node, name)
        if value is not None and (fake_tensor(value) is None or tuple(fake_tensor(value).shape) != (k,)):
            return f"the layer norm's {name[3:]} must be 1-D of the input's last dim"
    return None


def _check_index_put(node: Node) -> Optional[str]:
    if arg(node, "accumulate"):
        return "accumulate=True is not supported"
    indices = list(arg(node, "indices"))
    given = [(dim, item) for dim, item in enumerate(indices) if item is not None]
    if len(given) != 1:
        return "one index tensor (the others None) is supported"
    dim, index = given[0]
    index_val = fake_tensor(index)
    if index_val is None or index_val.dtype not in (torch.int32, torch.int64) or index_val.dim() != 1:
        return "the index must be a 1-D int32 or int64 tensor"
    self_val, values_val = fake_tensor(arg(node, "self")), fake_tensor(arg(node, "values"))
    if values_val is None or values_val.dim() != self_val.dim():
        return "values must have the rank of self (no broadcasting)"
    for d in range(self_val.dim()):
        if d != dim and values_val.shape[d] != self_val.shape[d]:
            return f"values {tuple(values_val.shape)} do not fit self {tuple(self_val.shape)} off the indexed dim {dim}"
    return None


def _check_rope(node: Node) -> Optional[str]:
    x, cos, sin = (fake_tensor(arg(node, name)) for name in ("x", "cos", "sin"))
    if x is None or cos is None or sin is None:
        return "x, cos and sin must be tensors"
    if (tuple(cos.shape) != tuple(sin.shape) or not library.rope_table_fits(tuple(x.shape), tuple(cos.shape))
            or x.shape[-1] % 2):
        return (f"cos and sin {tuple(cos.shape)} must be [T, D] for x [..., T, D] or [T, 1, D] for x [..., T, H, D] "
                f"(x is {tuple(x.shape)}), D even")
    return _check_same_dtype(node)


def _check_sdpa_kv_cache(node: Node) -> Optional[str]:
    q, k, v, positions = (fake_tensor(arg(node, name)) for name in ("q", "k_cache", "v_cache", "input_pos"))
    if any(t is None for t in (q, k, v, positions)):
        return "q, k_cache, v_cache and input_pos must be tensors"
    if len({q.dtype, k.dtype, v.dtype}) != 1 or q.dtype not in FLOATS:
        return "q, k_cache and v_cache must share one dtype, float32 or float16"
    if positions.dtype not in (torch.int32, torch.int64) or positions.dim() != 1:
        return "input_pos must be a 1-D int32 or int64 tensor"
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return "q, k_cache and v_cache must have rank 4: [B, T, H, D] and [B, S, KVH, D]"
    (batch, length, heads, head_dim), kv_heads = q.shape, k.shape[2]
    if (k.shape[0] != batch or k.shape[3] != head_dim or tuple(v.shape[:3]) != tuple(k.shape[:3])
            or positions.shape[0] != length or kv_heads == 0 or heads % kv_heads):
        return (f"q {tuple(q.shape)}, k_cache {tuple(k.shape)}, v_cache {tuple(v.shape)} and input_pos "
                f"{tuple(positions.shape)} do not fit (H a multiple of KVH)")
    if head_dim > 256 or v.shape[3] > 256:
        return "head dims above 256 are not supported"
    return None


def _check_rope_kv_update(node: Node) -> Optional[str]:
    names = ("q", "k", "v", "cos", "sin", "k_cache", "v_cache", "input_pos")
    q, k, v, cos, sin, k_cache, v_cache, positions = (fake_tensor(arg(node, name)) for name in names)
    if any(t is None for t in (q, k, v, cos, sin, k_cache, v_cache, positions)):
        return "every argument must be a tensor"
    if len({t.dtype for t in (q, k, v, cos, sin, k_cache, v_cache)}) != 1 or q.dtype not in FLOATS:
        return "q, k, v, cos, sin and the caches must share one dtype, float32 or float16"
    if positions.dtype not in (torch.int32, torch.int64) or positions.dim() != 1:
        return "input_pos must be a 1-D int32 or int64 tensor"
    if any(t.dim() != 4 for t in (q, k, v, k_cache, v_cache)):
        return "q, k, v and the caches must have rank 4: [B, T, H, D], [B, T, KVH, D] and [B, S, KVH, D]"
    batch, length, _, head_dim = q.shape
    if (tuple(k.shape) != tuple(v.shape) or k.shape[0] != batch or k.shape[1] != length or k.shape[3] != head_dim
            or tuple(k_cache.shape) != tuple(v_cache.shape) or k_cache.shape[0] != batch
            or tuple(k_cache.shape[2:]) != tuple(k.shape[2:]) or tuple(cos.shape) != (length, 1, head_dim)
            or tuple(sin.shape) != tuple(cos.shape) or positions.shape[0] != length or head_dim % 2):
        return (f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, cos {tuple(cos.shape)}, caches "
                f"{tuple(k_cache.shape)} and input_pos {tuple(positions.shape)} do not fit [B, T, H, D], "
                "[B, T, KVH, D] (twice), [T, 1, D], [B, S, KVH, D] (twice) and [T], D even")
    return None


def _check_sdpa_rope_kv(node: Node) -> Optional[str]:
    problem = _check_rope_kv_update(node)
    if problem is None and fake_tensor(arg(node, "q")).shape[-1] > 256:
        return "head dims above 256 are not supported"
    return problem


def _check_layer_norm(node: Node) -> Optional[str]:
    if not arg(node, "normalized_shape"):
        return "native_layer_norm needs a non-empty normalized_shape"
    return None


# ----------------------------------------------------------------------------
# Convolution, pooling, upsampling, normalization, cat


def _check_cat(node: Node) -> Optional[str]:
    dtypes = {val.dtype for val in [fake_tensor(item) for item in arg(node, "tensors")] + output_tensors(node)
              if val is not None}
    if len(dtypes) > 1:
        names = ", ".join(sorted(str(d).replace("torch.", "") for d in dtypes))
        return f"mixed dtypes ({names}) are not supported"
    return None


def _check_convolution(node: Node) -> Optional[str]:
    rank = fake_tensor(arg(node, "input")).dim()
    if rank not in (3, 4):
        return f"{rank - 2}-D convolution is not supported (1-D and 2-D only)"
    weight = fake_tensor(arg(node, "weight"))
    if weight is None or weight.dim() != rank:
        return "the weight must be a tensor of the input's rank"
    bias = arg(node, "bias")
    if bias is not None and (fake_tensor(bias) is None or fake_tensor(bias).dim() != 1):
        return "the bias must be a 1-D tensor"
    for name in ("stride", "padding", "dilation", "output_padding"):
        if any(not isinstance(v, int) for v in arg(node, name)):
            return f"symbolic {name} is not supported"
    return None


# ----------------------------------------------------------------------------
# Convolution with a fused clamp (backends/fuse_conv.py makes it from conv
# [+ residual add] + relu / hardtanh / clamp; quant/library.py defines the op)


def _check_conv2d_clamp(node: Node) -> Optional[str]:
    if arg(node, "transposed"):
        return "transposed convolution with a fused clamp is not supported"
    if not arg(node, "min") <= arg(node, "max"):
        return "min must not exceed max"
    residual = arg(node, "residual")
    if residual is not None and tuple(fake_tensor(residual).shape) != tuple(output_tensors(node)[0].shape):
        return "the residual must have the output's sizes"
    return _check_convolution(node)


def _check_pool_input(node: Node) -> Optional[str]:
    x = fake_tensor(arg(node, "self"))
    if x.dim() not in (3, 4):
        return f"input of rank {x.dim()}: [C, H, W] or [N, C, H, W] only"
    if x.dtype not in FLOATS:
        return "the input must be float32 or float16"
    return None


def _check_pool_window(node: Node) -> Optional[str]:
    reason = _check_pool_input(node)
    if reason:
        return reason
    kernel = list(arg(node, "kernel_size"))
    padding = list(arg(node, "padding"))
    kernel = kernel * 2 if len(kernel) == 1 else kernel
    padding = padding * 2 if len(padding) == 1 else padding
    if any(2 * pad > k for pad, k in zip(padding, kernel)):
        return "padding must be at most half the kernel size"
    return None


def _check_avg_pool(node: Node) -> Optional[str]:
    if arg(node, "divisor_override") == 0:
        return "divisor_override must be non-zero"
    return _check_pool_window(node)


def _check_batch_norm(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "input")).dim() < 2:
        return "the input must have rank 2 or more"
    return None


def _check_group_norm(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "input")).dim() < 2:
        return "the input must have rank 2 or more"
    if not isinstance(arg(node, "group"), int):
        return "symbolic group count is not supported"
    return None


def _check_upsample(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "input")).dim() != 4:
        return "the input must be [N, C, H, W]"
    output_size, scales = arg(node, "output_size"), arg(node, "scale_factors")
    if (output_size is None) == (scales is None):
        return "exactly one of output_size and scale_factors must be given"
    if output_size is not None and any(not isinstance(v, int) for v in output_size):
        return "symbolic output_size is not supported"
    return None


def _check_pixel_shuffle(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "self")).dim() < 3:
        return "the input must have rank 3 or more"
    return None


def _check_grid_sampler(node: Node) -> Optional[str]:
    if arg(node, "interpolation_mode") not in (0, 1):
        return "only bilinear and nearest interpolation are supported (not bicubic)"
    if arg(node, "padding_mode") not in (0, 1, 2):
        return f"unknown padding mode {arg(node, 'padding_mode')}"
    return None


# ----------------------------------------------------------------------------
# Shape and data movement, indexing, creation, embedding,
# scaled_dot_product_attention, rms_norm.

_INDEX_DTYPES = (torch.int32, torch.int64)


def _index_dtype(node: Node, name: str) -> Optional[str]:
    val = fake_tensor(arg(node, name))
    if val is not None and val.dtype not in _INDEX_DTYPES:
        return f"{name} must be int32 or int64, not {str(val.dtype).replace('torch.', '')}"
    return None


def _check_index_select(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "self")).dim() == 0:
        return "index_select of a 0-d tensor is not supported"
    if fake_tensor(arg(node, "index")).dim() > 1:
        return "index_select needs a 0-d or 1-D index"
    return _index_dtype(node, "index")


def _check_gather(node: Node) -> Optional[str]:
    self_rank, index_rank = fake_tensor(arg(node, "self")).dim(), fake_tensor(arg(node, "index")).dim()
    if max(self_rank, 1) != max(index_rank, 1):
        return "gather needs an index of the input's rank"
    return _index_dtype(node, "index")


def _check_embedding(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "weight")).dim() != 2:
        return "embedding weight must be 2-D"
    return _index_dtype(node, "indices")


def _check_index_tensor(node: Node) -> Optional[str]:
    indices = [item for item in arg(node, "indices") if item is not None]
    if not indices:
        return "index needs at least one index tensor"
    if len(indices) > 4:
        return f"{len(indices)} index tensors; at most 4 are supported"
    for item in indices:
        val = fake_tensor(item)
        if val is None or val.dtype not in _INDEX_DTYPES:
            return "only int32/int64 index tensors are supported (boolean masks have data-dependent shapes)"
    return None


def _check_unfold(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "self")).dim() == 0:
        return "unfold of a 0-d tensor is not supported"
    return None


def _int_fill_value(node: Node, name: str) -> Optional[str]:
    """An integer output must hold the fill value (int64 stored as int32 checks it at load)."""
    value, dtype = arg(node, name), output_tensors(node)[0].dtype
    if dtype == torch.int64 and not -2**63 <= value < 2**63:
        return f"{name} {value} does not fit in int64"
    if dtype not in (torch.float32, torch.float16, torch.int64) and not -2**31 <= value < 2**31:
        return f"{name} {value} does not fit in int32"
    return None


def _check_full(node: Node) -> Optional[str]:
    return _int_fill_value(node, "fill_value")


def _check_fill_like(node: Node) -> Optional[str]:
    return _int_fill_value(node, "fill_value") or _contiguous_layout(node)


def _check_constant_pad(node: Node) -> Optional[str]:
    return _int_fill_value(node, "value")


# et_vk.vkd_sdpa_qkv's sequence bound: runtime/ops/attention.cpp's kShortAttentionMaxKeys (sdpa_short.glsl
# holds whole score rows in shared memory).
SDPA_QKV_MAX_TOKENS = 512


def _check_sdpa_bthd(node: Node) -> Optional[str]:
    q, k, v = (fake_tensor(arg(node, name)) for name in ("q", "k", "v"))
    if any(t is None or t.dtype not in FLOATS for t in (q, k, v)) or len({q.dtype, k.dtype, v.dtype}) != 1:
        return "q, k and v must be float32 or float16 tensors of one dtype"
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return "q, k and v must be [B, T, heads, D]"
    if k.shape[:3] != v.shape[:3] or q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]:
        return f"k {tuple(k.shape)} and v {tuple(v.shape)} do not fit q {tuple(q.shape)}"
    if not isinstance(q.shape[2], int) or not isinstance(k.shape[2], int) or k.shape[2] < 1 or q.shape[2] % k.shape[2]:
        return "q's heads must be a multiple of k's"
    if not isinstance(k.shape[1], int) or k.shape[1] > SDPA_QKV_MAX_TOKENS:
        return f"more than {SDPA_QKV_MAX_TOKENS} keys (or a dynamic count)"
    if q.shape[3] > 256 or v.shape[3] > 256:
        return "head dims above 256 are not supported"
    return None


def _check_sdpa_qkv(node: Node) -> Optional[str]:
    qkv, heads = fake_tensor(arg(node, "qkv")), arg(node, "heads")
    if qkv is None or qkv.dtype not in FLOATS:
        return "qkv must be a float32 or float16 tensor"
    if qkv.dim() != 3 or not isinstance(heads, int) or heads < 1 or qkv.shape[2] % (3 * heads):
        return f"qkv {tuple(qkv.shape)} must be [B, T, 3 * heads * D] (heads {heads})"
    if qkv.shape[1] > SDPA_QKV_MAX_TOKENS:
        return f"more than {SDPA_QKV_MAX_TOKENS} tokens"
    if qkv.shape[2] // (3 * heads) > 256:
        return "head dims above 256 are not supported"
    return None


def _check_arange(node: Node) -> Optional[str]:
    if output_tensors(node)[0].dtype == torch.bool:
        return "arange of bool is not supported"
    return None


def _check_sdpa(node: Node) -> Optional[str]:
    q, k, v = (fake_tensor(arg(node, name)) for name in ("query", "key", "value"))
    if any(t is None or t.dtype not in FLOATS for t in (q, k, v)):
        return "query, key and value must be float32 or float16"
    if arg(node, "dropout_p") != 0.0:
        return "dropout_p must be 0 (inference only)"
    rank = q.dim()
    if rank < 2 or k.dim() != rank or v.dim() != rank:
        return "query, key and value need one rank of at least 2"
    if k.shape[-1] != q.shape[-1] or v.shape[-2] != k.shape[-2]:
        return "key and value do not fit query"
    if q.shape[-1] > 256 or v.shape[-1] > 256:
        return "head dims above 256 are not supported"
    for d in range(rank - 2):
        if k.shape[d] != v.shape[d]:
            return "key and value lead dims differ"
        if k.shape[d] != q.shape[d]:
            gqa = d == rank - 3 and arg(node, "enable_gqa") and k.shape[d] > 0 and q.shape[d] % k.shape[d] == 0
            if not gqa:
                return f"key {list(k.shape)} does not match query {list(q.shape)} (no broadcasting of lead dims)"
    mask = arg(node, "attn_mask")
    if mask is not None:
        if arg(node, "is_causal"):
            return "attn_mask and is_causal together are not supported"
        m = fake_tensor(mask)
        if m is None or m.dtype not in FLOATS | {torch.bool}:
            return "attn_mask must be float or bool"
        full = list(q.shape[:-1]) + [k.shape[-2]]
        if m.dim() > rank or any(a not in (1, b) for a, b in zip(reversed(m.shape), reversed(full))):
            return f"attn_mask {list(m.shape)} does not broadcast to {full}"
    return None


def _check_rms_norm(node: Node) -> Optional[str]:
    shape = arg(node, "normalized_shape")
    x = fake_tensor(arg(node, "input"))
    if not shape or len(shape) > x.dim() or list(x.shape[x.dim() - len(shape):]) != list(shape):
        return "normalized_shape must name the input's last dims"
    return None


# ----------------------------------------------------------------------------
# The entries

_ELEMENTWISE = "Elementwise; ranks 0-8."
_BINARY = ("Elementwise with broadcasting; ranks 0-8; a Python scalar operand becomes a constant; "
           "operands of one dtype (no type promotion).")
_INT_STORAGE = (" int64 is int64 on the GPU where the device has shaderInt64, else int32 (values must fit);"
                " bool is int32.")
# Checked on the GPU (glsl/fault.glslh): the execute fails with an error naming the op.
_INDEX_CHECKED = " An index out of range is an error at execute, as in eager PyTorch."
_INT64_CHECKED = " Where int64 is stored as int32, an int64 result outside int32 is an error at execute."

# ----------------------------------------------------------------------------
# Static int8 from PT2E (quant/pt2e.py's VulkanQuantizer).
# Standalone quantize/dequantize kernels, and the et_vk.vkd_q8ta_* ops that
# backends/q8ta_fusion.py fuses dq -> conv2d | linear | add -> [relu] -> q into.
# Which quantized patterns run is decided by quant/q8ta_patterns.py (asked for
# every node in OpRegistry.lookup), shared with the fusion pass.
_Q8_ACTIVATIONS = frozenset({torch.float32, torch.int8})
_Q8_WEIGHTS = frozenset({torch.float32, torch.int8, torch.int32, torch.int64})
_Q8_NOTES = " int8 is stored as int32 on the GPU (packing 4 per word is a later optimization)."
_Q8_WEIGHTED = (" Exact int32 accumulation, requantized in float32 with the per-channel scale, round half to even;"
                " a relu or hardtanh before the quantize becomes the output range.")


def _check_per_tensor(node: Node) -> Optional[str]:
    return per_tensor_qparams(node)[1]


_ENTRIES = [
    OpEntry("add", (aten.add.Tensor, aten.add.Scalar), _BINARY + " alpha supported." + _INT64_CHECKED,
            dtypes=NUMERIC | FP16, check=_check_binary),
    OpEntry("sub", (aten.sub.Tensor, aten.sub.Scalar), _BINARY + " alpha supported." + _INT64_CHECKED,
            dtypes=NUMERIC | FP16, check=_check_binary),
    OpEntry("mul", (aten.mul.Tensor, aten.mul.Scalar), _BINARY + _INT64_CHECKED, dtypes=NUMERIC | FP16,
            check=_check_binary),
    OpEntry(
        "div",
        (aten.div.Tensor, aten.div.Scalar),
        _BINARY + " True division on float32 and float16.",
        check=_check_binary, dtypes=FLOATS,
    ),
    OpEntry("relu", (aten.relu.default,),
            _ELEMENTWISE, dtypes=NUMERIC | FP16),
    OpEntry("sigmoid", (aten.sigmoid.default,), _ELEMENTWISE, kind="transcendental", dtypes=FLOATS),
    OpEntry("tanh", (aten.tanh.default,), _ELEMENTWISE, kind="transcendental", dtypes=FLOATS),
    OpEntry(
        "gelu",
        (aten.gelu.default,),
        _ELEMENTWISE + " approximate='none' (erf) and 'tanh'.",
        check=_check_gelu,
        kind="transcendental", dtypes=FLOATS,
    ),
    OpEntry(
        "clamp",
        (aten.clamp.default,),
        _ELEMENTWISE + " min, max or both; int or float bounds on float32, int bounds on integer tensors.",
        dtypes=NUMERIC | FP16,
        check=_check_clamp,
    ),
    OpEntry("hardtanh", (aten.hardtanh.default,), _ELEMENTWISE, check=_check_clamp, dtypes=FLOATS),
    OpEntry("mm", (aten.mm.default,), "2-D x 2-D.", kind="matmul", dtypes=FLOATS),
    OpEntry("addmm", (aten.addmm.default,), "beta * self + alpha * (mat1 @ mat2); self broadcasts.", kind="matmul", dtypes=FLOATS),
    OpEntry(
        "linear",
        (aten.linear.default,),
        "Kept from decomposition; input of rank 1-8, 2-D weight, optional 1-D bias.",
        check=_check_linear,
        keep_undecomposed=True,
        kind="matmul", dtypes=FLOATS,
    ),
    OpEntry("linear_act", (et_vk.vkd_linear_act.default,),
            "et_vk.vkd_linear_act: a linear as above with none, relu, gelu, gelu_tanh or silu applied as the product "
            "is stored, then an optional residual of the output's sizes and dtype added; made at preprocess from "
            "linear [-> relu / gelu / silu] [-> add of alpha 1].",
            check=_check_linear, kind="matmul", dtypes=FLOATS),
    OpEntry("ln_linear", (et_vk.vkd_ln_linear.default,),
            "et_vk.vkd_ln_linear: a layer norm over the input's last dim (weight and bias optional), then a "
            "linear_act without a residual; made at preprocess from native_layer_norm -> linear | linear_act.",
            check=_check_ln_linear, kind="matmul", dtypes=FLOATS),
    OpEntry("bmm", (aten.bmm.default,), "3-D x 3-D, same batch.", kind="matmul", dtypes=FLOATS),
    OpEntry(
        "softmax",
        (aten._softmax.default,),
        "Any dim; half_to_float=False.",
        check=_check_softmax,
        kind="reduction", dtypes=FLOATS,
    ),
    OpEntry(
        "log_softmax",
        (aten._log_softmax.default,),
        "Any dim; half_to_float=False.",
        check=_check_softmax,
        kind="reduction", dtypes=FLOATS,
    ),
    OpEntry(
        "view_copy",
        (aten.view_copy.default,),
        "Sizes may be symbolic (dynamic shapes)." + _INT_STORAGE,
        dtypes=ANY_DTYPE | FP16,
        aliases_input=True,
        symint_args=True,
    ),
    OpEntry("permute_copy", (aten.permute_copy.default,), "Ranks 0-8." + _INT_STORAGE, dtypes=ANY_DTYPE | FP16),
    OpEntry("unsqueeze_copy", (aten.unsqueeze_copy.default,), "Output rank up to 8." + _INT_STORAGE,
            dtypes=ANY_DTYPE | FP16, aliases_input=True),
    OpEntry(
        "squeeze_copy",
        (aten.squeeze_copy.dims, aten.squeeze_copy.dim, aten.squeeze_copy.default),
        "All three overloads." + _INT_STORAGE,
        dtypes=ANY_DTYPE | FP16,
        aliases_input=True,
    ),
    OpEntry("select_copy", (aten.select_copy.int,),
            "Negative index allowed; the index may be symbolic (dynamic shapes), the dim may not." + _INT_STORAGE,
            dtypes=ANY_DTYPE | FP16, check=_check_static_dim_step, symint_args=True),
    OpEntry("slice_copy", (aten.slice_copy.Tensor,),
            "Positive steps; start/end may be negative, and symbolic (dynamic shapes); dim and step may not."
            + _INT_STORAGE, dtypes=ANY_DTYPE | FP16, check=_check_static_dim_step, symint_args=True),
    OpEntry(
        "expand_copy",
        (aten.expand_copy.default,),
        "-1 keeps a dim; sizes may be symbolic (dynamic shapes)." + _INT_STORAGE,
        dtypes=ANY_DTYPE | FP16,
        symint_args=True,
    ),
    OpEntry(
        "native_layer_norm",
        (aten.native_layer_norm.default,),
        "Over the last dims; weight and bias optional; also outputs mean and rstd.",
        check=_check_layer_norm,
        kind="reduction", dtypes=FLOATS,
    ),
    OpEntry(
        "clone",
        (aten.clone.default, dim_order_ops._clone_dim_order.default),
        "A copy; contiguous memory format / dim order only." + _INT_STORAGE,
        dtypes=ANY_DTYPE | FP16,
        check=_contiguous_layout,
        aliases_input=True,
    ),
    OpEntry(
        "to_copy",
        (aten._to_copy.default, dim_order_ops._to_dim_order_copy.default),
        "Conversions between float32, float16, int32, int64 and bool with contiguous dim order (float to int "
        "truncates; to bool tests != 0); conversions of constants are folded by preprocess." + _INT_STORAGE
        + " Float to int64 outside its storage's range (or NaN) is an error at execute.",
        dtypes=ANY_DTYPE | FP16,
        check=_check_to_copy,
        aliases_input=True,
        converts_dtype=True,
    ),
    OpEntry("alias_copy", (aten.alias_copy.default,), "A copy." + _INT_STORAGE, dtypes=ANY_DTYPE | FP16,
            aliases_input=True),
    # --- math, activations, comparisons, logical/bitwise, where,
    # reductions (dtype conversions are the to_copy entry above) ---
    OpEntry("div_rounding", (aten.div.Tensor_mode,),
            _BINARY + " rounding_mode 'trunc' and 'floor' on float32 and integers (as torch, floor division "
            "by 0 gives inf/NaN on floats; integer division by 0, and -2^31 / -1, is an error at execute); None "
            "(true division) on float32 and float16.",
            dtypes=NUMERIC | FP16, check=_check_div),
    OpEntry("pow", (aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, aten.pow.Scalar),
            _BINARY + " IEEE special cases as torch; integer powers by repeated multiplication "
            "(negative integer exponents of integers give 0 unless the base is +-1)." + _INT64_CHECKED,
            dtypes=NUMERIC | FP16, check=_check_binary, kind="transcendental"),
    OpEntry("minimum", (aten.minimum.default,),
            _BINARY + " NaN propagates.", dtypes=NUMERIC | FP16, check=_check_binary),
    OpEntry("maximum", (aten.maximum.default,),
            _BINARY + " NaN propagates.", dtypes=NUMERIC | FP16, check=_check_binary),
    OpEntry("where", (aten.where.self,),
            "Broadcasts condition, self and other; bool condition; self and other of one dtype." + _INT_STORAGE,
            dtypes=ANY_DTYPE | FP16, check=_check_where),
    OpEntry("comparison",
            tuple(getattr(aten, op).Tensor for op in ("eq", "ne", "lt", "le", "gt", "ge"))
            + tuple(getattr(aten, op).Scalar for op in ("eq", "ne", "lt", "le", "gt", "ge")),
            "eq, ne, lt, le, gt, ge: .Tensor with broadcasting and .Scalar; operands of one dtype, bool "
            "output; integer scalars with integer tensors." + _INT_STORAGE,
            dtypes=ANY_DTYPE | FP16, check=_check_compare),
    OpEntry("logical",
            (aten.logical_and.default, aten.logical_or.default, aten.logical_xor.default),
            "Broadcasting; operands of one dtype (nonzero is true), bool output." + _INT_STORAGE,
            dtypes=ANY_DTYPE | FP16, check=_check_compare),
    OpEntry("logical_not", (aten.logical_not.default,),
            _ELEMENTWISE + " bool output." + _INT_STORAGE, dtypes=ANY_DTYPE | FP16),
    OpEntry("bitwise",
            (aten.bitwise_and.Tensor, aten.bitwise_or.Tensor, aten.bitwise_xor.Tensor),
            "and, or, xor with broadcasting on integer and bool tensors of one dtype." + _INT_STORAGE,
            dtypes=frozenset({torch.int32, torch.int64, torch.bool}), check=_check_binary),
    OpEntry("bitwise_not", (aten.bitwise_not.default,),
            _ELEMENTWISE + " integer and bool tensors." + _INT_STORAGE,
            dtypes=frozenset({torch.int32, torch.int64, torch.bool})),
    OpEntry("neg", (aten.neg.default,), _ELEMENTWISE + _INT64_CHECKED, dtypes=NUMERIC | FP16),
    OpEntry("abs", (aten.abs.default,), _ELEMENTWISE + _INT64_CHECKED, dtypes=NUMERIC | FP16),
    OpEntry("sign", (aten.sign.default,), _ELEMENTWISE, dtypes=NUMERIC | FP16),
    OpEntry("exp", (aten.exp.default,), _ELEMENTWISE,
            kind="transcendental", dtypes=FLOATS),
    OpEntry("log", (aten.log.default,),
            _ELEMENTWISE + " log(0) = -inf, log(x < 0) = NaN.", kind="transcendental", dtypes=FLOATS),
    OpEntry("log10", (aten.log10.default,),
            _ELEMENTWISE, kind="transcendental", dtypes=FLOATS),
    OpEntry("sqrt", (aten.sqrt.default,),
            _ELEMENTWISE + " sqrt(x < 0) = NaN.", kind="transcendental", dtypes=FLOATS),
    OpEntry("rsqrt", (aten.rsqrt.default,),
            _ELEMENTWISE + " rsqrt(0) = inf.", kind="transcendental", dtypes=FLOATS),
    OpEntry("reciprocal", (aten.reciprocal.default,),
            _ELEMENTWISE, kind="transcendental", dtypes=FLOATS),
    OpEntry("sin", (aten.sin.default,),
            _ELEMENTWISE + " The device's sin (accuracy as the Vulkan driver gives).", kind="transcendental", dtypes=FLOATS),
    OpEntry("cos", (aten.cos.default,),
            _ELEMENTWISE + " The device's cos (accuracy as the Vulkan driver gives).", kind="transcendental", dtypes=FLOATS),
    OpEntry("round", (aten.round.default,),
            _ELEMENTWISE + " Halves to even, as torch; decimals=0 only.", dtypes=FLOATS),
    OpEntry("erf", (aten.erf.default,),
            _ELEMENTWISE + " |error| < 1.2e-7.", kind="transcendental", dtypes=FLOATS),
    OpEntry("silu", (aten.silu.default,),
            _ELEMENTWISE + " Kept from decomposition.", keep_undecomposed=True, kind="transcendental", dtypes=FLOATS),
    OpEntry("hardswish", (aten.hardswish.default,),
            _ELEMENTWISE + " Kept from decomposition.", keep_undecomposed=True, dtypes=FLOATS),
    OpEntry("hardsigmoid", (aten.hardsigmoid.default,),
            _ELEMENTWISE + " Kept from decomposition.", keep_undecomposed=True, dtypes=FLOATS),
    OpEntry("leaky_relu", (aten.leaky_relu.default,),
            _ELEMENTWISE, keep_undecomposed=True, dtypes=FLOATS),
    OpEntry("softplus", (aten.softplus.default,),
            _ELEMENTWISE + " beta (nonzero) and threshold; kept from decomposition.",
            check=_check_softplus, keep_undecomposed=True, kind="transcendental", dtypes=FLOATS),
    OpEntry("elu", (aten.elu.default,),
            _ELEMENTWISE + " alpha, scale, input_scale.", keep_undecomposed=True, kind="transcendental", dtypes=FLOATS),
    OpEntry("sum", (aten.sum.dim_IntList,),
            "Over any dims (an empty list: all), keepdim; float32, or integers/bool giving int64; "
            "no dtype conversion; int64 sums are exact." + _INT_STORAGE + _INT64_CHECKED,
            dtypes=ANY_DTYPE | FP16, check=_check_sum, kind="reduction"),
    OpEntry("mean", (aten.mean.dim, aten.mean.default),
            "Over any dims (an empty list: all), keepdim; float32 and float16.", check=_check_same_dtype, kind="reduction", dtypes=FLOATS),
    OpEntry("amax", (aten.amax.default,),
            "Over any dims (an empty list: all), keepdim; NaN propagates.", dtypes=NUMERIC | FP16,
            check=_check_same_dtype, kind="reduction"),
    OpEntry("amin", (aten.amin.default,),
            "Over any dims (an empty list: all), keepdim; NaN propagates.", dtypes=NUMERIC | FP16,
            check=_check_same_dtype, kind="reduction"),
    OpEntry("argmax", (aten.argmax.default,),
            "One dim or the flattened input; keepdim; ties give the first index, NaN counts as the "
            "largest." + _INT_STORAGE, dtypes=NUMERIC | FP16, kind="reduction"),
    OpEntry("argmin", (aten.argmin.default,),
            "One dim or the flattened input; keepdim; ties give the first index, NaN counts as the "
            "smallest." + _INT_STORAGE, dtypes=NUMERIC | FP16, kind="reduction"),
    OpEntry("max_dim", (aten.max.dim,),
            "Values and indices along one dim; keepdim; ties give the first index, NaN propagates; "
            "indices int64." + _INT_STORAGE, dtypes=NUMERIC | FP16, kind="reduction"),
    OpEntry("min_dim", (aten.min.dim,),
            "Values and indices along one dim; keepdim; ties give the first index, NaN propagates; "
            "indices int64." + _INT_STORAGE, dtypes=NUMERIC | FP16, kind="reduction"),
    OpEntry("var", (aten.var.correction,),
            "Over any dims (None: all), keepdim, any correction (std exports as var + sqrt); "
            "two passes around the mean.", kind="reduction", dtypes=FLOATS),
    # ---- convolution, pooling, upsampling, normalization, cat
    OpEntry("cat", (aten.cat.default,),
            "Any dim, any number of inputs, ranks 1-8; inputs of the output's dtype." + _INT_STORAGE,
            dtypes=ANY_DTYPE | FP16, check=_check_cat),
    OpEntry("convolution", (aten.convolution.default,),
            "1-D and 2-D (rank 3 or 4 input); any stride, padding, dilation, groups (depthwise too); "
            "optional bias; transposed with output_padding; any batch size. 3-D is not supported.",
            check=_check_convolution, kind="matmul", dtypes=FLOATS),
    # ---- convolution with a fused clamp
    OpEntry("conv2d_clamp", (et_vk.vkd_conv2d_clamp.default,),
            "et_vk.vkd_conv2d_clamp: a convolution (not transposed) whose output is clamped to [min, max]; "
            "optional residual of the output's sizes added before the clamp; made at preprocess from "
            "conv [+ add] + relu / hardtanh / clamp (batch norm folded in first).",
            check=_check_conv2d_clamp, kind="matmul", dtypes=FLOATS),
    OpEntry("max_pool2d_with_indices", (aten.max_pool2d_with_indices.default,),
            "[C, H, W] or [N, C, H, W]; any kernel, stride, padding, dilation, ceil_mode; the int64 indices "
            "are int64, or int32 where the GPU stores int64 as int32.", dtypes=FP32 | {torch.int64} | FP16, check=_check_pool_window),
    OpEntry("avg_pool2d", (aten.avg_pool2d.default,),
            "[C, H, W] or [N, C, H, W]; ceil_mode, count_include_pad both ways, divisor_override.",
            check=_check_avg_pool, kind="reduction", dtypes=FLOATS),
    OpEntry("adaptive_avg_pool2d", (aten._adaptive_avg_pool2d.default,),
            "[C, H, W] or [N, C, H, W]; any output size (a 1x1 output exports as mean.dim).",
            check=_check_pool_input, kind="reduction", dtypes=FLOATS),
    OpEntry("batch_norm_inference", (aten._native_batch_norm_legit_no_training.default,),
            "Inference (running statistics), input rank >= 2, channels in dim 1; weight and bias optional.",
            check=_check_batch_norm, dtypes=FLOATS),
    OpEntry("native_group_norm", (aten.native_group_norm.default,),
            "Input rank >= 2, channels in dim 1; weight and bias optional; also outputs mean and rstd.",
            check=_check_group_norm, kind="reduction", dtypes=FLOATS),
    OpEntry("upsample_nearest2d", (aten.upsample_nearest2d.vec,),
            "[N, C, H, W]; output_size or scale_factors (up or down).", check=_check_upsample, dtypes=FLOATS),
    OpEntry("upsample_bilinear2d", (aten.upsample_bilinear2d.vec,),
            "[N, C, H, W]; output_size or scale_factors; align_corners both ways.", check=_check_upsample, dtypes=FLOATS),
    OpEntry("pixel_shuffle", (aten.pixel_shuffle.default,),
            "Kept from decomposition; rank >= 3." + _INT_STORAGE, dtypes=ANY_DTYPE | FP16,
            check=_check_pixel_shuffle, keep_undecomposed=True),
    OpEntry("pixel_unshuffle", (aten.pixel_unshuffle.default,),
            "Kept from decomposition; rank >= 3." + _INT_STORAGE, dtypes=ANY_DTYPE | FP16,
            check=_check_pixel_shuffle, keep_undecomposed=True),
    OpEntry("grid_sampler_2d", (aten.grid_sampler_2d.default,),
            "Bilinear and nearest (not bicubic); zeros, border and reflection padding; align_corners both ways.",
            check=_check_grid_sampler, dtypes=FLOATS),
    # Shape and data movement, indexing, creation,
    # embedding, attention, rms_norm.
    OpEntry(
        "split_with_sizes_copy",
        (aten.split_with_sizes_copy.default,),
        "What split and chunk export to; one slice per output; static sizes, so no resize." + _INT_STORAGE,
        dtypes=ANY_DTYPE | FP16,
        supports_resize=False,
    ),
    OpEntry("repeat", (aten.repeat.default,), "Output rank up to 8." + _INT_STORAGE,
            dtypes=ANY_DTYPE | FP16),
    OpEntry("flip", (aten.flip.default,), "Any dims; ranks 0-8." + _INT_STORAGE, dtypes=ANY_DTYPE | FP16),
    OpEntry(
        "constant_pad_nd",
        (aten.constant_pad_nd.default,),
        "What F.pad(mode='constant') exports to; negative pads crop; int fill values must fit the dtype." + _INT_STORAGE,
        dtypes=ANY_DTYPE | FP16,
        check=_check_constant_pad,
    ),
    OpEntry("roll", (aten.roll.default,),
            "Kept from decomposition (which needs fmod); any dims, or flattened without dims." + _INT_STORAGE,
            dtypes=ANY_DTYPE | FP16, keep_undecomposed=True),
    OpEntry("unfold_copy", (aten.unfold_copy.default,),
            "Tensor.unfold; input rank 1-7." + _INT_STORAGE, dtypes=ANY_DTYPE | FP16, check=_check_unfold),
    OpEntry(
        "index_select",
        (aten.index_select.default,),
        "int32/int64 0-d or 1-D index (negative ones are out of range, as in eager). Along dim 0, an input larger "
        "than one binding's maxStorageBufferRange is read in windows of rows." + _INT_STORAGE + _INDEX_CHECKED,
        dtypes=ANY_DTYPE | FP16,
        check=_check_index_select,
    ),
    OpEntry("gather", (aten.gather.default,),
            "int32/int64 index of the input's rank." + _INT_STORAGE + _INDEX_CHECKED, dtypes=ANY_DTYPE | FP16, check=_check_gather),
    OpEntry(
        "index",
        (aten.index.Tensor,),
        "Advanced indexing with 1-4 int32/int64 index tensors (broadcast) and None entries; no boolean masks; "
        "negative indices count from the end." + _INT_STORAGE + _INDEX_CHECKED,
        dtypes=ANY_DTYPE | FP16,
        check=_check_index_tensor,
    ),
    OpEntry(
        "index_put",
        (aten.index_put.default,),
        "In place into a mutable buffer that nothing else reads (a KV cache, which then lives on the GPU "
        "inside the delegate): one 1-D int32/int64 index tensor (the others None), values of self's rank; "
        "negative indices count from the end; accumulate=False." + _INT_STORAGE + _INDEX_CHECKED,
        dtypes=ANY_DTYPE | FP16,
        check=_check_index_put,
        aliases_input=True,
        updates_state=True,
    ),
    OpEntry("rope", (et_vk.vkd_rope.default,),
            "et_vk.vkd_rope: rotary position embedding, rotate-half layout, x [..., T, D] with cos and sin [T, D], "
            "or x [..., T, H, D] with cos and sin [T, 1, D]; "
            "backends/rope_fusion.py makes it from x * cos + rotate_half(x) * sin.",
            dtypes=FLOATS, check=_check_rope, kind="transcendental"),
    OpEntry("sdpa_kv_cache", (et_vk.vkd_sdpa_kv_cache.default,),
            "et_vk.vkd_sdpa_kv_cache: attention over a KV cache at positions, q [B, T, H, D], caches [B, S, KVH, D] "
            "(H a multiple of KVH), input_pos [T] int32/int64; query t sees cache entries 0..input_pos[t], and only "
            "those are visited (the positions are read on the GPU); a position outside [0, S) is an error. Head "
            "dims up to 256. backends/attention_fusion.py makes it from sdpa over transposed caches with the mask "
            "arange(S) <= input_pos[:, None].",
            dtypes=FLOATS | {torch.int32, torch.int64}, check=_check_sdpa_kv_cache, kind="matmul"),
    OpEntry("sdpa_qkv", (et_vk.vkd_sdpa_qkv.default,),
            "et_vk.vkd_sdpa_qkv: attention of a packed q|k|v projection, qkv [B, T, 3 * heads * D] -> [B, T, heads, D] "
            f"(optional is_causal and scale), up to {SDPA_QKV_MAX_TOKENS} tokens and head dims up to 256; q, k and v "
            "are read in place and the output written in the layout the heads merge from. "
            "backends/packed_attention.py makes it from reshape -> permute -> select x3 -> sdpa -> transpose.",
            dtypes=FLOATS, check=_check_sdpa_qkv, kind="matmul"),
    OpEntry("sdpa_bthd", (et_vk.vkd_sdpa_bthd.default,),
            "et_vk.vkd_sdpa_bthd: attention of heads in the projections' layout, q [B, T, H, E], k [B, S, KVH, E], "
            "v [B, S, KVH, Ev] (H a multiple of KVH) -> [B, T, H, Ev] (optional is_causal and scale), up to "
            f"{SDPA_QKV_MAX_TOKENS} keys and head dims up to 256; read and written through strides, no transposes. "
            "backends/packed_attention.py makes it from transpose x3 -> sdpa -> transpose.",
            dtypes=FLOATS, check=_check_sdpa_bthd, kind="matmul"),
    OpEntry("rope_kv_update", (et_vk.vkd_rope_kv_update.default,),
            "et_vk.vkd_rope_kv_update: rotary embedding (rotate-half) of q [B, T, H, D] and k [B, T, KVH, D] with "
            "cos and sin [T, 1, D], and the KV-cache writes: rope(k) and v [B, T, KVH, D] into k_cache and v_cache "
            "[B, S, KVH, D] along dim 1 at input_pos [T] int32/int64, in place (mutable buffers that nothing else "
            "reads, which then live on the GPU inside the delegate); returns (rope(q), k_cache, v_cache). One "
            "dispatch; a position outside [0, S) is an error. backends/rope_fusion.py makes it from the two vkd_rope "
            "and two index_put that feed et_vk.vkd_sdpa_kv_cache when the compile option fuse_rope_attention is False "
            "(by default they fuse with the attention into et_vk.vkd_sdpa_rope_kv).",
            dtypes=FLOATS | {torch.int32, torch.int64}, check=_check_rope_kv_update, kind="transcendental",
            updates_state=True, state_args=("k_cache", "v_cache")),
    OpEntry("sdpa_rope_kv", (et_vk.vkd_sdpa_rope_kv.default,),
            "et_vk.vkd_sdpa_rope_kv: one attention layer's step over its KV cache: vkd_rope_kv_update's rotary "
            "embedding and cache writes (in place), then vkd_sdpa_kv_cache's attention over the updated caches; "
            "returns (out [B, T, H, D], k_cache, v_cache). Up to 16 queries (decode) the rope and the writes run "
            "inside the attention's split kernel (no dispatch of their own). Head dims up to 256, even; a position "
            "outside [0, S) is an error. backends/rope_fusion.py makes it from the two vkd_rope and two index_put "
            "that feed et_vk.vkd_sdpa_kv_cache.",
            dtypes=FLOATS | {torch.int32, torch.int64}, check=_check_sdpa_rope_kv, kind="matmul",
            updates_state=True, state_args=("k_cache", "v_cache")),
    OpEntry("embedding", (aten.embedding.default,),
            "2-D weight; int32/int64 indices of any rank up to 7. A weight larger than one binding's "
            "maxStorageBufferRange is read in windows of rows." + _INT_STORAGE + _INDEX_CHECKED, dtypes=ANY_DTYPE | FP16,
            check=_check_embedding),
    OpEntry("full", (aten.full.default,),
            "Also zeros and ones; without tensor inputs it folds to a constant at preprocess." + _INT_STORAGE,
            dtypes=ANY_DTYPE | FP16, check=_check_full),
    OpEntry("full_like", (aten.full_like.default,),
            "Also zeros_like and ones_like; any output dtype; contiguous memory format." + _INT_STORAGE,
            dtypes=ANY_DTYPE | FP16, check=_check_fill_like),
    OpEntry("arange", (aten.arange.start_step,),
            "Folds to a constant at preprocess; float, int32 and int64." + _INT_STORAGE, dtypes=NUMERIC | FP16,
            check=_check_arange),
    # The edge graph keeps scalar_tensor as an ATen op (ExecuTorch does not wrap it).
    OpEntry("scalar_tensor", (torch.ops.aten.scalar_tensor.default,),
            "Folds to a constant at preprocess." + _INT_STORAGE, dtypes=ANY_DTYPE | FP16),
    OpEntry(
        "scaled_dot_product_attention",
        (aten.scaled_dot_product_attention.default,),
        "Kept from decomposition; one fused kernel with an online softmax. float32 or float16 q/k/v of rank 2-8, "
        "head dims up to 256; is_causal, a float or bool attn_mask (broadcast), scale, enable_gqa; "
        "dropout_p=0 only; fully masked rows give 0 like PyTorch.",
        dtypes=frozenset({torch.float32, torch.bool}) | FP16,
        check=_check_sdpa,
        keep_undecomposed=True,
        kind="matmul",
    ),
    OpEntry(
        "rms_norm",
        (aten.rms_norm.default,),
        "Kept from decomposition; fused, one workgroup per row; optional weight; eps=None is float32's epsilon.",
        check=_check_rms_norm,
        keep_undecomposed=True,
        kind="reduction", dtypes=FLOATS,
    ),
    # ---- static int8 from PT2E (VulkanQuantizer)
    OpEntry("quantize_per_tensor", (quantized_decomposed.quantize_per_tensor.default,),
            "Static int8: clamp(round(x / scale) + zero_point, quant_min, quant_max), round half to even; "
            "literal scale and zero point." + _Q8_NOTES, dtypes=_Q8_ACTIVATIONS, check=_check_per_tensor),
    OpEntry("dequantize_per_tensor", (quantized_decomposed.dequantize_per_tensor.default,),
            "int8 to float32: (x - zero_point) * scale; literal scale and zero point." + _Q8_NOTES,
            dtypes=_Q8_ACTIVATIONS, check=_check_per_tensor),
    OpEntry("dequantize_per_channel", (quantized_decomposed.dequantize_per_channel.default,),
            "Only as the int8 weight (axis 0) of a conv2d or linear that fuses into et_vk.vkd_q8ta_conv2d or "
            "vkd_q8ta_linear; the fusion pass consumes it (no kernel of its own)." + _Q8_NOTES,
            dtypes=_Q8_WEIGHTS, kind="quantized", fused=True),
    OpEntry("vkd_q8ta_conv2d", (et_vk.vkd_q8ta_conv2d.default,),
            "PT2E dq -> conv2d -> [relu | hardtanh] -> q fused: int8 NCHW in and out, per-channel int8 weights, any stride, "
            "padding, dilation and groups (depthwise too), optional float bias." + _Q8_WEIGHTED + _Q8_NOTES,
            dtypes=_Q8_WEIGHTS, kind="quantized"),
    OpEntry("vkd_q8ta_linear", (et_vk.vkd_q8ta_linear.default,),
            "PT2E dq -> linear -> [relu | hardtanh] -> q fused: int8 input of rank 1-8, per-channel int8 weights, optional "
            "float bias." + _Q8_WEIGHTED + _Q8_NOTES, dtypes=_Q8_WEIGHTS, kind="quantized"),
    OpEntry("vkd_q8ta_add", (et_vk.vkd_q8ta_add.default,),
            "PT2E dq, dq -> add -> [relu | hardtanh] -> q fused: int8 operands with their own scales, broadcast, "
            "rank <= 8; dequantized and added in float32 like the CPU, then requantized."
            + _Q8_NOTES, dtypes=_Q8_ACTIVATIONS, kind="quantized"),
]


# ----------------------------------------------------------------------------
# torchao weight-only and dynamic-activation quantized linear and
# quantized embedding, fused into et_vk ops by backends/torchao_fusion.py. The
# torchao ops are accepted only inside patterns that the fusion pass rewrites.
_QUANT_DTYPES = frozenset({torch.float32, torch.int8, torch.int32, torch.int64})
_QSCHEMES = ("4-bit (packed 8 per int32 word, dequantized in the shader) or 8-bit signed weights, "
             "per-group along K (group size a multiple of 8 for 4-bit, 4 for 8-bit) or per-row (PerAxis(0)); "
             "symmetric or with int zero points; float32 scales.")


def _check_fused_linear(node: Node) -> Optional[str]:
    return _quantized_weight_reason(node.args[0], node.args[1], node.args[5], node.args[6])


def _quantized_weight_reason(x: Node, packed: Node, bits: int, group_size: int) -> Optional[str]:
    if bits not in (4, 8):
        return f"bits={bits}: only 4 and 8 are supported"
    xv, pv = fake_tensor(x), fake_tensor(packed)
    if pv is None or pv.dim() != 2 or pv.dtype != torch.int32:
        return "the packed weight must be a 2-D int32 tensor"
    k = xv.shape[-1] if xv is not None and xv.dim() >= 1 else None
    if not isinstance(k, int) or group_size <= 0 or k % group_size or (group_size != k and group_size % (32 // bits)):
        return f"group size {group_size} must divide K and be a multiple of {32 // bits} (or equal K)"
    return None


def _check_fused_embedding(node: Node) -> Optional[str]:
    bits, group_size, dim = node.args[4], node.args[5], node.args[6]
    if bits not in (4, 8):
        return f"bits={bits}: only 4 and 8 are supported"
    if group_size <= 0 or dim % group_size or (group_size != dim and group_size % (32 // bits)):
        return f"group size {group_size} must divide {dim} and be a multiple of {32 // bits} (or equal it)"
    return None


def _torchao_entries() -> List[OpEntry]:
    try:
        import torchao.quantization.quant_primitives  # noqa: F401  (registers the torchao ops)
    except ImportError:
        return []
    torchao = exir_ops.edge.torchao
    return [
        OpEntry("torchao_dequantize_affine", (torchao.dequantize_affine.default,),
                "Only as the weight of a linear or embedding (IntxWeightOnlyConfig, "
                "Int8DynamicActivationIntxWeightConfig), or a per-token int8 activation feeding such a linear; "
                "fused into et_vk.vkd_linear_qw / vkd_linear_dq8a_qw / vkd_embedding_qw. " + _QSCHEMES,
                dtypes=_QUANT_DTYPES, check=_qops.fusion_reason, fused=True, kind="matmul"),
        OpEntry("torchao_quantize_affine", (torchao.quantize_affine.default,),
                "Only per-token int8 asymmetric activations of a fused vkd_linear_dq8a_qw.",
                dtypes=_QUANT_DTYPES, check=_qops.activation_fusion_reason, fused=True, kind="matmul"),
        OpEntry("torchao_choose_qparams_affine", (torchao.choose_qparams_affine.default,),
                "Only per-token int8 asymmetric activations of a fused vkd_linear_dq8a_qw.",
                dtypes=_QUANT_DTYPES, check=_qops.activation_fusion_reason, fused=True, kind="matmul"),
    ]


def _check_fused_linears(node: Node) -> Optional[str]:
    """vkd_linear_qw_fused: each weight as _check_fused_linear, one K, bits and group size (the op's own)."""
    x, norm_shape, norm_weight = fake_tensor(arg(node, "x")), arg(node, "norm_shape"), arg(node, "norm_weight")
    packed, scales, zeros = arg(node, "packed_weights"), arg(node, "scales"), arg(node, "zeros")
    biases, silu_mul, residual = arg(node, "biases"), arg(node, "silu_mul"), arg(node, "residual")
    if not 1 <= len(packed) <= 3 or not len(packed) == len(scales) == len(zeros) == len(biases):
        return "1 to 3 weights, each with its scales, zero points and bias"
    if len({z is None for z in zeros}) != 1:
        return "zero points for every weight or none"
    if silu_mul and (len(packed) != 2 or fake_tensor(packed[0]).shape[0] != fake_tensor(packed[1]).shape[0]):
        return "silu_mul takes two weights of one N"
    if residual is not None and not silu_mul and len(packed) != 1:
        return "a residual needs one output"
    if x is None or x.dtype != torch.float32:
        return "the input must be float32"
    if norm_shape and list(norm_shape) != [x.shape[-1]]:
        return f"the norm must be over the last dimension ({x.shape[-1]}), not {list(norm_shape)}"
    if norm_weight is not None and (not norm_shape or fake_tensor(norm_weight).numel() != x.shape[-1]):
        return "the norm weight needs the norm and K values"
    bits, group_size = arg(node, "bits"), arg(node, "group_size")
    for weight in packed:
        reason = _quantized_weight_reason(arg(node, "x"), weight, bits, group_size)
        if reason is not None:
            return reason
    return None


_QLINEAR_ENTRIES = _torchao_entries() + [
    OpEntry("vkd_linear_qw", (exir_ops.edge.et_vk.vkd_linear_qw.default,),
            "Weight-only quantized linear: x [..., K] float32 times dequantized weight [N, K], optional bias. "
            + _QSCHEMES + " A GEMV kernel for M <= 4 rows, a tiled one above; from 32 rows "
            "(VKDELEGATE_QLINEAR_COOP_MIN_ROWS), on devices with cooperative matrices, a tensor-core kernel "
            "that rounds x and the dequantized weight to float16 (relative error ~1e-3, and |x| above 65504 "
            "overflows; VKDELEGATE_QLINEAR_NO_COOPMAT=1 keeps the float32 kernel).",
            dtypes=_QUANT_DTYPES, check=_check_fused_linear, kind="matmul"),
    OpEntry("vkd_linear_qw_fused", (exir_ops.edge.et_vk.vkd_linear_qw_fused.default,),
            "Weight-only quantized linears of one input, fused by backends/linear_fusion.py (a decode layer's "
            "[rms_norm +] q/k/v, wo + residual, [rms_norm +] w1/w3 + silu(a) * b, w2 + residual): "
            "x [..., K] float32, optionally rms_norm(x, [K], norm_weight, norm_eps) first, then 1-3 weights of one "
            "K, bits and group size, each x @ W_j^T + bias_j into its own output; silu_mul (two weights of one N): "
            "one output silu(out_0) * out_1; residual (one output): + residual. One row: one dispatch "
            "(qlinear_gemv_fused.glsl: the norm's sum of squares in the products' loop, workgroups over the weights' "
            "concatenated columns); more rows: aten.rms_norm, vkd_linear_qw per weight and an elementwise "
            "epilogue. Float32 only (as vkd_linear_qw). " + _QSCHEMES,
            dtypes=_QUANT_DTYPES, check=_check_fused_linears, kind="matmul"),
    OpEntry("vkd_linear_dq8a_qw", (exir_ops.edge.et_vk.vkd_linear_dq8a_qw.default,),
            "Dynamic int8 activations (asymmetric, per token, quantized on the GPU inside the op) times "
            "quantized weights, integer dot products accumulated in int32 per group. " + _QSCHEMES,
            dtypes=_QUANT_DTYPES, check=_check_fused_linear, kind="matmul"),
    OpEntry("vkd_embedding_qw", (exir_ops.edge.et_vk.vkd_embedding_qw.default,),
            "Quantized embedding: rows gathered and dequantized in the shader; int32/int64 indices of rank up "
            "to 7." + _INDEX_CHECKED + " " + _QSCHEMES,
            dtypes=_QUANT_DTYPES, check=_check_fused_embedding, kind="matmul"),
]


# ----------------------------------------------------------------------------
# Linear on raw GGUF blocks (quant/gguf_linear.py, runtime/ops/gguf_linear.cpp)


def _check_linear_gguf(node: Node) -> Optional[str]:
    ggml_type, n, k = arg(node, "ggml_type"), arg(node, "n"), arg(node, "k")
    error = _gguf.shape_error(ggml_type, n, k)
    if error:
        return error
    x, weight, bias = fake_tensor(arg(node, "x")), fake_tensor(arg(node, "weight")), arg(node, "bias")
    if x.dtype != torch.float32:
        return f"input is {x.dtype}; float32 only"
    if x.dim() < 1 or x.shape[-1] != k:
        return f"input's last dim is not K={k}"
    if weight.dtype != torch.int32 or weight.numel() * 4 < _gguf.weight_nbytes(ggml_type, n, k):
        return "weight must be int32 words holding the GGUF blocks (GGUFLinear packs them)"
    if bias is not None and (fake_tensor(bias).dtype != torch.float32 or tuple(fake_tensor(bias).shape) != (n,)):
        return f"bias must be float32 of shape ({n},)"
    return None


def _check_embedding_gguf(node: Node) -> Optional[str]:
    ggml_type, rows, dim = arg(node, "ggml_type"), arg(node, "rows"), arg(node, "dim")
    error = _gguf.shape_error(ggml_type, rows, dim)
    if error:
        return error
    weight, indices = fake_tensor(arg(node, "weight")), fake_tensor(arg(node, "indices"))
    if weight.dtype != torch.int32 or weight.numel() * 4 < _gguf.weight_nbytes(ggml_type, rows, dim):
        return "weight must be int32 words holding the GGUF blocks (GGUFEmbedding packs them)"
    if indices.dtype not in (torch.int32, torch.int64) or indices.dim() > 7:
        return "indices must be int32 or int64 of rank up to 7"
    return None


_GGUF_ENTRIES = [
    OpEntry(
        "linear_gguf",
        (exir_ops.edge.et_vk.vkd_linear_gguf.default,),
        "GGUF Q4_0, Q4_1, Q8_0, Q4_K, Q6_K weights read in their block layouts (vkdelegate.gguf); "
        "K a multiple of 32 (Q4_0, Q4_1, Q8_0) or 256 (Q4_K, Q6_K); float32 input, optional bias; weight as int32 words.",
        dtypes=frozenset({torch.float32, torch.int32}),
        check=_check_linear_gguf,
        kind="matmul",
    ),
    OpEntry(
        "embedding_gguf",
        (exir_ops.edge.et_vk.vkd_embedding_gguf.default,),
        "Embedding rows gathered from GGUF blocks and dequantized in the shader (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K; "
        "a tied LM head shares the blocks); int32/int64 indices of rank up to 7." + _INT_STORAGE + _INDEX_CHECKED,
        dtypes=frozenset({torch.float32, torch.int32, torch.int64}),
        check=_check_embedding_gguf,
        kind="matmul",
    ),
]




def _wheel_gguf_entries() -> List[OpEntry]:
    """The executorch wheel's GGUF weights (extension/llm/export/gguf.py), fused by backends/gguf_fusion.py."""
    if not _gguf_dequant.wheel_op_available():
        return []
    return [
        OpEntry("torchao_dequantize_gguf", (exir_ops.edge.torchao.dequantize_gguf.default,),
                "Only as the weight of a linear (or of x @ weight.t()) or embedding (ExportableGGUFTensor), "
                "dequantized to float32, in a format the GGUF kernels read (Q4_K, Q6_K from the wheel; Q5_K stays "
                "on the CPU); fused into et_vk.vkd_linear_gguf / vkd_embedding_gguf on the raw blocks.",
                dtypes=frozenset({torch.uint8, torch.float32}), check=_gguf_dequant.fusion_reason, fused=True,
                kind="matmul"),
    ]


REGISTRY = OpRegistry(_ENTRIES + _QLINEAR_ENTRIES + _GGUF_ENTRIES + _wheel_gguf_entries())


def lookup(node: Node) -> Tuple[Optional[OpEntry], Optional[str]]:
    return REGISTRY.lookup(node)


def state_updates(node: Node) -> List[Tuple[Node, int]]:
    """(argument, output index) of each buffer that node, an updates_state op, writes in place."""
    entry = REGISTRY.entry_for(node.target)
    if entry is None or not entry.updates_state:
        return []
    if not entry.state_args:
        return [(node.args[0], 0)]
    first = len(output_tensors(node)) - len(entry.state_args)
    return [(arg(node, name), first + index) for index, name in enumerate(entry.state_args)]


def state_update_positions(name: str) -> List[Tuple[int, int]]:
    """(argument position, output index) of each buffer that the op `name` writes in place: the
    runtime makes that output the buffer's storage (ComputeGraph::alias_state)."""
    for entry in REGISTRY:
        if name not in entry.op_names or not entry.updates_state:
            continue
        if not entry.state_args:
            return [(0, 0)]
        target = entry.targets[entry.op_names.index(name)]
        names = [argument.name for argument in target._schema.arguments]
        outputs = len(target._schema.returns)
        return [(names.index(arg_name), outputs - len(entry.state_args) + index)
                for index, arg_name in enumerate(entry.state_args)]
    return []


def aliasing_op_names() -> FrozenSet[str]:
    """Op names whose runtime output is a view of their first argument (see OpEntry.aliases_input)."""
    return frozenset(name for entry in REGISTRY if entry.aliases_input for name in entry.op_names)


def registered_op_names() -> List[str]:
    """Every op name ("aten.add.Tensor", ...) the partitioner may put in a blob's chain."""
    return [name for entry in REGISTRY if not entry.fused for name in entry.op_names]
