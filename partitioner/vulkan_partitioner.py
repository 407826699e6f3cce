"""VulkanPartitioner: tags the largest subgraphs that vkdelegate can run.

What runs is decided by the op registry; this module adds only the checks that
hold for every op (fake tensors present, serializable dtypes, bounded dynamic
sizes) and constant folding: a node that computes only from constants is
accepted whatever its dtypes, because preprocess evaluates it ahead of time.

Dynamic shapes: nodes computing symbolic ints (sym_size.int and int
arithmetic, fx_nodes.SYMINT_OPS) go into a partition when every user of
theirs is supported, so that the partition computes the sizes it needs; an op
taking a symbolic int is supported only if that int's node is.

State (a KV cache): a mutable buffer whose one user is an op that updates it
in place (OpEntry.updates_state: index_put, vkd_rope_kv_update) goes into that op's partition with
its mutation, so the delegate owns it: it lives on the GPU across executes and
never crosses to the host (preprocess makes it a state tensor).
"""

import collections
import logging
import operator
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Tuple

import torch
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data
from torch.export import ExportedProgram
from torch.fx import Node
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from ..backends.vulkan_preprocess import VkDelegateBackend
from ..compile_options import to_compile_specs, validate as validate_options
from ..fx_nodes import (
    fake_tensor,
    is_symint,
    is_symint_op,
    node_inputs,
    op_name,
    output_tensors,
    upper_bound_int,
    upper_bound_sizes,
)
from ..op_registry import REGISTRY, OpRegistry, state_updates
from ..serialization.torch_dtypes import SCHEMA_DTYPES

logger = logging.getLogger("vkdelegate")


def constant_placeholders(exported_program: ExportedProgram) -> FrozenSet[str]:
    """Names of the placeholders holding parameters, buffers and lifted constants, which the delegate owns."""
    signature = exported_program.graph_signature
    mutated = set(signature.buffers_to_mutate.values())
    buffers = {name for name, target in signature.inputs_to_buffers.items() if target not in mutated}
    return frozenset(
        set(signature.inputs_to_parameters) | buffers | set(signature.inputs_to_lifted_tensor_constants)
    )


def mutable_buffer_placeholders(exported_program: ExportedProgram) -> FrozenSet[str]:
    """Names of the placeholders of buffers the program mutates."""
    signature = exported_program.graph_signature
    mutated = set(signature.buffers_to_mutate.values())
    return frozenset(name for name, target in signature.inputs_to_buffers.items() if target in mutated)


def _state_update_reason(node: Node, mutable: FrozenSet[str]) -> Optional[str]:
    """Why an in-place update op (OpEntry.updates_state) cannot own the buffers it writes."""
    for target, _ in state_updates(node):
        if not isinstance(target, Node) or target.op != "placeholder" or target.name not in mutable:
            return "it updates in place only a mutable buffer of the program (such as a KV cache)"
        if len(target.users) != 1:
            others = sorted(user.name for user in target.users if user is not node)
            return f"buffer {target.name} is also read by {others}; only its update may read it"
    return None


def _generic_reason(node: Node) -> Optional[str]:
    """Why no vkdelegate op could run node, whatever the op: missing or unserializable values."""
    for item in node_inputs(node):
        val = item.meta.get("val")
        if is_symint(item):
            if not is_symint_op(item):
                return f"input {item.name} is a symbolic int that no vkdelegate op computes"
            continue
        if not isinstance(val, torch.Tensor):
            return f"input {item.name} is a {type(val).__name__}, not a tensor"
    outputs = output_tensors(node)
    if any(val is None for val in outputs):
        return "output has no fake tensor in meta['val']"
    for val in [fake_tensor(item) for item in node_inputs(node) if not is_symint(item)] + outputs:
        if val.dtype not in SCHEMA_DTYPES:
            return f"dtype {val.dtype} cannot be serialized"
        try:
            upper_bound_sizes(val)
        except ValueError as error:
            return str(error)
    return None


