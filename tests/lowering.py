"""Helpers shared by the tests: lower a module and look at what came out."""

from typing import List, Optional

import torch
from executorch.exir import EdgeProgramManager, to_edge_transform_and_lower
from executorch.exir.lowered_backend_module import LoweredBackendModule

from vkdelegate.fx_nodes import op_name
from vkdelegate.partitioner import VulkanPartitioner


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def lower(module: torch.nn.Module, inputs, partitioner=None, dynamic_shapes=None) -> EdgeProgramManager:
    program = torch.export.export(module, tuple(inputs), dynamic_shapes=dynamic_shapes)
    return to_edge_transform_and_lower(program, partitioner=[partitioner or VulkanPartitioner()])


def lowered_modules(edge: EdgeProgramManager) -> List[LoweredBackendModule]:
    graph_module = edge.exported_program().graph_module
    return [child for _, child in graph_module.named_children() if isinstance(child, LoweredBackendModule)]


def non_delegated_ops(edge: EdgeProgramManager) -> List[str]:
    """Op names of the call_function nodes left on CPU (getitem excluded)."""
    return [
        op_name(node.target)
        for node in edge.exported_program().graph.nodes
        if node.op == "call_function"
        and node.target is not torch.ops.higher_order.executorch_call_delegate
        and getattr(node.target, "__name__", "") != "getitem"
    ]


def delegate_count(edge: EdgeProgramManager) -> int:
    return sum(
        node.op == "call_function" and node.target is torch.ops.higher_order.executorch_call_delegate
        for node in edge.exported_program().graph.nodes
    )


def only_blob(edge: EdgeProgramManager, backend_id: Optional[str] = "VkDelegateBackend") -> bytes:
    (module,) = lowered_modules(edge)
    assert module.backend_id == backend_id
    return module.processed_bytes
