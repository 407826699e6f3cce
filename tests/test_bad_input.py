"""Bad blobs and bad inputs give clear errors, never a crash."""
import collections
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

import vkdelegate.runtime as rt
from blob_mutants import flatbuffer_sites, mutants, run_mutants
from executorch.runtime import Runtime
from helpers import delegate_blob, load_method, lower

from vkdelegate.serialization.blob import HEADER_SIZE as HEADER
from vkdelegate.serialization.blob import with_checksum

REGRESSIONS = Path(__file__).parent / "regressions"


@pytest.fixture(scope="module")
def mlp_blob_and_pte():
    m = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3)).eval()
    em = lower(m, (torch.randn(2, 6),))
    blob = delegate_blob(em)
    return m, blob, em.to_executorch().buffer


class Mixed(torch.nn.Module):
    """Convolution, views, scalar and list arguments, two outputs: many kinds of values to corrupt."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3)
        self.fc = torch.nn.Linear(12, 4)

    def forward(self, x):
        y = self.fc(torch.relu(self.conv(x)).reshape(x.shape[0], -1))
        return torch.softmax(y * 0.5, dim=-1), y.mean(dim=1, keepdim=True)


@pytest.fixture(scope="module")
def mixed_blob_and_pte():
    torch.manual_seed(0)
    x = torch.randn(1, 2, 4, 4)
    em = lower(Mixed().eval(), (x,))
    return delegate_blob(em), em.to_executorch().buffer, [x.numpy()]


# Mutants that can leave a valid graph, only another one: a constant's bytes or a scalar
# argument changed in place, or a tensor id changed to another tensor that fits (a graph
# output made a constant of the same program). No check can tell these from a real graph;
# the checksum is what catches them. (A table pointed at another vtable whose field sits
# elsewhere could be one too; these seeds make none.)
VALUE_KINDS = {"byte_flip", "int", "double", "bool", "id"}


def check_outcomes(outcomes, checksum_fixed: bool):
    results = collections.Counter(o.result for o in outcomes)
    crashes = [o for o in outcomes if o.result == "crash"]
    assert not crashes, f"{len(crashes)} crashes, first: {crashes[0].kind}: {crashes[0].message}"
    for o in outcomes:
        if o.result == "error":
            assert o.message.isascii() and o.message.isprintable(), o.message
    if not checksum_fixed:
        assert results == {"error": len(outcomes)}, results
        return
    different = collections.Counter(o.kind for o in outcomes if o.result == "different")
    assert set(different) <= VALUE_KINDS, f"structural mutants that ran to a different answer: {different}"
    assert results["error"] > len(outcomes) / 2, results


@pytest.mark.parametrize("checksum_fixed", [False, True], ids=["as-mutated", "checksum-fixed"])
def test_mutated_blob_through_graph(mixed_blob_and_pte, checksum_fixed):
    """Byte flips, truncations and flatbuffer field mutations, loaded and run by Graph(blob)
    in a child process: never a crash; a different answer only where the checksum was made
    to match a mutated value (the verifier and the semantic checks catch the rest)."""
    blob, _, inputs = mixed_blob_and_pte
    cases = mutants(blob, 250, seed=1)
    if checksum_fixed:
        cases = [(kind, with_checksum(b) if len(b) >= HEADER else b) for kind, b in cases]
    check_outcomes(run_mutants("graph", blob, cases, inputs), checksum_fixed)


def _op_name_with_invalid_utf8(blob: bytes) -> bytes:
    """blob with a byte of its first op name made 0xff (not UTF-8), checksum fixed."""
    site = next(site for site in flatbuffer_sites(blob) if site.kind == "string_byte"
                and blob[site.pos - 8 : site.pos + 4].find(b"aten") >= 0)
    mutant = bytearray(blob)
    mutant[site.pos] = 0xFF
    return with_checksum(bytes(mutant))


# Tests that share executorch_outcomes run in one xdist worker: the fixture runs once.
EXECUTORCH_GROUP = pytest.mark.xdist_group("bad-input-executorch")


@pytest.fixture(scope="module")
def executorch_outcomes(mixed_blob_and_pte):
    """Mutants loaded through executorch.runtime (backend init), each in place of the pte's
    blob, in one child process (importing executorch is most of the time): as mutated,
    with the checksum fixed, and the one with an op name that is not UTF-8."""
    blob, pte, inputs = mixed_blob_and_pte
    as_mutated = mutants(blob, 60, seed=2, truncate=False)
    fixed = [(kind, with_checksum(b)) for kind, b in as_mutated]
    cases = as_mutated + fixed + [("op_name_utf8", _op_name_with_invalid_utf8(blob))]
    outcomes = run_mutants("executorch", blob, cases, inputs, pte=pte)
    return {False: outcomes[:60], True: outcomes[60:120], "op_name_utf8": outcomes[120]}


@EXECUTORCH_GROUP
@pytest.mark.parametrize("checksum_fixed", [False, True], ids=["as-mutated", "checksum-fixed"])
def test_mutated_blob_through_executorch(executorch_outcomes, checksum_fixed):
    check_outcomes(executorch_outcomes[checksum_fixed], checksum_fixed)


@EXECUTORCH_GROUP
def test_invalid_utf8_op_name_is_a_printable_error(mlp_blob_and_pte, executorch_outcomes):
    """ExecuTorch's Python log sink died (terminate) on such bytes in our message, and Graph
    raised UnicodeDecodeError: every non-printable byte of a message is escaped."""
    _, blob, _ = mlp_blob_and_pte
    with pytest.raises(ValueError, match=r"no kernel for '.*\\xff.*'"):
        rt.Graph(_op_name_with_invalid_utf8(blob))
    outcome = executorch_outcomes["op_name_utf8"]
    assert outcome.result == "error" and "\\xff" in outcome.message, outcome


def test_setting_value_is_printable_in_its_error(mlp_blob_and_pte):
    """An environment value can hold any bytes; the message escapes them as blob bytes are."""
    _, blob, _ = mlp_blob_and_pte
    with pytest.raises(ValueError, match=r"^VKDELEGATE_NO_COOPMAT=\\xc3\\xa9: expected 0 or 1"):
        rt.Graph(blob, overrides={"NO_COOPMAT": "\u00e9"})


def _value_entry_sites(blob: bytes, kind: str):
    sites = flatbuffer_sites(blob)
    # A ValueEntry's fields: the union type (a byte), then the union value's offset.
    return [s for i, s in enumerate(sites) if s.kind == kind and any(
        t.kind == "union_type" for t in sites[max(0, i - 3) : i + 3])]


def test_union_without_value_is_an_error(mlp_blob_and_pte):
    """A ValueEntry whose type is set and whose table is absent (the verifier allows it)
    crashed Graph(blob); so did type NONE."""
    _, blob, _ = mlp_blob_and_pte
    type_site = next(s for s in flatbuffer_sites(blob) if s.kind == "union_type")
    none_type = bytearray(blob)
    none_type[type_site.pos] = 0
    with pytest.raises(ValueError, match="unknown value type 0"):
        rt.Graph(with_checksum(bytes(none_type)))
    # The ValueEntry vtable's entry for the value field, set to 0: every value is absent.
    vtable_entry = _value_entry_sites(blob, "vtable_entry")[1]
    absent = bytearray(blob)
    struct.pack_into("<H", absent, vtable_entry.pos, 0)
    with pytest.raises(ValueError, match="has no table"):
        rt.Graph(with_checksum(bytes(absent)))


def test_older_blob_version_says_reexport(mlp_blob_and_pte):
    _, blob, pte = mlp_blob_and_pte
    older = with_checksum(blob[:4] + struct.pack("<I", 1) + blob[8:])
    with pytest.raises(ValueError, match="older than this runtime's 2: re-export"):
        rt.Graph(older)


def test_checksum_mismatch_through_both_routes(mlp_blob_and_pte):
    _, blob, pte = mlp_blob_and_pte
    flipped = bytearray(blob)
    flipped[-1] ^= 1  # a bit of the last constant: a valid graph with another weight
    with pytest.raises(ValueError, match="checksum mismatch: the file is corrupted"):
        rt.Graph(bytes(flipped))
    at = pte.find(blob)
    with pytest.raises(Exception):
        Runtime.get().load_program(pte[:at] + bytes(flipped) + pte[at + len(blob):]).load_method("forward")
    assert "checksum mismatch: the file is corrupted" in rt.last_error()


# What the blobs of tests/regressions (README.md there) must fail with; a file not named
# here must only fail cleanly.
REGRESSION_ERRORS = {
    "union_value_absent.vkdb": "has no table",
    "op_name_invalid_utf8.vkdb": "no kernel for '\\xfften.linear.default'",
    "empty_graph_at_misaligned_offset.vkdb": "its graph is 0 bytes",
    "int64_sizes_vector_misaligned.vkdb": "misaligned vector",
    "repeat_count_overflows_size.vkdb": "(aten.repeat.default): a size computation overflows",
    "bmm_dim_past_int32.vkdb": "invalid tensor size 3321888768",
    "slice_step_overflows_stride.vkdb": "(aten.slice_copy.Tensor): slice step 4611686018427387907 is outside int32",
    "gguf_linear_rows_overflow.vkdb": "(et_vk.vkd_linear_gguf.default): a size computation overflows",
}


def test_regression_blobs(mlp_blob_and_pte):
    """Each blob that once crashed the loader now loads to an error, in a child process. Each
    has a matching checksum and the current version: it reaches the checks behind them."""
    files = sorted(REGRESSIONS.glob("*.vkdb"))
    assert {path.name for path in files} >= set(REGRESSION_ERRORS)
    _, blob, _ = mlp_blob_and_pte
    cases = [(path.name, path.read_bytes()) for path in files]
    outcomes = run_mutants("graph", blob, cases, [np.ones((2, 6), np.float32)])
    for (name, _), outcome in zip(cases, outcomes):
        assert outcome.result == "error", (name, outcome)
        assert "checksum mismatch" not in outcome.message and "re-export" not in outcome.message, (name, outcome)
        assert REGRESSION_ERRORS.get(name, "") in outcome.message, (name, outcome.message)


def test_truncated_blob(mlp_blob_and_pte):
    _, blob, _ = mlp_blob_and_pte
    for n in (0, 10, HEADER - 1):
        with pytest.raises(ValueError, match="truncated"):
            rt.Graph(blob[:n])
    for n in (HEADER + 10, len(blob) // 2, len(blob) - 1):
        with pytest.raises(ValueError, match="truncated|corrupted"):
            rt.Graph(blob[:n])


def test_bad_magic_and_newer_version(mlp_blob_and_pte):
    _, blob, _ = mlp_blob_and_pte
    with pytest.raises(ValueError, match="magic"):
        rt.Graph(b"XXXX" + blob[4:])
    newer = blob[:4] + struct.pack("<I", 99) + blob[8:]
    with pytest.raises(ValueError, match="newer"):
        rt.Graph(newer)


def test_wrong_input_shape_and_dtype_direct(mlp_blob_and_pte):
    _, blob, _ = mlp_blob_and_pte
    g = rt.Graph(blob)
    with pytest.raises(ValueError, match="above its upper bound"):
        g.run([np.ones((3, 6), np.float32)])
    with pytest.raises(ValueError, match="rank"):
        g.run([np.ones((2, 6, 1), np.float32)])
    with pytest.raises(ValueError, match="dtype"):
        g.run([np.ones((2, 6), np.float64)])
    with pytest.raises(ValueError, match="expected 1 inputs"):
        g.run([])
    with pytest.raises(ValueError, match="dtype >f4, expected float32"):
        g.run([np.ones((2, 6), ">f4")])  # right type, other byte order
    (out,) = g.run([np.ones((2, 6), np.float32)])  # still usable afterwards
    assert out.shape == (2, 3)
    # An unpickled array has a dtype object of its own, equal to float32's.
    (again,) = g.run([pickle.loads(pickle.dumps(np.ones((2, 6), np.float32)))])
    np.testing.assert_array_equal(again, out)


def test_wrong_input_through_executorch(mlp_blob_and_pte):
    m, _, pte = mlp_blob_and_pte
    method = load_method(pte)
    for bad in (torch.ones(3, 6), torch.ones(2, 6, dtype=torch.float64), torch.ones(2, 6, dtype=torch.int64)):
        with pytest.raises(Exception):
            method.execute([bad])
    x = torch.randn(2, 6)
    torch.testing.assert_close(method.execute([x])[0], m(x), rtol=1e-5, atol=1e-5)


def test_corrupted_delegate_in_pte(mlp_blob_and_pte):
    _, _, pte = mlp_blob_and_pte
    at = pte.find(b"VKDB")
    assert at >= 0
    newer = pte[:at + 4] + struct.pack("<I", 99) + pte[at + 8:]
    with pytest.raises(Exception):
        Runtime.get().load_program(newer).load_method("forward")
    assert "newer" in rt.last_error()


def test_int64_beyond_int32_is_an_error():
    """Where int64 tensors live as int32 on the GPU (INT64_STORAGE=32, as on a device without
    shaderInt64), a value that does not fit is refused; with int64 storage it is exact."""
    class AddInts(torch.nn.Module):
        def forward(self, x, y):
            return x + y

    x = torch.tensor([[1, 2, 3]], dtype=torch.int64)
    em = lower(AddInts(), (x, x.clone()))
    g = rt.Graph(delegate_blob(em), overrides={"INT64_STORAGE": "32"})
    (out,) = g.run([np.array([[1, 2, 3]]), np.array([[4, 5, -6]])])
    assert out.dtype == np.int64 and out.tolist() == [[5, 7, -3]]
    with pytest.raises(ValueError, match="does not fit"):
        g.run([np.array([[2**40, 0, 0]]), np.array([[0, 0, 0]])])
    (out,) = rt.Graph(delegate_blob(em)).run([np.array([[2**40, 0, 0]]), np.array([[0, 0, -2**62]])])
    assert out.tolist() == [[2**40, 0, -2**62]]
