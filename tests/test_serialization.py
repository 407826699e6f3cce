import filecmp
import os
import struct
import zlib
from pathlib import Path

import pytest
import torch
from blob_mutants import flatbuffer_sites
from helpers import MLP, delegate_blob, lower

from vkdelegate.serialization import blob as blob_module
from vkdelegate.serialization import deserialize_blob, dump, serialize_graph
from vkdelegate.serialization.blob import (
    CHECKSUM_OFFSET,
    CONSTANT_ALIGNMENT,
    HEADER_FORMAT,
    HEADER_SIZE,
    blob_checksum,
    with_checksum,
)
from vkdelegate.serialization.generated.vkdelegate.fb.DType import DType as FbDType
from vkdelegate.serialization.graph_ir import (
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
    ValueListValue,
)
from vkdelegate.serialization.regen import FLATC, GENERATED_DIR, regenerate


def every_kind_graph() -> GraphIR:
    """A graph holding each kind of value, odd-sized constants, and an empty list."""
    graph = GraphIR()
    x = graph.add_value(TensorValue(DType.float32, (2, 3), min_sizes=(1, 3)))
    weight = graph.add_value(TensorValue(DType.float32, (3, 5), graph.add_constant(bytes(range(60)))))
    steps = graph.add_value(TensorValue(DType.int64, (1,), graph.add_constant(b"\x07" * 8)))
    mask = graph.add_value(TensorValue(DType.bool_, (), graph.add_constant(b"\x01")))
    null = graph.add_value(NullValue())
    scalars = [
        graph.add_value(IntValue(-(2**40))),
        graph.add_value(DoubleValue(0.1)),
        graph.add_value(BoolValue(True)),
        graph.add_value(StringValue("tanh")),
        graph.add_value(IntListValue((1, -2, 3))),
        graph.add_value(IntListValue(())),
        graph.add_value(DoubleListValue((1.5, -0.0, 1e300))),
        graph.add_value(BoolListValue((True, False))),
        graph.add_value(ValueListValue((x, graph.add_value(NullValue()), weight))),
    ]
    seq = graph.add_value(SymIntValue(2))
    scalars.append(graph.add_value(ValueListValue((seq, graph.add_value(IntValue(3))))))
    planned = graph.add_value(TensorValue(DType.float32, (2, 5), mem_obj_id=0))
    y = graph.add_value(TensorValue(DType.float32, (2, 5)))
    graph.chain.append(OpCall("aten.sym_size.int", (x, graph.add_value(IntValue(0)), seq)))
    graph.chain.append(OpCall("aten.mm.default", (x, weight, planned)))
    graph.chain.append(OpCall("aten.relu.default", (planned, y)))
    graph.num_mem_objs = 1
    outputs = (graph.add_value(TensorValue(DType.float32, (2, 5))), graph.add_value(NullValue()))
    graph.chain.append(OpCall("test.every_kind.default", (y, steps, mask, null, *scalars, *outputs), num_outputs=2))
    graph.input_ids = [x]
    graph.output_ids = [y, x]
    graph.options = ["force_fp16=false"]
    return graph


def _planned_id(graph: GraphIR) -> int:
    return next(i for i, v in enumerate(graph.values) if isinstance(v, TensorValue) and v.mem_obj_id >= 0)


def _constant_id(graph: GraphIR) -> int:
    return next(i for i, v in enumerate(graph.values) if isinstance(v, TensorValue) and v.constant_id >= 0)


def _new_tensor(graph: GraphIR) -> int:
    return graph.add_value(TensorValue(DType.float32, (2, 5)))


def header_fields(blob: bytes) -> tuple:
    return struct.unpack_from(HEADER_FORMAT, blob)


def with_header(blob: bytes, **changes) -> bytes:
    """blob with header fields changed, and its checksum made to match (unless a change sets it)."""
    names = ["magic", "version", "header_size", "flags", "fb_offset", "fb_size", "constants_offset", "constants_size",
             "checksum", "reserved"]
    fields = dict(zip(names, header_fields(blob)))
    fields.update(changes)
    changed = struct.pack(HEADER_FORMAT, *fields.values()) + blob[HEADER_SIZE:]
    return changed if "checksum" in changes else with_checksum(changed)


