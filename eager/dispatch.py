"""Ops on the eager vulkan device through the delegate's kernels.

Each op the registry (op_registry.py) covers gets a kernel here (at PrivateUse2, under the C++
kernel at PrivateUse1 that serves cached calls without Python: csrc/vulkan_device.cpp). A call builds a
one-op graph the way preprocess does (an fx node of the edge op with meta tensors, the
registry's checks, GraphIR, memory planning, serialize_graph) once per (op, input sizes and
dtypes, other arguments), loads it on the runtime, caches it, and runs it on the device
tensors' buffers (the runtime's _eager_run: device-to-device copies in the graph's command
buffer). A call the registry rejects, or whose graph the runtime cannot build, runs on the CPU,
with one warning per op; so do ops with no kernel here (the C++ fallback in csrc/).
"""

import threading
import warnings
from typing import Any, Dict, List, Optional, Tuple

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.utils._pytree import tree_map

from ..backends.memory_planning import plan_memory
from ..backends.vulkan_preprocess import _scalar_value as scalar_value
from ..fx_nodes import op_name, schema_arguments
from ..op_registry import REGISTRY, aliasing_op_names, state_update_positions
from ..runtime import _vkdelegate
from ..serialization.blob import serialize_graph
from ..serialization.graph_ir import (
    BoolListValue,
    BoolValue,
    DoubleListValue,
    DoubleValue,
    GraphIR,
    IntListValue,
    IntValue,
    NullValue,
    OpCall,
    StringValue,
    TensorValue,
    ValueListValue,
)
from ..serialization.torch_dtypes import schema_dtype
from . import DEVICE, _C

# Entries that need no kernel of their own here: copies and conversions go through copy_ (csrc/).
_SKIPPED_ENTRIES = {"clone", "to_copy"}

_lock = threading.Lock()
_cache: Dict[tuple, "_Cached"] = {}
_stats = {"graphs": 0, "hits": 0, "misses": 0, "fallback_calls": 0}
_warned: set = set()
_native_fallback_base = 0  # the C++ fallback's calls when the counters were last zeroed
_aliasing = aliasing_op_names()


class _Cached:
    """A key's one-op graph and its outputs' (sizes, dtype), or why it runs on the CPU."""

    def __init__(self, graph=None, outputs=None, multi: bool = False, reason: Optional[str] = None,
                 states: Optional[Dict[int, int]] = None):
        self.graph = graph
        self.outputs = outputs
        # For the C++ kernels (csrc/ fast_put): the graph's address, the outputs' dtypes by name.
        self.address = _vkdelegate._eager_graph_address(graph) if graph is not None else 0
        self.output_names = [None if spec is None else (list(spec[0]), str(spec[1])) for spec in outputs or ()]
        self.multi = multi
        self.reason = reason
        # Tensor arguments (by position among the call's tensors) that are states the op updates in
        # place (index_put, vkd_rope_kv_update): the output index whose storage each starts from.
        self.states = states or {}


def cache_stats() -> Dict[str, Any]:
    """One-op graphs built, cache hits (the C++ kernels' and Python's) and misses (a miss builds a
    graph or finds the op must fall back), calls that ran on the CPU (through either fallback),
    the ops that did; since the process began, the batches of queued ops submitted (and the
    seconds spent submitting and waiting for them), the queued runs bound to the tensors' buffers
    and those that copied their operands; the freed buffers kept for new tensors."""
    native = _C.fallback_counts()  # op name -> calls, of the C++ fallback
    _, fast_hits = _C.fast_stats()
    with _lock:
        stats = dict(_stats)
        stats["hits"] += fast_hits  # calls the C++ kernels served from their cache
        stats["cached_keys"] = len(_cache)
        stats["fallback_calls"] += sum(native.values()) - _native_fallback_base
    stats["queue_submits"], stats["queue_submit_seconds"] = _vkdelegate._eager_submits()
    stats["kept_buffers"], stats["kept_bytes"] = _vkdelegate._eager_pool()
    stats["bound_runs"], stats["copied_runs"] = _vkdelegate._eager_runs()
    stats["fallback_ops"] = sorted(set(_warned) | set(native))
    return stats


