"""Writer and reader of the vkdelegate blob.

Layout (all integers little endian):

    [header, 56 bytes][VkGraph flatbuffer][zero pad to 64][constant segment]

The header (HEADER_FORMAT), field by field:

    magic             4 bytes  b"VKDB"
    version           uint32   BLOB_VERSION; a loader refuses any other
    header_size       uint32   56
    flags             uint32   0
    flatbuffer_offset uint64   56
    flatbuffer_size   uint64
    constants_offset  uint64   a multiple of 64, after the flatbuffer
    constants_size    uint64   the blob ends at constants_offset + constants_size
    checksum          uint32   CRC-32 (zlib) of every byte of the blob except these four
    reserved          uint32   0

The header is a fixed struct rather than part of the flatbuffer so that a
loader can check the checksum and every size and offset before it parses
anything: a corrupted file is an error that says so, never a different graph.
Each constant starts at a 64-byte-aligned offset of the segment (aligned loads,
and room to map constants straight into device memory).
"""

import struct
import zlib
from typing import List, Sequence, Tuple

import flatbuffers
import numpy as np

from .generated.vkdelegate.fb import (
    Bool,
    BoolList,
    ConstantRef,
    Double,
    DoubleList,
    Int,
    IntList,
    Null,
    OpCall as FbOpCall,
    String,
    SymInt,
    Tensor,
    Value as FbValue,
    ValueEntry,
    ValueList,
    VkGraph,
)
from .graph_ir import (
    BoolListValue,
    BoolValue,
    DoubleListValue,
    DoubleValue,
    DType,
    GraphIR,
    IntListValue,
    IntValue,
    NullValue,
    OpCall,
    StringValue,
    SymIntValue,
    TensorValue,
    Value,
    ValueListValue,
)

MAGIC = b"VKDB"
BLOB_VERSION = 2
HEADER_FORMAT = "<4sIIIQQQQII"
HEADER_SIZE = struct.calcsize(HEADER_FORMAT)  # 56
CHECKSUM_OFFSET = struct.calcsize(HEADER_FORMAT[:-2])  # 48: the checksum field
CONSTANT_ALIGNMENT = 64
FILE_IDENTIFIER = b"VKDG"  # schema.fbs file_identifier