def serialize_unchecked(graph: GraphIR, monkeypatch) -> bytes:
    """Serializes a graph that the writer would refuse, to test the reader."""
    with monkeypatch.context() as patch:
        patch.setattr(blob_module, "_validate_graph", lambda graph: None)
        return serialize_graph(graph)


def test_round_trip_of_every_value_kind():
    graph = every_kind_graph()
    blob = serialize_graph(graph)
    assert deserialize_blob(blob) == graph
    assert serialize_graph(deserialize_blob(blob)) == blob


def test_layout():
    graph = every_kind_graph()
    blob = serialize_graph(graph)
    magic, version, header_size, flags, fb_offset, fb_size, constants_offset, constants_size, checksum, reserved = (
        header_fields(blob)
    )
    assert (magic, version, header_size, flags, reserved) == (b"VKDB", 2, 56, 0, 0)
    assert checksum == zlib.crc32(blob[:CHECKSUM_OFFSET] + blob[CHECKSUM_OFFSET + 4 :]) == blob_checksum(blob)
    assert fb_offset == HEADER_SIZE and blob[fb_offset + 4 : fb_offset + 8] == b"VKDG"
    assert constants_offset % CONSTANT_ALIGNMENT == 0 and constants_offset >= fb_offset + fb_size
    assert blob[fb_offset + fb_size : constants_offset] == bytes(constants_offset - fb_offset - fb_size)
    assert len(blob) == constants_offset + constants_size
    # Constants start 64-aligned within the segment, in order.
    segment = blob[constants_offset:]
    assert segment[0:60] == bytes(range(60))
    assert segment[64:72] == b"\x07" * 8
    assert segment[128:129] == b"\x01"
    assert constants_size == 129


def test_graph_without_constants():
    graph = GraphIR(values=[TensorValue(DType.float32, (4,))], input_ids=[0], output_ids=[0])
    blob = serialize_graph(graph)
    assert header_fields(blob)[7] == 0
    assert deserialize_blob(blob) == graph


def test_schema_dtype_codes_match_generated_code():
    generated = {name: code for name, code in vars(FbDType).items() if not name.startswith("_")}
    assert generated == {dtype.name: int(dtype) for dtype in DType}


def test_lowered_mlp_blob_round_trips():
    torch.manual_seed(0)
    model = MLP()
    blob = delegate_blob(lower(model, (torch.randn(3, 16),)))
    graph = deserialize_blob(blob)
    assert serialize_graph(graph) == blob
    # fc1 and its relu are one op (backends/linear_act_fusion.py), its activation a string value
    assert [call.name for call in graph.chain] == ["et_vk.vkd_linear_act.default", "aten.linear.default"]
    weights = [model.fc1.weight, model.fc1.bias, model.fc2.weight, model.fc2.bias]
    assert graph.constants == [w.detach().numpy().tobytes() for w in weights]
    listing = dump(blob)
    assert "%5 = et_vk.vkd_linear_act.default(input=%0, weight=%1, bias=%2, activation='relu', residual=None)" in listing
    assert "%8 = aten.linear.default(input=%5, weight=%6, bias=%7)" in listing
    assert "%1 = Tensor float32[32, 16] constant 0" in listing


@pytest.mark.parametrize(
    "change, message",
    [
        ({"magic": b"XXXX"}, "bad magic"),
        ({"version": 3}, "version 3 is not supported"),
        ({"version": 1}, "version 1 is older than this reader's 2: re-export"),
        ({"header_size": 48}, "header_size is 48"),
        ({"checksum": 0}, "checksum mismatch: the file is corrupted"),
        ({"flags": 1}, "unknown header flags"),
        ({"reserved": 1}, "unknown header flags"),
        ({"fb_offset": 0}, "must lie between the header"),
        ({"fb_size": 1 << 20}, "must lie between the header"),
        ({"constants_offset": 1 << 20}, "truncated"),
        ({"constants_size": 0}, "unexpected bytes after the constant segment"),
    ],
)
def test_corrupt_header_is_rejected(change, message):
    blob = serialize_graph(every_kind_graph())
    with pytest.raises(ValueError, match=message):
        deserialize_blob(with_header(blob, **change))