def clear_cache() -> None:
    """Drops every cached graph and zeroes the counters (the warnings already given stay given)."""
    global _native_fallback_base
    _vkdelegate._eager_flush()  # queued ops may use the graphs
    native_calls = sum(_C.fallback_counts().values())
    _C.fast_clear()
    with _lock:
        _native_fallback_base = native_calls
        _cache.clear()
        for key in _stats:
            _stats[key] = 0


def _is_device(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == DEVICE


def _leaves(args: tuple, kwargs: dict) -> List[Any]:
    """The arguments with lists opened (an op's arguments nest no deeper), in the order
    tree_map visits them; cheaper than pytree on every call."""
    out = []
    for item in (*args, *kwargs.values()):
        if isinstance(item, (list, tuple)):
            out.extend(item)
        else:
            out.append(item)
    return out


def _check_call(name: str, leaves: List[Any]) -> bool:
    """Raises for a backward pass or tensors on another device; whether any argument is a scalar
    (a Python number or a 0-dim CPU tensor) that _scalars_to_device must move."""
    if torch._C._current_graph_task_id() != -1:
        raise RuntimeError(
            f"vulkan device: {name} in a backward pass: autograd is not supported on the eager vulkan "
            "device (run the model under torch.no_grad() or torch.inference_mode())")
    scalars = False
    for item in leaves:
        if isinstance(item, torch.Tensor):
            device = item.device.type
            if device == DEVICE:
                continue
            if not (device == "cpu" and item.dim() == 0):
                raise RuntimeError(
                    f"vulkan device: {name} got tensors on vulkan and on {item.device}; move them to one device "
                    "(a 0-dim CPU tensor is the one exception)")
            scalars = True
        elif isinstance(item, (bool, int, float)):
            scalars = True
    return scalars


def _warn_once(name: str, reason: str) -> None:
    with _lock:
        first = name not in _warned
        _warned.add(name)
    if first:
        warnings.warn(f"vulkan device: {name} runs on the CPU here ({reason}); its tensors are copied there and "
                      "back. This warning is shown once per op.", stacklevel=3)


def _cpu_fallback(op, name: str, args: tuple, kwargs: dict, reason: str):
    _warn_once(name, reason)
    with _lock:
        _stats["fallback_calls"] += 1

    def to_cpu(item):
        if _is_device(item):
            return item.cpu()
        if isinstance(item, torch.device) and item.type == DEVICE:
            return torch.device("cpu")
        return item

    result = op(*tree_map(to_cpu, args), **tree_map(to_cpu, kwargs))
    return tree_map(lambda item: item.to(DEVICE) if isinstance(item, torch.Tensor) else item, result)


def _same_kind(a: torch.dtype, b: torch.dtype) -> bool:
    return a.is_floating_point == b.is_floating_point and (a == torch.bool) == (b == torch.bool)


_tensor_arguments: Dict[Any, Tuple[bool, ...]] = {}


def _tensor_positions(op) -> Tuple[bool, ...]:
    """Per schema argument of op, whether its type is Tensor (once per op: str() of a type is slow)."""
    positions = _tensor_arguments.get(op)
    if positions is None:
        positions = _tensor_arguments[op] = tuple(str(a.type) == "Tensor" for a in op._schema.arguments)
    return positions


def _scalars_to_device(op, args: tuple, kwargs: dict) -> Tuple[tuple, dict]:
    """Scalars where the schema wants a tensor as device tensors: 0-dim CPU tensors, and Python
    numbers (a number PyTorch wrapped in a tensor reaches a Python kernel as the number). They
    take the dtype PyTorch computes them in beside the device tensors (torch.result_type: a
    wrapped float is float64, but float32 + 2.0 is float32)."""
    device_tensors = [item for item in _leaves(args, kwargs) if _is_device(item)]

    def move(item):
        if isinstance(item, torch.Tensor) and not _is_device(item):
            dtype = next((d.dtype for d in device_tensors if _same_kind(d.dtype, item.dtype)), item.dtype)
            return item.to(device=DEVICE, dtype=dtype)
        if isinstance(item, (bool, int, float)) and device_tensors:
            return torch.tensor(item, dtype=torch.result_type(device_tensors[0], item), device=DEVICE)
        return item

    args = list(args)
    for index, is_tensor in enumerate(_tensor_positions(op)[:len(args)]):
        if is_tensor or isinstance(args[index], torch.Tensor):
            args[index] = move(args[index])
    kwargs = {name: move(value) if isinstance(value, torch.Tensor) else value for name, value in kwargs.items()}
    return tuple(args), kwargs


def _key_of(item: Any):
    if isinstance(item, torch.Tensor):
        return ("T", tuple(item.shape), item.dtype)
    if isinstance(item, (list, tuple)):
        return tuple(_key_of(each) for each in item)
    if isinstance(item, float):
        return ("f", item)  # 1.0 and 1 are different arguments
    return item


def _meta(item: Any):
    if isinstance(item, torch.Tensor):
        return torch.empty(item.shape, dtype=item.dtype, device="meta")
    if isinstance(item, torch.device):
        return torch.device("meta")
    return item


def _run(op, edge_target, name: str, args: tuple, kwargs: dict):
    leaves = _leaves(args, kwargs)
    if _check_call(name, leaves):  # numbers or 0-dim CPU tensors among the arguments
        args, kwargs = _scalars_to_device(op, args, kwargs)
        leaves = _leaves(args, kwargs)
    tensors = [item for item in leaves if isinstance(item, torch.Tensor)]
    if any(item.numel() == 0 for item in tensors):
        return _cpu_fallback(op, name, args, kwargs, "an empty tensor")
    if not all(_is_device(item) for item in tensors):  # a 0-dim CPU tensor inside a list: not moved
        return _cpu_fallback(op, name, args, kwargs, "a CPU scalar tensor in a list of tensors")
    key = (name, _key_of(args), _key_of(tuple(sorted(kwargs.items()))))
    with _lock:
        cached = _cache.get(key)
        _stats["hits" if cached is not None else "misses"] += 1
    if cached is None:
        cached = _build(op, edge_target, args, kwargs)
        with _lock:
            _cache[key] = cached
            if cached.graph is not None:
                _stats["graphs"] += 1
    if cached.reason is not None:
        return _cpu_fallback(op, name, args, kwargs, cached.reason)
    if _C.fast_pending():  # the C++ kernel that called this one keeps the graph for its key
        _C.fast_put(cached.graph, cached.address, cached.output_names, cached.multi, cached.states,
                    [(item, item.untyped_storage().data_ptr(), item.storage_offset() * item.element_size())
                     for item in tensors])
    inputs, states = [], []
    gathered = []  # alive until the graph has run: their buffers are bound by address
    for index, item in enumerate(tensors):
        if not item.is_contiguous():
            # The graph's inputs are contiguous: a strided view is gathered first (csrc/ clone).
            item = item.contiguous()
            gathered.append(item)
        where = (item.untyped_storage().data_ptr(), item.storage_offset() * item.element_size())
        if index in cached.states:
            states.append((*where, cached.states[index]))
        else:
            inputs.append((*where, list(item.shape)))
    outputs = [None if spec is None else torch.empty(spec[0], dtype=spec[1], device=DEVICE) for spec in cached.outputs]
    _vkdelegate._eager_run(cached.graph, inputs, [(out.untyped_storage().data_ptr(), 0) for out in outputs
                                                  if out is not None], states)
    del gathered
    return tuple(outputs) if cached.multi else outputs[0]


def _build(op, edge_target, args: tuple, kwargs: dict) -> _Cached:
    """The one-op graph of this call, or the reason it cannot have one."""
    try:
        expected = op(*tree_map(_meta, args), **tree_map(_meta, kwargs))
    except Exception as error:  # the op cannot say its output sizes without data
        return _Cached(reason=f"its output sizes depend on values ({type(error).__name__})")
    multi = isinstance(expected, (tuple, list))
    outputs = list(expected) if multi else [expected]
    if not all(item is None or isinstance(item, torch.Tensor) for item in outputs):
        return _Cached(reason="it returns non-tensor values")
    fx = torch.fx.Graph()
    placeholders = {}
    # An argument the op updates in place (a KV cache) is a state tensor of the graph, not an
    # input: the runtime writes it in place, in the storage of the output that aliases it, which
    # the run fills from the argument's tensor first (the op stays functional).
    state_outputs = dict(state_update_positions(op_name(op)))
    states: Dict[torch.fx.Node, int] = {}

    def to_node(item, state_output=None):
        if isinstance(item, torch.Tensor):
            node = fx.placeholder(f"input_{len(placeholders)}")
            node.meta["val"] = _meta(item)
            placeholders[node] = item
            if state_output is not None:
                states[node] = state_output
            return node
        return item

    node_args = tuple(to_node(item, state_outputs[index]) if index in state_outputs and isinstance(item, torch.Tensor)
                      else tree_map(to_node, item) for index, item in enumerate(args))
    node = fx.call_function(edge_target, node_args, tree_map(to_node, kwargs))
    node.meta["val"] = expected
    entry, reason = REGISTRY.lookup(node)
    if entry is None:
        return _Cached(reason=reason)
    for state in states:
        if placeholders[state].dtype not in _STATE_DTYPES:
            return _Cached(reason=f"a state of dtype {placeholders[state].dtype} (stored converted on the GPU)")
    try:
        graph = _graph_ir(node, placeholders, outputs, states)
        plan_memory(graph, lambda op: op in _aliasing, state_update_positions)
        loaded = _vkdelegate.Graph(serialize_graph(graph))
    except (ValueError, RuntimeError) as error:
        return _Cached(reason=f"the runtime cannot build it: {error}")
    specs = [None if item is None else (tuple(item.shape), item.dtype) for item in outputs]
    tensor_states = {index: states[placeholder] for index, placeholder in enumerate(placeholders)
                     if placeholder in states}
    return _Cached(graph=loaded, outputs=specs, multi=multi, states=tensor_states)


# States the runtime stores as their dtype's bytes (it copies a state's tensor into its storage
# on the GPU); int64 where the device has int64.
_STATE_DTYPES = {torch.float32, torch.float16, torch.int32, torch.int64}


def _graph_ir(node: torch.fx.Node, placeholders: Dict[torch.fx.Node, torch.Tensor],
              outputs: List[Optional[torch.Tensor]], states: Dict[torch.fx.Node, int]) -> GraphIR:
    """The GraphIR of one call: every schema argument a value (tensors the graph's inputs, in
    placeholder order, as _run binds them, or states), then the outputs."""
    graph = GraphIR()
    tensor_ids = {}
    for placeholder, tensor in placeholders.items():
        tensor_ids[placeholder] = graph.add_value(TensorValue(schema_dtype(tensor.dtype), tuple(tensor.shape),
                                                              state=placeholder in states))
        if placeholder not in states:
            graph.input_ids.append(tensor_ids[placeholder])

    def value_id(argument: torch.Argument, value: Any) -> int:
        if isinstance(value, torch.fx.Node):
            return tensor_ids[value]
        if isinstance(value, (list, tuple)):
            if any(isinstance(item, torch.fx.Node) for item in value) or "Tensor" in str(argument.type):
                return graph.add_value(ValueListValue(tuple(
                    graph.add_value(NullValue()) if item is None else tensor_ids[item] for item in value)))
            if all(isinstance(item, bool) for item in value) and value:
                return graph.add_value(BoolListValue(tuple(value)))
            if all(isinstance(item, int) and not isinstance(item, bool) for item in value):
                return graph.add_value(IntListValue(tuple(value)))
            return graph.add_value(DoubleListValue(tuple(float(item) for item in value)))
        return graph.add_value(_scalar(value))

    args = [value_id(argument, value) for argument, value in schema_arguments(node)]
    out_ids = [graph.add_value(NullValue()) if item is None else
               graph.add_value(TensorValue(schema_dtype(item.dtype), tuple(item.shape))) for item in outputs]
    graph.chain.append(OpCall(op_name(node.target), tuple(args + out_ids), len(out_ids)))
    graph.output_ids = [value for value, item in zip(out_ids, outputs) if item is not None]
    return graph


def _scalar(value: Any):
    out = scalar_value(value)  # the delegate's own mapping of a scalar argument
    if out is None:
        raise ValueError(f"cannot serialize argument {value!r}")
    return out


def _kernel(op, edge_target):
    name = op_name(op)

    def kernel(*args, **kwargs):
        return _run(op, edge_target, name, args, kwargs)

    return kernel


def _inplace_kernel(inplace_op, functional_op, edge_target):
    """An in-place variant (relu_, add_.Tensor) as its functional op's graph, copied into self."""
    name, functional_name = op_name(inplace_op), op_name(functional_op)

    def kernel(self, *args, **kwargs):
        result = _run(functional_op, edge_target, functional_name, (self, *args), kwargs)
        if result.shape != self.shape:
            raise RuntimeError(f"{name}: the result's shape {tuple(result.shape)} does not match the tensor's "
                               f"{tuple(self.shape)}")
        if not torch.can_cast(result.dtype, self.dtype):
            raise RuntimeError(f"{name}: result type {result.dtype} can't be cast to the tensor's type {self.dtype}")
        return self.copy_(result)

    return kernel


def _inplace_variant(op: torch._ops.OpOverload) -> Optional[torch._ops.OpOverload]:
    """aten.relu_.default for aten.relu.default: the same overload of `name_`, writing its first argument."""
    packet = getattr(torch.ops.aten, op._schema.name.split("::")[1] + "_", None)
    variant = getattr(packet, op._overloadname, None) if packet is not None else None
    if variant is None or not variant._schema.arguments or variant._schema.arguments[0].alias_info is None:
        return None
    return variant if variant._schema.arguments[0].alias_info.is_write else None


def _batch_norm_kernel(edge_target):
    """native_batch_norm in inference (what eager batch_norm calls) as the registry's
    _native_batch_norm_legit_no_training; training mode runs on the CPU."""
    op, inference = torch.ops.aten.native_batch_norm.default, torch.ops.aten._native_batch_norm_legit_no_training.default
    name, inference_name = op_name(op), op_name(inference)

    def kernel(input, weight, bias, running_mean, running_var, training, momentum, eps):
        args = (input, weight, bias, running_mean, running_var, training, momentum, eps)
        if training or running_mean is None or running_var is None:
            return _cpu_fallback(op, name, args, {}, "batch norm in training mode")
        out = _run(inference, edge_target, inference_name, (input, weight, bias, running_mean, running_var,
                                                            momentum, eps), {})[0]
        # As on the CPU: no saved statistics in inference.
        return out, input.new_empty(0), input.new_empty(0)

    return kernel


_libraries: Dict[str, torch.library.Library] = {}
# quantized_decomposed's ops would otherwise run as their decompositions (several ops each).
_NAMESPACES = ("aten", "et_vk", "quantized_decomposed")


def _edge_target(name: str):
    """The registry's edge op of `name` ("aten.div.Tensor_mode") and its ATen overload."""
    for entry in REGISTRY:
        for target in entry.targets:
            op = getattr(target, "_op", None)
            if isinstance(op, torch._ops.OpOverload) and op_name(op) == name:
                return op, target
    raise KeyError(name)


def _as_kernel(name: str, arguments):
    """A kernel that runs the registry op `name` on `arguments(*args, **kwargs)` -> (args, kwargs)."""
    op, target = _edge_target(name)

    def kernel(*args, **kwargs):
        args, kwargs = arguments(*args, **kwargs)
        return _run(op, target, name, args, kwargs)

    return kernel


def _in_place(functional):
    """`op_` as `functional`, copied into self (as _inplace_kernel)."""
    def kernel(self, *args, **kwargs):
        return self.copy_(functional(self, *args, **kwargs))

    return kernel


def _register_aliases() -> List[str]:
    """Ops eager code calls that the registry covers under another name: floor_divide (div with
    rounding_mode="floor"), std (sqrt of var: two one-op graphs), arange's other overloads
    (arange.start_step), index_copy (index_put at one dim: a Llama's KV-cache write)."""
    aten = _libraries.setdefault("aten", torch.library.Library("aten", "IMPL"))
    floor_divide = _as_kernel("aten.div.Tensor_mode", lambda self, other: ((self, other), {"rounding_mode": "floor"}))
    var = _as_kernel("aten.var.correction", lambda *args, **kwargs: (args, kwargs))

    def std(self, dim=None, *, correction=None, keepdim=False):
        return torch.sqrt(var(self, dim, correction=correction, keepdim=keepdim))

    index_copy = _as_kernel("aten.index_put.default", lambda self, dim, index, source: (
        (self, [None] * (dim % max(self.dim(), 1)) + [index], source, False), {}))
    kernels = {
        "index_copy": index_copy,
        "index_copy_": _in_place(index_copy),
        "floor_divide": floor_divide,
        "floor_divide_.Tensor": _in_place(floor_divide),
        "std.correction": std,
        "arange": _as_kernel("aten.arange.start_step", lambda end, **kwargs: ((0, end, 1), kwargs)),
        "arange.start": _as_kernel("aten.arange.start_step", lambda start, end, **kwargs: ((start, end, 1), kwargs)),
    }
    for overload, kernel in kernels.items():
        aten.impl(overload, kernel, "PrivateUse1")
    return [f"aten.{name}" + ("" if "." in name else ".default") for name in kernels]


def _register_kernels() -> List[str]:
    """A kernel for every ATen and et_vk overload of the registry's entries, and their in-place
    variants: C++ kernels at PrivateUse1 (csrc/ FastKernel: a cached graph runs without Python)
    over the Python kernels here, registered at PrivateUse2, which they call for the rest."""
    names = []
    fast: Dict[str, List[Tuple[str, bool]]] = {}
    for entry in REGISTRY:
        if entry.name in _SKIPPED_ENTRIES or entry.fused:
            continue
        for target in entry.targets:
            op = getattr(target, "_op", None)
            if not isinstance(op, torch._ops.OpOverload) or op.namespace not in _NAMESPACES:
                continue
            library = _libraries.setdefault(op.namespace, torch.library.Library(op.namespace, "IMPL"))
            overload = op._schema.name.split("::")[1] + ("" if op._overloadname == "default" else f".{op._overloadname}")
            library.impl(overload, _kernel(op, target), "PrivateUse2")
            fast.setdefault(op.namespace, []).append((overload, False))
            names.append(op_name(op))
            inplace = _inplace_variant(op) if op.namespace == "aten" else None
            if inplace is not None:
                inplace_overload = inplace._schema.name.split("::")[1] + (
                    "" if inplace._overloadname == "default" else f".{inplace._overloadname}")
                library.impl(inplace_overload, _inplace_kernel(inplace, op, target), "PrivateUse2")
                fast.setdefault(op.namespace, []).append((inplace_overload, True))
                names.append(op_name(inplace))
            if op is torch.ops.aten._native_batch_norm_legit_no_training.default:
                library.impl("native_batch_norm", _batch_norm_kernel(target), "PrivateUse1")
                names.append("aten.native_batch_norm.default")
    for namespace, overloads in fast.items():
        _C.register_fast(namespace, overloads)
    return names


REGISTERED_OPS = _register_kernels() + _register_aliases()
