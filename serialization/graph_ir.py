"""Plain-Python mirror of schema.fbs: what preprocess builds and blob.py writes and reads.

Values are immutable so that a deserialized graph compares equal to the one
that was written, field for field.
"""

import enum
from dataclasses import dataclass, field
from typing import List, Tuple, Union


class DType(enum.IntEnum):
    """schema.fbs `DType`; tests check the codes against the generated enum."""

    float32 = 0
    float16 = 1
    int32 = 2
    int64 = 3
    int8 = 4
    uint8 = 5
    bool_ = 6

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self]


_ITEMSIZE = {
    DType.float32: 4,
    DType.float16: 2,
    DType.int32: 4,
    DType.int64: 8,
    DType.int8: 1,
    DType.uint8: 1,
    DType.bool_: 1,
}


@dataclass(frozen=True)
class TensorValue:
    dtype: DType
    # Export-time sizes; a dynamic dimension holds its upper bound.
    sizes: Tuple[int, ...]
    # Index into GraphIR.constants, or -1.
    constant_id: int = -1
    # Shared allocation from memory planning, or -1 for its own.
    mem_obj_id: int = -1
    # Graph inputs: the smallest sizes an execute may give; () means no lower bound.
    min_sizes: Tuple[int, ...] = ()
    # State across executes (a KV cache): initialized from its constant (zeros
    # without one), written in place by its one updating op (schema.fbs).
    state: bool = False

    @property
    def nbytes(self) -> int:
        count = 1
        for size in self.sizes:
            count *= size
        return count * self.dtype.itemsize


@dataclass(frozen=True)
class IntValue:
    value: int


@dataclass(frozen=True)
class DoubleValue:
    value: float


@dataclass(frozen=True)
class BoolValue:
    value: bool


@dataclass(frozen=True)
class NullValue:
    pass


@dataclass(frozen=True)
class StringValue:
    value: str


@dataclass(frozen=True)
class SymIntValue:
    # A dynamic int; `value` is its value at the upper bound sizes. The op
    # of the chain that outputs it recomputes it at run time.
    value: int


@dataclass(frozen=True)
class IntListValue:
    items: Tuple[int, ...]


@dataclass(frozen=True)
class DoubleListValue:
    items: Tuple[float, ...]


@dataclass(frozen=True)
class BoolListValue:
    items: Tuple[bool, ...]


@dataclass(frozen=True)
class ValueListValue:
    # Ids of other values: tensors (Null for absent optional tensors), or
    # Int and SymInt values of a SymInt[] argument with dynamic entries.
    items: Tuple[int, ...]


Value = Union[
    TensorValue,
    IntValue,
    DoubleValue,
    BoolValue,
    NullValue,
    StringValue,
    IntListValue,
    DoubleListValue,
    BoolListValue,
    ValueListValue,
    SymIntValue,
]


@dataclass(frozen=True)
class OpCall:
    # "namespace.op.overload", e.g. "aten.add.Tensor".
    name: str
    # Value ids: every schema argument in order, then every output.
    args: Tuple[int, ...]
    # How many of args are outputs (the last ones).
    num_outputs: int = 1


@dataclass
class GraphIR:
    values: List[Value] = field(default_factory=list)
    chain: List[OpCall] = field(default_factory=list)
    input_ids: List[int] = field(default_factory=list)
    output_ids: List[int] = field(default_factory=list)
    # Raw bytes of each constant tensor, indexed by TensorValue.constant_id.
    constants: List[bytes] = field(default_factory=list)
    # "key=value" strings from the compile specs, for diagnostics.
    options: List[str] = field(default_factory=list)
    # Number of shared memory objects (TensorValue.mem_obj_id < num_mem_objs).
    num_mem_objs: int = 0

    def add_value(self, value: Value) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def add_constant(self, data: bytes) -> int:
        self.constants.append(data)
        return len(self.constants) - 1