def test_unaligned_constants_offset_is_rejected():
    graph = GraphIR(values=[TensorValue(DType.float32, (4,))], input_ids=[0], output_ids=[0])
    blob = serialize_graph(graph)
    _, _, _, _, fb_offset, fb_size, _, _, _, _ = header_fields(blob)
    # Point the segment at an unaligned empty tail right after the flatbuffer.
    end = fb_offset + fb_size
    assert end % CONSTANT_ALIGNMENT
    with pytest.raises(ValueError, match="not a multiple of 64"):
        deserialize_blob(with_header(blob[:end], constants_offset=end, constants_size=0))


@pytest.mark.parametrize("keep", [0, 10, 55, 56, 100, -1])
def test_truncated_blob_is_rejected(keep):
    blob = serialize_graph(every_kind_graph())
    with pytest.raises(ValueError, match="shorter than|truncated"):
        deserialize_blob(blob[:keep])


def test_trailing_bytes_are_rejected():
    blob = serialize_graph(every_kind_graph())
    with pytest.raises(ValueError, match="unexpected bytes"):
        deserialize_blob(blob + b"\0")


def test_missing_file_identifier_is_rejected():
    blob = bytearray(serialize_graph(every_kind_graph()))
    blob[HEADER_SIZE + 4 : HEADER_SIZE + 8] = b"NOPE"
    with pytest.raises(ValueError, match="checksum mismatch"):
        deserialize_blob(bytes(blob))
    with pytest.raises(ValueError, match="file identifier"):
        deserialize_blob(with_checksum(blob))


def test_garbage_flatbuffer_is_rejected():
    blob = bytearray(serialize_graph(every_kind_graph()))
    _, _, _, _, fb_offset, fb_size, _, _, _, _ = header_fields(bytes(blob))
    # Keep the root offset and identifier; scribble over the tables.
    blob[fb_offset + 8 : fb_offset + fb_size] = b"\xff" * (fb_size - 8)
    with pytest.raises(ValueError, match="malformed VkGraph"):
        deserialize_blob(with_checksum(blob))


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lambda g: g.chain.append(OpCall("aten.relu.default", (0, 99))), "refers to value 99"),
        (lambda g: g.chain.append(OpCall("", (0, 0))), "has no name"),
        (lambda g: g.values.append(ValueListValue((-1,))), "refers to value -1"),
        (lambda g: g.values.append(TensorValue(DType.float32, (2,), constant_id=7)), "constant_id 7 out of range"),
        (lambda g: g.values.append(TensorValue(DType.float32, (2,), constant_id=g.add_constant(bytes(4)))),
         "needs 8 bytes"),
        (lambda g: g.values.append(TensorValue(DType.float32, (3, 5), constant_id=0)),
         "constant 0 belongs to value 1 too"),
        (lambda g: g.add_constant(bytes(4)), "1 constants belong to no tensor"),
        (lambda g: g.output_ids.append(4), "graph output 4 is not a tensor"),
        (lambda g: g.values.append(TensorValue(DType.float32, (2,), mem_obj_id=1)), "mem_obj_id 1 out of range"),
        (lambda g: g.output_ids.append(_planned_id(g)), "graph inputs, outputs, constants and state cannot share"),
        (lambda g: g.values.append(TensorValue(DType.float32, (2, 3), min_sizes=(3, 1))), "min_sizes"),
        (lambda g: g.output_ids.append(g.add_value(TensorValue(DType.float32, (2,), state=True))),
         "a state tensor cannot be a graph input or output"),
        # Dataflow: the planned tensor (mm writes it) and graph output 0 (relu writes it)
        # are intermediates; graph input 0 and the constants are written by the graph.
        (lambda g: g.chain.insert(0, OpCall("aten.relu.default", (_planned_id(g), _new_tensor(g)))),
         "op 0 .* reads value 18 before any op writes it"),
        (lambda g: g.chain.append(OpCall("aten.relu.default", (_planned_id(g), g.output_ids[0]))),
         "writes value 19, which is already written"),
        (lambda g: g.chain.append(OpCall("aten.relu.default", (_planned_id(g), g.input_ids[0]))),
         "writes value 0, which is already written"),
        (lambda g: g.chain.append(OpCall("aten.relu.default", (_planned_id(g), _constant_id(g)))),
         "writes value 1, which is already written"),
        (lambda g: g.chain.append(OpCall("aten.relu.default", (_planned_id(g), g.add_value(IntValue(1))))),
         "outputs value 23, a IntValue"),
        (lambda g: g.chain.append(OpCall("aten.relu.default", (_planned_id(g),), num_outputs=2)),
         "2 outputs among 1 arguments"),
        (lambda g: g.chain.append(OpCall("aten.relu.default", (_planned_id(g),), num_outputs=0)),
         "0 outputs among 1 arguments"),
        (lambda g: g.output_ids.append(_new_tensor(g)), "graph output 23 is never written"),
        (lambda g: g.output_ids.clear(), "graph has no outputs"),
        (lambda g: g.chain.append(OpCall("aten.relu.default", (5, _new_tensor(g)))),
         "takes value 5, an argument of another op or list"),
    ],
)
def test_inconsistent_graph_is_rejected_by_writer_and_reader(corrupt, message, monkeypatch):
    graph = every_kind_graph()
    corrupt(graph)
    with pytest.raises(ValueError, match=message):
        serialize_graph(graph)
    with pytest.raises(ValueError, match=message):
        deserialize_blob(serialize_unchecked(graph, monkeypatch))