def _align(offset: int) -> int:
    return -(-offset // CONSTANT_ALIGNMENT) * CONSTANT_ALIGNMENT


def blob_checksum(blob: bytes) -> int:
    """The checksum a blob's header should hold: CRC-32 of all bytes but the checksum field's."""
    view = memoryview(blob)
    return zlib.crc32(view[CHECKSUM_OFFSET + 4 :], zlib.crc32(view[:CHECKSUM_OFFSET]))


def with_checksum(blob: bytes) -> bytes:
    """blob with its header's checksum set to match its bytes (for tools and tests that edit blobs)."""
    fixed = bytearray(blob)
    struct.pack_into("<I", fixed, CHECKSUM_OFFSET, blob_checksum(fixed))
    return bytes(fixed)


# ----------------------------------------------------------------------------
# Writer


def serialize_graph(graph: GraphIR) -> bytes:
    """Returns the blob for graph: header, flatbuffer, and constant segment.

    Checks the graph as the reader does, so a bad graph fails here, ahead of time.
    """
    _validate_graph(graph)
    constant_offsets = []
    segment_size = 0
    for data in graph.constants:
        offset = _align(segment_size)
        constant_offsets.append(offset)
        segment_size = offset + len(data)

    flatbuffer = _build_flatbuffer(graph, constant_offsets)
    constants_offset = _align(HEADER_SIZE + len(flatbuffer))
    header = struct.pack(
        HEADER_FORMAT,
        MAGIC,
        BLOB_VERSION,
        HEADER_SIZE,
        0,  # flags
        HEADER_SIZE,
        len(flatbuffer),
        constants_offset,
        segment_size,
        0,  # checksum, set below
        0,  # reserved
    )
    blob = bytearray(constants_offset + segment_size)
    blob[:HEADER_SIZE] = header
    blob[HEADER_SIZE : HEADER_SIZE + len(flatbuffer)] = flatbuffer
    for offset, data in zip(constant_offsets, graph.constants):
        start = constants_offset + offset
        blob[start : start + len(data)] = data
    struct.pack_into("<I", blob, CHECKSUM_OFFSET, blob_checksum(blob))
    return bytes(blob)


def _scalar_vector(builder: flatbuffers.Builder, items: Sequence, element_type) -> int:
    return builder.CreateNumpyVector(np.asarray(items, dtype=element_type))


def _table_vector(builder: flatbuffers.Builder, tables: Sequence[int]) -> int:
    builder.StartVector(4, len(tables), 4)
    for table in reversed(tables):
        builder.PrependUOffsetTRelative(table)
    return builder.EndVector()


def _write_value(builder: flatbuffers.Builder, value: Value) -> Tuple[int, int]:
    """Builds the union member for value; returns (union type, table offset)."""
    if isinstance(value, TensorValue):
        sizes = _scalar_vector(builder, value.sizes, np.int64)
        min_sizes = _scalar_vector(builder, value.min_sizes, np.int64) if value.min_sizes else None
        Tensor.Start(builder)
        Tensor.AddDtype(builder, int(value.dtype))
        Tensor.AddSizes(builder, sizes)
        Tensor.AddConstantId(builder, value.constant_id)
        Tensor.AddMemObjId(builder, value.mem_obj_id)
        if min_sizes is not None:
            Tensor.AddMinSizes(builder, min_sizes)
        if value.state:
            Tensor.AddState(builder, True)
        return FbValue.Value.Tensor, Tensor.End(builder)
    if isinstance(value, SymIntValue):
        SymInt.Start(builder)
        SymInt.AddValue(builder, value.value)
        return FbValue.Value.SymInt, SymInt.End(builder)
    if isinstance(value, IntValue):
        Int.Start(builder)
        Int.AddValue(builder, value.value)
        return FbValue.Value.Int, Int.End(builder)
    if isinstance(value, DoubleValue):
        Double.Start(builder)
        Double.AddValue(builder, value.value)
        return FbValue.Value.Double, Double.End(builder)
    if isinstance(value, BoolValue):
        Bool.Start(builder)
        Bool.AddValue(builder, value.value)
        return FbValue.Value.Bool, Bool.End(builder)
    if isinstance(value, NullValue):
        Null.Start(builder)
        return FbValue.Value.Null, Null.End(builder)
    if isinstance(value, StringValue):
        text = builder.CreateString(value.value)
        String.Start(builder)
        String.AddValue(builder, text)
        return FbValue.Value.String, String.End(builder)
    if isinstance(value, IntListValue):
        items = _scalar_vector(builder, value.items, np.int64)
        IntList.Start(builder)
        IntList.AddItems(builder, items)
        return FbValue.Value.IntList, IntList.End(builder)
    if isinstance(value, DoubleListValue):
        items = _scalar_vector(builder, value.items, np.float64)
        DoubleList.Start(builder)
        DoubleList.AddItems(builder, items)
        return FbValue.Value.DoubleList, DoubleList.End(builder)
    if isinstance(value, BoolListValue):
        items = _scalar_vector(builder, value.items, np.bool_)
        BoolList.Start(builder)
        BoolList.AddItems(builder, items)
        return FbValue.Value.BoolList, BoolList.End(builder)
    if isinstance(value, ValueListValue):
        items = _scalar_vector(builder, value.items, np.int32)
        ValueList.Start(builder)
        ValueList.AddItems(builder, items)
        return FbValue.Value.ValueList, ValueList.End(builder)
    raise TypeError(f"not a graph value: {value!r}")


def _build_flatbuffer(graph: GraphIR, constant_offsets: List[int]) -> bytes:
    builder = flatbuffers.Builder(1024)

    entries = []
    for value in graph.values:
        union_type, table = _write_value(builder, value)
        ValueEntry.Start(builder)
        ValueEntry.AddValueType(builder, union_type)
        ValueEntry.AddValue(builder, table)
        entries.append(ValueEntry.End(builder))
    values = _table_vector(builder, entries)

    calls = []
    for call in graph.chain:
        name = builder.CreateString(call.name)
        args = _scalar_vector(builder, call.args, np.int32)
        FbOpCall.Start(builder)
        FbOpCall.AddName(builder, name)
        FbOpCall.AddArgs(builder, args)
        FbOpCall.AddNumOutputs(builder, call.num_outputs)
        calls.append(FbOpCall.End(builder))
    chain = _table_vector(builder, calls)

    input_ids = _scalar_vector(builder, graph.input_ids, np.int32)
    output_ids = _scalar_vector(builder, graph.output_ids, np.int32)

    VkGraph.StartConstantsVector(builder, len(graph.constants))
    for offset, data in reversed(list(zip(constant_offsets, graph.constants))):
        ConstantRef.CreateConstantRef(builder, offset, len(data))
    constants = builder.EndVector()

    option_tables = []
    for option in graph.options:
        text = builder.CreateString(option)
        String.Start(builder)
        String.AddValue(builder, text)
        option_tables.append(String.End(builder))
    options = _table_vector(builder, option_tables)

    VkGraph.Start(builder)
    VkGraph.AddVersion(builder, BLOB_VERSION)
    VkGraph.AddValues(builder, values)
    VkGraph.AddChain(builder, chain)
    VkGraph.AddInputIds(builder, input_ids)
    VkGraph.AddOutputIds(builder, output_ids)
    VkGraph.AddConstants(builder, constants)
    VkGraph.AddOptions(builder, options)
    VkGraph.AddNumMemObjs(builder, graph.num_mem_objs)
    builder.Finish(VkGraph.End(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())


# ----------------------------------------------------------------------------
# Reader


def deserialize_blob(blob: bytes) -> GraphIR:
    """Parses and validates a blob; raises ValueError naming the first problem."""
    blob = bytes(blob)
    flatbuffer, segment = _split_blob(blob)
    try:
        graph, constant_refs = _read_flatbuffer(flatbuffer)
    except (IndexError, struct.error, UnicodeDecodeError, TypeError, OverflowError) as error:
        raise ValueError(f"malformed VkGraph flatbuffer: {error!r}") from error
    graph.constants = _read_constants(constant_refs, segment)
    _validate_graph(graph)
    return graph


def _split_blob(blob: bytes) -> Tuple[bytes, bytes]:
    """Checks the header; returns (flatbuffer bytes, constant segment bytes)."""
    if len(blob) < HEADER_SIZE:
        raise ValueError(f"blob is {len(blob)} bytes, shorter than its {HEADER_SIZE}-byte header")
    (
        magic,
        version,
        header_size,
        flags,
        flatbuffer_offset,
        flatbuffer_size,
        constants_offset,
        constants_size,
        checksum,
        reserved,
    ) = struct.unpack_from(HEADER_FORMAT, blob)
    if magic != MAGIC:
        raise ValueError(f"bad magic {magic!r} (expected {MAGIC!r}): not a vkdelegate blob")
    if 0 < version < BLOB_VERSION:
        raise ValueError(
            f"blob version {version} is older than this reader's {BLOB_VERSION}: "
            "re-export the model with this version of vkdelegate"
        )
    if version != BLOB_VERSION:
        raise ValueError(f"blob version {version} is not supported (this reader reads version {BLOB_VERSION})")
    if header_size != HEADER_SIZE:
        raise ValueError(f"header_size is {header_size}, expected {HEADER_SIZE}")
    blob_end = constants_offset + constants_size
    if blob_end > len(blob):
        raise ValueError(f"blob is truncated: header describes {blob_end} bytes, got {len(blob)}")
    if blob_end < len(blob):
        raise ValueError(f"blob has {len(blob) - blob_end} unexpected bytes after the constant segment")
    if checksum != blob_checksum(blob):
        raise ValueError(
            f"checksum mismatch: the file is corrupted (header says {checksum}, the bytes give {blob_checksum(blob)})"
        )
    if flags != 0 or reserved != 0:
        raise ValueError(f"unknown header flags 0x{flags:x}, 0x{reserved:x}")
    flatbuffer_end = flatbuffer_offset + flatbuffer_size
    if flatbuffer_offset < HEADER_SIZE or flatbuffer_end > constants_offset:
        raise ValueError(
            f"flatbuffer [{flatbuffer_offset}, {flatbuffer_end}) must lie between the header "
            f"(ends at {HEADER_SIZE}) and the constant segment (starts at {constants_offset})"
        )
    if constants_offset % CONSTANT_ALIGNMENT:
        raise ValueError(f"constants_offset {constants_offset} is not a multiple of {CONSTANT_ALIGNMENT}")
    flatbuffer = blob[flatbuffer_offset:flatbuffer_end]
    if len(flatbuffer) < 8 or not VkGraph.VkGraph.VkGraphBufferHasIdentifier(flatbuffer, 0):
        raise ValueError(f"flatbuffer lacks the file identifier {FILE_IDENTIFIER!r}")
    return flatbuffer, blob[constants_offset:blob_end]


def _union_member(entry, member_class):
    table = entry.Value()
    if table is None:
        raise ValueError(f"{member_class.__name__} value has no table")
    member = member_class()
    member.Init(table.Bytes, table.Pos)
    return member


def _required_string(data: bytes, what: str) -> str:
    if data is None:
        raise ValueError(f"{what} is missing")
    return data.decode("utf-8")


def _read_value(entry) -> Value:
    kind = entry.ValueType()
    if kind == FbValue.Value.Tensor:
        tensor = _union_member(entry, Tensor.Tensor)
        try:
            dtype = DType(tensor.Dtype())
        except ValueError:
            raise ValueError(f"unknown dtype code {tensor.Dtype()}") from None
        sizes = tuple(tensor.Sizes(i) for i in range(tensor.SizesLength()))
        min_sizes = tuple(tensor.MinSizes(i) for i in range(tensor.MinSizesLength()))
        return TensorValue(dtype, sizes, tensor.ConstantId(), tensor.MemObjId(), min_sizes, tensor.State())
    scalars = {FbValue.Value.SymInt: (SymInt.SymInt, SymIntValue), FbValue.Value.Int: (Int.Int, IntValue),
               FbValue.Value.Double: (Double.Double, DoubleValue), FbValue.Value.Bool: (Bool.Bool, BoolValue)}
    if kind in scalars:
        member_class, value_class = scalars[kind]
        scalar = _union_member(entry, member_class).Value()
        if scalar is None:
            raise ValueError(f"{member_class.__name__} value without its field")
        return value_class(scalar)
    if kind == FbValue.Value.Null:
        return NullValue()
    if kind == FbValue.Value.String:
        return StringValue(_required_string(_union_member(entry, String.String).Value(), "String value"))
    if kind == FbValue.Value.IntList:
        items = _union_member(entry, IntList.IntList)
        return IntListValue(tuple(items.Items(i) for i in range(items.ItemsLength())))
    if kind == FbValue.Value.DoubleList:
        items = _union_member(entry, DoubleList.DoubleList)
        return DoubleListValue(tuple(items.Items(i) for i in range(items.ItemsLength())))
    if kind == FbValue.Value.BoolList:
        items = _union_member(entry, BoolList.BoolList)
        return BoolListValue(tuple(items.Items(i) for i in range(items.ItemsLength())))
    if kind == FbValue.Value.ValueList:
        items = _union_member(entry, ValueList.ValueList)
        return ValueListValue(tuple(items.Items(i) for i in range(items.ItemsLength())))
    raise ValueError(f"unknown value type code {kind}")


def _read_flatbuffer(flatbuffer: bytes) -> Tuple[GraphIR, List[Tuple[int, int]]]:
    root = VkGraph.VkGraph.GetRootAs(flatbuffer, 0)
    if root.Version() != BLOB_VERSION:
        raise ValueError(f"VkGraph.version is {root.Version()}, header says {BLOB_VERSION}")
    graph = GraphIR()
    for i in range(root.ValuesLength()):
        try:
            graph.values.append(_read_value(root.Values(i)))
        except ValueError as error:
            raise ValueError(f"value {i}: {error}") from None
    for i in range(root.ChainLength()):
        call = root.Chain(i)
        graph.chain.append(
            OpCall(
                _required_string(call.Name(), f"op {i} name"),
                tuple(call.Args(j) for j in range(call.ArgsLength())),
                call.NumOutputs(),
            )
        )
    graph.input_ids = [root.InputIds(i) for i in range(root.InputIdsLength())]
    graph.output_ids = [root.OutputIds(i) for i in range(root.OutputIdsLength())]
    graph.num_mem_objs = root.NumMemObjs()
    for i in range(root.OptionsLength()):
        graph.options.append(_required_string(root.Options(i).Value(), f"option {i}"))
    constant_refs = []
    for i in range(root.ConstantsLength()):
        ref = root.Constants(i)
        constant_refs.append((ref.Offset(), ref.Nbytes()))
    return graph, constant_refs


def _read_constants(constant_refs: List[Tuple[int, int]], segment: bytes) -> List[bytes]:
    """The constants, which must lie where serialize_graph puts them: in order, each at the
    first aligned offset after the one before, the last ending the segment."""
    constants = []
    end = 0
    for i, (offset, nbytes) in enumerate(constant_refs):
        if offset != _align(end):
            raise ValueError(f"constant {i} is at offset {offset}, not {_align(end)} where the writer puts it")
        if offset + nbytes > len(segment):
            raise ValueError(
                f"constant {i} [{offset}, {offset + nbytes}) runs past the {len(segment)}-byte constant segment"
            )
        constants.append(segment[offset : offset + nbytes])
        end = offset + nbytes
    if end != len(segment):
        raise ValueError(f"the constants end at {end}, the {len(segment)}-byte constant segment later")
    return constants


def _validate_graph(graph: GraphIR) -> None:
    """Checks that every id points at something that exists and has the right kind."""
    num_values = len(graph.values)

    def check_id(value_id: int, where: str) -> None:
        if not 0 <= value_id < num_values:
            raise ValueError(f"{where} refers to value {value_id}, but the graph has {num_values} values")

    if graph.num_mem_objs < 0:
        raise ValueError(f"num_mem_objs is {graph.num_mem_objs}")
    io_ids = set(graph.input_ids) | set(graph.output_ids)
    constant_owner = {}
    for i, value in enumerate(graph.values):
        if isinstance(value, TensorValue):
            if any(size < 0 for size in value.sizes):
                raise ValueError(f"value {i}: negative size in {value.sizes}")
            if value.min_sizes and (
                len(value.min_sizes) != len(value.sizes)
                or any(not 0 <= low <= high for low, high in zip(value.min_sizes, value.sizes))
            ):
                raise ValueError(f"value {i}: min_sizes {value.min_sizes} do not fit sizes {value.sizes}")
            if value.mem_obj_id != -1:
                if not 0 <= value.mem_obj_id < graph.num_mem_objs:
                    raise ValueError(
                        f"value {i}: mem_obj_id {value.mem_obj_id} out of range ({graph.num_mem_objs} memory objects)"
                    )
                if value.constant_id != -1 or value.state or i in io_ids:
                    raise ValueError(f"value {i}: graph inputs, outputs, constants and state cannot share memory")
            if value.state and i in io_ids:
                raise ValueError(f"value {i}: a state tensor cannot be a graph input or output")
            if value.constant_id != -1:
                if not 0 <= value.constant_id < len(graph.constants):
                    raise ValueError(
                        f"value {i}: constant_id {value.constant_id} out of range "
                        f"({len(graph.constants)} constants)"
                    )
                owner = constant_owner.get(value.constant_id)
                if owner is not None:
                    raise ValueError(f"value {i}: constant {value.constant_id} belongs to value {owner} too")
                constant_owner[value.constant_id] = i
                stored = len(graph.constants[value.constant_id])
                if stored != value.nbytes:
                    raise ValueError(
                        f"value {i}: {value.dtype.name}{list(value.sizes)} needs {value.nbytes} bytes, "
                        f"constant {value.constant_id} holds {stored}"
                    )
        elif isinstance(value, ValueListValue):
            for item in value.items:
                check_id(item, f"value list {i}")
    if len(constant_owner) != len(graph.constants):
        raise ValueError(f"{len(graph.constants) - len(constant_owner)} constants belong to no tensor")
    if not graph.output_ids:
        raise ValueError("graph has no outputs")
    for kind, ids in (("input", graph.input_ids), ("output", graph.output_ids)):
        for value_id in ids:
            check_id(value_id, f"graph {kind}")
            if not isinstance(graph.values[value_id], TensorValue):
                raise ValueError(f"graph {kind} {value_id} is not a tensor")
    _validate_dataflow(graph)


def _validate_dataflow(graph: GraphIR) -> None:
    """Each op writes new values and reads only values written before it.

    Tensors and SymInts are written by the graph (inputs, constants) or by an op's
    outputs; nothing is written twice, nothing read before it is written (so the
    chain has no cycles). Every other value (scalar, list, null) is the argument of
    one op, once. The C++ loader checks the same (ComputeGraph::check_dataflow).
    """
    input_ids = set(graph.input_ids)
    written = input_ids | {
        i for i, value in enumerate(graph.values)
        if isinstance(value, TensorValue) and (value.constant_id != -1 or value.state)
    }

    used = set()

    def use_once(value_id: int, where: str) -> None:
        """Scalars, lists and nulls are made for the one argument that holds them."""
        if isinstance(graph.values[value_id], (TensorValue, SymIntValue)):
            return
        if value_id in used:
            raise ValueError(f"{where} takes value {value_id}, an argument of another op or list")
        used.add(value_id)

    def check_read(value_id: int, where: str, in_list: bool = False) -> None:
        value = graph.values[value_id]
        use_once(value_id, where)
        if isinstance(value, ValueListValue) and not in_list:
            for item in value.items:
                check_read(item, where, in_list=True)
        elif isinstance(value, (TensorValue, SymIntValue)) and value_id not in written:
            raise ValueError(f"{where} reads value {value_id} before any op writes it")

    for i, call in enumerate(graph.chain):
        where = f"op {i} ({call.name})"
        if not call.name:
            raise ValueError(f"op {i} has no name")
        for value_id in call.args:
            if not 0 <= value_id < len(graph.values):
                raise ValueError(f"{where} refers to value {value_id}, but the graph has {len(graph.values)} values")
        if not 1 <= call.num_outputs <= len(call.args):
            raise ValueError(f"{where} has {call.num_outputs} outputs among {len(call.args)} arguments")
        num_inputs = len(call.args) - call.num_outputs
        for value_id in call.args[:num_inputs]:
            check_read(value_id, where)
        for value_id in call.args[num_inputs:]:
            value = graph.values[value_id]
            if not isinstance(value, (TensorValue, SymIntValue, NullValue)):
                raise ValueError(f"{where} outputs value {value_id}, a {type(value).__name__}")
            use_once(value_id, where)
            if value_id in written:
                raise ValueError(f"{where} writes value {value_id}, which is already written")
            written.add(value_id)
    for value_id in graph.output_ids:
        if value_id not in written:
            raise ValueError(f"graph output {value_id} is never written")