class VulkanOperatorSupport(OperatorSupportBase):
    """Accepts the nodes the registry accepts, and constant-foldable nodes of registry ops.

    constants: names of the placeholders holding constant data.
    """

    def __init__(self, options: Mapping[str, Any], constants: FrozenSet[str], registry: Optional[OpRegistry] = None,
                 mutable_buffers: FrozenSet[str] = frozenset()):
        self.require_resize = options["require_dynamic_shapes"]
        self.constants = constants
        self.mutable_buffers = mutable_buffers
        self.registry = REGISTRY if registry is None else registry
        self.rejections: Dict[Node, str] = {}
        self._foldable: Dict[Node, bool] = {}
        self._symint_reasons: Dict[Tuple[str, Node], Optional[str]] = {}

    def is_node_supported(self, submodules: Mapping[str, torch.nn.Module], node: Node) -> bool:
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:
            # Picks one output of a multi-output op: goes wherever that op goes.
            return self.is_node_supported(submodules, node.args[0])
        reason = self.reason_unsupported(node)
        if reason is not None:
            self.rejections[node] = reason
        return reason is None

    def reason_unsupported(self, node: Node) -> Optional[str]:
        if is_symint_op(node):
            return self._symint_reason(node)
        reason = self._own_reason(node)
        if reason is not None:
            return reason
        for item in node_inputs(node):
            if is_symint(item) and self._symint_reason(item) is not None:
                return f"its symbolic int input {item.name} stays on CPU: {self._symint_reason(item)}"
        return None

    def _own_reason(self, node: Node) -> Optional[str]:
        """Why node cannot run, looking at the node alone (not at where its symbolic int inputs go)."""
        if self.is_foldable(node):
            return None
        reason = _generic_reason(node)
        if reason is not None:
            return reason
        entry, reason = self.registry.lookup(node)
        if entry is None:
            return reason
        if self.require_resize and not entry.supports_resize:
            return f"{entry.name} cannot resize, and require_dynamic_shapes is set"
        if not entry.symint_args and any(is_symint(item) for item in node_inputs(node)):
            return f"{entry.name} does not take symbolic int arguments"
        if entry.updates_state:
            return _state_update_reason(node, self.mutable_buffers)
        return None

    def _symint_reason(self, node: Node) -> Optional[str]:
        """A symbolic int node goes into a partition if its operands can and all of its users can."""
        return self._symint_operands_reason(node) or self._symint_users_reason(node)

    def _symint_operands_reason(self, node: Node) -> Optional[str]:
        key = ("operands", node)
        if key not in self._symint_reasons:
            self._symint_reasons[key] = self._compute_operands_reason(node)
        return self._symint_reasons[key]

    def _symint_users_reason(self, node: Node) -> Optional[str]:
        key = ("users", node)
        if key not in self._symint_reasons:
            self._symint_reasons[key] = self._compute_users_reason(node)
        return self._symint_reasons[key]

    def _compute_operands_reason(self, node: Node) -> Optional[str]:
        for item in node.args:
            if isinstance(item, Node):
                if is_symint(item):
                    if not is_symint_op(item) or self._symint_operands_reason(item) is not None:
                        return f"operand {item.name} is not computed by vkdelegate"
                elif fake_tensor(item) is None:
                    return f"operand {item.name} is not a tensor or a symbolic int"
            elif not isinstance(item, int) or isinstance(item, bool):
                return f"operand {item!r} is not an int"
        try:
            upper_bound_int(node.meta["val"])
        except ValueError as error:
            return str(error)
        return None

    def _compute_users_reason(self, node: Node) -> Optional[str]:
        for user in node.users:
            if user.op != "call_function":
                return f"used by {user.op} node {user.name}"
            if is_symint_op(user):
                reason = self._symint_operands_reason(user) or self._symint_users_reason(user)
            else:
                reason = self._own_reason(user)
            if reason is not None:
                return f"its user {user.name} is not delegated"
        return None

    def is_foldable(self, node: Node) -> bool:
        """True if every input is a constant or foldable, so preprocess evaluates node ahead of time."""
        if node.op == "placeholder":
            return node.name in self.constants
        if node.op != "call_function" or self.registry.entry_for(node.target) is None:
            return False
        if self.registry.entry_for(node.target).fused:  # Quantized linear: quantized weights stay packed
            return False
        if node not in self._foldable:
            outputs = output_tensors(node)
            self._foldable[node] = (
                all(self.is_foldable(item) for item in node_inputs(node))
                and all(val is not None and val.dtype in SCHEMA_DTYPES for val in outputs)
                and not any(isinstance(size, torch.SymInt) for val in outputs for size in val.shape)
            )
        return self._foldable[node]