def test_constant_past_segment_end_is_rejected():
    graph = every_kind_graph()
    blob = serialize_graph(graph)
    fields = header_fields(blob)
    assert fields[7] == 129
    # Cut the last constant short: the segment shrinks below its ConstantRef.
    with pytest.raises(ValueError, match="runs past"):
        deserialize_blob(with_header(blob[:-1], constants_size=fields[7] - 1))


def test_scalar_without_its_field_is_rejected(monkeypatch):
    """An absent scalar field reads as a default in flatbuffers; ours are optional, so the
    reader tells a corrupted table (one pointed at another vtable) from a zero."""
    graph = every_kind_graph()
    graph.values.append(IntValue(None))  # the writer leaves the field out
    with pytest.raises(ValueError, match="value 23: Int value without its field"):
        deserialize_blob(serialize_unchecked(graph, monkeypatch))


def test_constant_not_where_the_writer_puts_it_is_rejected():
    blob = bytearray(serialize_graph(every_kind_graph()))
    offsets = [site for site in flatbuffer_sites(bytes(blob)) if site.kind == "constant_offset"]
    assert [struct.unpack_from("<Q", blob, site.pos)[0] for site in offsets] == [0, 64, 128]
    struct.pack_into("<Q", blob, offsets[1].pos, 0)  # constant 1 reads constant 0's bytes
    with pytest.raises(ValueError, match="constant 1 is at offset 0, not 64"):
        deserialize_blob(with_checksum(blob))


@pytest.mark.skipif(not os.path.exists(FLATC), reason=f"{FLATC} (Debian flatc 2.0.8, the pinned generator) is missing")
def test_generated_code_is_up_to_date(tmp_path: Path):
    regenerate(tmp_path / "generated")
    comparison = filecmp.dircmp(tmp_path / "generated", GENERATED_DIR, ignore=["__pycache__"])

    def differences(cmp: filecmp.dircmp) -> list:
        _, mismatch, errors = filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)
        found = cmp.left_only + cmp.right_only + mismatch + errors
        for sub in cmp.subdirs.values():
            found += differences(sub)
        return found

    assert differences(comparison) == [], "run: python -m vkdelegate.serialization.regen"
