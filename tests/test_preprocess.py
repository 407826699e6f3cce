"""What preprocess writes: op names, argument layouts, constants, folding, outputs."""

import struct

import torch
from executorch.exir import to_edge
from helpers import delegate_blob, lower

from vkdelegate.backends.vulkan_preprocess import build_graph
from vkdelegate.serialization import deserialize_blob
from vkdelegate.serialization.graph_ir import (
    BoolValue,
    DoubleValue,
    DType,
    IntListValue,
    IntValue,
    NullValue,
    StringValue,
    TensorValue,
)


class Call(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def lowered_graph(fn, *inputs):
    return deserialize_blob(delegate_blob(lower(Call(fn), inputs)))


def edge_graph(module, *inputs):
    """build_graph on a whole edge program, unpartitioned: preprocess without the registry."""
    return build_graph(to_edge(torch.export.export(module, inputs)).exported_program())


def call_args(graph, name):
    (call,) = [call for call in graph.chain if call.name == name]
    return [graph.values[value_id] for value_id in call.args]


def test_add_has_every_schema_argument_then_its_output():
    graph = lowered_graph(torch.add, torch.randn(5, 1, 7), torch.randn(3, 1))
    x, y = graph.input_ids
    (call,) = graph.chain
    assert call.name == "aten.add.Tensor"
    assert call.args[:2] == (x, y)
    assert graph.values[call.args[2]] == IntValue(1)  # alpha, from the schema default
    assert graph.values[call.args[3]] == TensorValue(DType.float32, (5, 3, 7))
    assert graph.output_ids == [call.args[3]]


def test_scalar_argument_kinds():
    graph = lowered_graph(
        lambda x: torch.nn.functional.gelu(torch.clamp(torch.softmax(x, 0), min=0.25).permute(1, 0), approximate="tanh"),
        torch.randn(7, 13),
    )
    assert [call.name for call in graph.chain] == [
        "aten._softmax.default",
        "aten.clamp.default",
        "aten.permute_copy.default",
        "aten.gelu.default",
    ]
    assert call_args(graph, "aten._softmax.default")[1:3] == [IntValue(0), BoolValue(False)]
    assert call_args(graph, "aten.clamp.default")[1:3] == [DoubleValue(0.25), NullValue()]
    assert call_args(graph, "aten.permute_copy.default")[1] == IntListValue((1, 0))
    assert call_args(graph, "aten.gelu.default")[1] == StringValue("tanh")


def test_linear_without_bias_passes_null():
    graph = deserialize_blob(delegate_blob(lower(torch.nn.Linear(13, 5, bias=False), (torch.randn(2, 13),))))
    args = call_args(graph, "aten.linear.default")
    assert args[1] == TensorValue(DType.float32, (5, 13), constant_id=0)
    assert args[2] == NullValue()
    assert args[3] == TensorValue(DType.float32, (2, 5))


def test_int_scalar_conversion_is_folded_into_a_float_constant():
    graph = lowered_graph(lambda x: x * 3, torch.randn(7, 13))
    assert [call.name for call in graph.chain] == ["aten.mul.Tensor"]
    constant = call_args(graph, "aten.mul.Tensor")[1]
    assert constant.dtype == DType.float32 and constant.sizes == ()
    assert struct.unpack("<f", graph.constants[constant.constant_id]) == (3.0,)


def test_dim_order_argument_is_an_int_list_and_dtype_an_int():
    class WithCopies(torch.nn.Module):
        def forward(self, x):
            return x.clone()

    graph = edge_graph(WithCopies(), torch.randn(2, 3))
    args = call_args(graph, "dim_order_ops._clone_dim_order.default")
    assert args[1:3] == [BoolValue(False), IntListValue((0, 1))]


def test_dtype_argument_becomes_schema_dtype_code():
    class ToHalf(torch.nn.Module):
        def forward(self, x):
            return (x * 2).to(torch.float16)

    graph = edge_graph(ToHalf(), torch.randn(2, 3))
    args = call_args(graph, "dim_order_ops._to_dim_order_copy.default")
    # self, dtype, layout, device, pin_memory, non_blocking, dim_order, out
    assert args[1] == IntValue(int(DType.float16))
    assert args[2:5] == [NullValue(), NullValue(), NullValue()]
    assert args[7] == TensorValue(DType.float16, (2, 3))


def test_multi_output_op_has_one_value_per_output():
    class LayerNorm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm(5)

        def forward(self, x):
            return self.norm(x)

    graph = edge_graph(LayerNorm(), torch.randn(3, 5))
    (call,) = graph.chain
    assert call.name == "aten.native_layer_norm.default"
    # input, normalized_shape, weight, bias, eps, then output, mean, rstd.
    assert len(call.args) == 8
    assert graph.values[call.args[1]] == IntListValue((5,))
    assert isinstance(graph.values[call.args[4]], DoubleValue)
    assert graph.output_ids == [call.args[5]]
    mean = graph.values[call.args[6]]
    assert (mean.dtype, mean.sizes) == (DType.float32, (3, 1))
    # Unused outputs are intermediates: memory planning puts them in shared objects.
    assert mean.mem_obj_id >= 0


def test_outputs_that_are_inputs_or_constants():
    class PassThrough(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.arange(4))

        def forward(self, x):
            return x * 2, x, self.table.to(torch.float32)

    graph = edge_graph(PassThrough(), torch.randn(4))
    (x,) = graph.input_ids
    doubled, passed, table = graph.output_ids
    assert passed == x
    table_value = graph.values[table]
    assert (table_value.dtype, table_value.sizes) == (DType.float32, (4,))
    assert struct.unpack("<4f", graph.constants[table_value.constant_id]) == (0.0, 1.0, 2.0, 3.0)
    assert [call.name for call in graph.chain] == ["aten.mul.Tensor"]


def test_shared_input_is_one_value():
    graph = lowered_graph(lambda x: x * x + x, torch.randn(3))
    tensors = [value for value in graph.values if isinstance(value, TensorValue) and value.constant_id == -1]
    assert len(tensors) == 3  # x, x * x, and the sum