class VulkanPartitioner(Partitioner):
    """Delegates the subgraphs vkdelegate supports to VkDelegateBackend.

    compile_options: see compile_options.DEFAULTS.
    """

    def __init__(self, compile_options: Optional[Dict[str, Any]] = None):
        super().__init__()
        self.options = validate_options(compile_options)
        self.delegation_spec = DelegationSpec(VkDelegateBackend.__name__, to_compile_specs(self.options))

    def ops_to_not_decompose(
        self, ep: ExportedProgram
    ) -> Tuple[List[torch._ops.OpOverload], Optional[Callable[[Node], bool]]]:
        # ExecuTorch raises if a node kept from decomposition is then not
        # delegated, so keep only nodes that will be: supported, and not
        # foldable (partitions of only foldable nodes are dropped). ExecuTorch
        # calls the filter on the ATen and the edge graph of ep alike.
        support = VulkanOperatorSupport(self.options, constant_placeholders(ep), mutable_buffers=mutable_buffer_placeholders(ep))

        def keep_undecomposed(node: Node) -> bool:
            return (
                node.op == "call_function"
                and not support.is_foldable(node)
                and support.reason_unsupported(node) is None
            )

        ops = REGISTRY.ops_to_keep_undecomposed()
        kept = [node for node in ep.graph.nodes if node.op == "call_function" and node.target in ops]
        if all(keep_undecomposed(node) for node in kept):
            # Every node of these ops will be delegated, so no filter is needed.
            # Without a filter ExecuTorch preserves the ops directly; with one it
            # swaps them for stand-in ops whose outputs are contiguous, which
            # breaks views traced through a non-contiguous output (the usual
            # attention.transpose(1, 2).reshape(...) after SDPA).
            return ops, None
        return ops, keep_undecomposed

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        support = VulkanOperatorSupport(
            self.options, constant_placeholders(exported_program),
            mutable_buffers=mutable_buffer_placeholders(exported_program),
        )
        partitions = []
        for partition in CapabilityBasedPartitioner(
            exported_program.graph_module, support, allows_single_node_partition=True
        ).propose_partitions():
            if all(support.is_foldable(node) for node in partition.nodes):
                # Only constants in, only constants out: nothing for the GPU to do.
                names = sorted(node.name for node in partition.nodes)
                logger.info("vkdelegate: not delegated, computes only constants: %s", names)
            else:
                partitions.append(partition)

        partition_tags = {}
        for partition in partitions:
            tag = f"vkdelegate_{partition.id}"
            partition_tags[tag] = self.delegation_spec
            for node in partition.nodes:
                node.meta["delegation_tag"] = tag
        # Weights and other constants used by a partition move into its blob, and
        # so do the buffers that its in-place updates own (the update is their only user).
        tag_constant_data(exported_program)
        _tag_state(exported_program, support.mutable_buffers)

        _log_partitioning(exported_program, partitions, support.rejections)
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=partition_tags)


def _tag_state(exported_program: ExportedProgram, mutable_buffers: FrozenSet[str]) -> None:
    """Tags each mutable buffer whose one user, an in-place update, is delegated, into that update's partition.

    (Not ExecuTorch's tag_mutated_buffer: that would take in a buffer that a delegated op
    reads while the CPU mutates it; such a buffer stays a partition input, as before.)
    """
    for node in exported_program.graph.nodes:
        if node.op != "placeholder" or node.name not in mutable_buffers or len(node.users) != 1:
            continue
        (user,) = node.users
        entry = REGISTRY.entry_for(user.target) if user.op == "call_function" else None
        if entry is not None and entry.updates_state and "delegation_tag" in user.meta:
            node.meta["delegation_tag"] = user.meta["delegation_tag"]


def _log_partitioning(exported_program: ExportedProgram, partitions: list, rejections: Dict[Node, str]) -> None:
    delegated = collections.Counter(
        op_name(node.target)
        for node in exported_program.graph.nodes
        if node.op == "call_function" and "delegation_tag" in node.meta
    )
    logger.info(
        "vkdelegate: %d partition(s), %d node(s) delegated%s",
        len(partitions),
        sum(delegated.values()),
        "".join(f"\n  {name}: {count}" for name, count in sorted(delegated.items())),
    )
    for node, reason in rejections.items():
        if "delegation_tag" not in node.meta:
            logger.info("vkdelegate: not delegated: %s (%s): %s", node.name, op_name(node.target), reason)
