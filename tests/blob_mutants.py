"""Mutants of a delegate blob, and a worker that loads and runs them in a child process.

mutants() makes byte flips, truncations and flatbuffer-aware field mutations
(offsets, vtable entries, union types, vector lengths, ids, sizes, invalid UTF-8
in strings). run_mutants() loads each one through vkdelegate.runtime.Graph or
through executorch.runtime in a child process (`python blob_mutants.py`), so that
a crash is an outcome instead of the end of pytest.
"""
import json
import os
import pickle
import random
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

# The VkGraph schema (serialization/schema.fbs), as the walker needs it: per table,
# its fields in slot order as (kind, detail). Kinds: a scalar struct format; "table"
# (detail: table name); "vector" (detail: element format or table name); "string";
# "union_type"; "union" (the value of the union whose type is the previous field);
# "structs" (a vector of ConstantRef structs).
_SCHEMA: Dict[str, List[Tuple[str, str]]] = {
    "VkGraph": [("<I", "version"), ("vector", "ValueEntry"), ("vector", "OpCall"), ("vector", "<i:id"),
                ("vector", "<i:id"), ("structs", "<QQ"), ("vector", "String"), ("<i", "count")],
    "ValueEntry": [("union_type", ""), ("union", "")],
    "Tensor": [("<b", "dtype"), ("vector", "<q:size"), ("<i", "id"), ("<i", "id"), ("vector", "<q:size")],
    "Int": [("<q", "int")],
    "Double": [("<d", "double")],
    "Bool": [("<B", "bool")],
    "Null": [],
    "SymInt": [("<q", "int")],
    "String": [("string", "")],
    "IntList": [("vector", "<q:int")],
    "DoubleList": [("vector", "<d:double")],
    "BoolList": [("vector", "<B:bool")],
    "ValueList": [("vector", "<i:id")],
    "OpCall": [("string", ""), ("vector", "<i:id"), ("<i", "count")],
}
_UNION_MEMBERS = [None, "Tensor", "Int", "Double", "Bool", "Null", "String", "IntList", "DoubleList", "BoolList",
                  "ValueList", "SymInt"]


@dataclass(frozen=True)
class Site:
    """A field of the flatbuffer: where it is (from the blob's start), its struct format, what it is."""
    pos: int
    fmt: str
    kind: str


def _walk_table(buf: bytes, pos: int, name: str, base: int, sites: List[Site], depth: int = 0) -> None:
    if depth > 8 or not 0 <= pos <= len(buf) - 4:
        return
    sites.append(Site(base + pos, "<i", "soffset"))
    vtable = pos - struct.unpack_from("<i", buf, pos)[0]
    vtable_size = struct.unpack_from("<H", buf, vtable)[0]
    union_type = 0
    for slot, (kind, detail) in enumerate(_SCHEMA[name]):
        entry = vtable + 4 + 2 * slot
        if entry + 2 > vtable + vtable_size:
            continue
        sites.append(Site(base + entry, "<H", "vtable_entry"))
        offset = struct.unpack_from("<H", buf, entry)[0]
        if offset == 0:
            continue
        at = pos + offset
        if kind.startswith("<"):
            sites.append(Site(base + at, kind, detail))
        elif kind == "union_type":
            union_type = buf[at]
            sites.append(Site(base + at, "<B", "union_type"))
        else:
            sites.append(Site(base + at, "<I", "uoffset"))
            target = at + struct.unpack_from("<I", buf, at)[0]
            if kind == "union":
                if 0 < union_type < len(_UNION_MEMBERS):
                    _walk_table(buf, target, _UNION_MEMBERS[union_type], base, sites, depth + 1)
                continue
            if kind == "table":
                _walk_table(buf, target, detail, base, sites, depth + 1)
                continue
            sites.append(Site(base + target, "<I", "vector_length"))
            length = struct.unpack_from("<I", buf, target)[0]
            if kind == "string":
                sites.extend(Site(base + target + 4 + i, "<B", "string_byte") for i in range(length))
            elif kind == "structs":
                for i in range(length):
                    sites.append(Site(base + target + 4 + 16 * i, "<Q", "constant_offset"))
                    sites.append(Site(base + target + 12 + 16 * i, "<Q", "constant_nbytes"))
            elif detail.startswith("<"):
                fmt, what = detail.split(":")
                size = struct.calcsize(fmt)
                sites.extend(Site(base + target + 4 + size * i, fmt, what) for i in range(length))
            else:
                for i in range(length):
                    element = target + 4 + 4 * i
                    sites.append(Site(base + element, "<I", "uoffset"))
                    _walk_table(buf, element + struct.unpack_from("<I", buf, element)[0], detail, base, sites,
                                depth + 1)


def flatbuffer_sites(blob: bytes) -> List[Site]:
    """Every field of the blob's VkGraph flatbuffer (positions from the blob's start)."""
    from vkdelegate.serialization.blob import HEADER_FORMAT

    fields = struct.unpack_from(HEADER_FORMAT, blob)
    fb_offset, fb_size = fields[4], fields[5]
    buf = blob[fb_offset : fb_offset + fb_size]
    sites = [Site(fb_offset, "<I", "uoffset")]
    _walk_table(buf, struct.unpack_from("<I", buf, 0)[0], "VkGraph", fb_offset, sites)
    return sites


def _mutated_value(rng: random.Random, site: Site, old, num_values: int):
    kind = site.kind
    if kind in ("soffset", "uoffset"):
        return old + rng.choice([-16, -8, -4, -2, -1, 1, 2, 4, 8, 16, rng.randrange(-4096, 4096), 1 << 30])
    if kind == "vtable_entry":
        return rng.choice([0, old + 4, old - 4, old + 1, rng.randrange(65536)])
    if kind == "union_type":
        return rng.choice([0, rng.randrange(1, 12), 12, 255])
    if kind == "vector_length":
        return rng.choice([0, old - 1, old + 1, old * 2 + 1, 0x7FFFFFFF, 0xFFFFFFFF])
    if kind == "string_byte":
        return rng.choice([0xFF, 0xC3, 0x80, 0x00, 0xE2])
    if kind == "id":
        return rng.choice([-1, -2, old + 1, old - 1, num_values, num_values + 1, rng.randrange(num_values), 2**31 - 1])
    if kind == "size":
        return rng.choice([0, -1, old + 1, old - 1, 2**40, 2**62])
    if kind == "count":
        return rng.choice([0, -1, old + 1, old - 1, 2**31 - 1])
    if kind in ("constant_offset", "constant_nbytes"):
        return rng.choice([old + 64, old - 64, old + 1, old + 4, 2**63, 2**64 - 64])
    if kind == "dtype":
        return rng.choice([-1, rng.randrange(0, 7), 7, 100])
    if kind == "double":
        return rng.choice([float("nan"), float("inf"), -old, 1e300])
    return rng.randrange(256) if site.fmt in ("<B", "<b") else old + rng.choice([-1, 1, 2**40])


def _pack(fmt: str, value) -> bytes:
    if fmt in ("<f", "<d"):
        return struct.pack(fmt, value)
    bits = 8 * struct.calcsize(fmt)
    return (int(value) % (1 << bits)).to_bytes(bits // 8, "little")


def mutants(blob: bytes, count: int, seed: int = 0, truncate: bool = True) -> List[Tuple[str, bytes]]:
    """count (kind, mutated blob) pairs: field mutations, byte flips, and (if truncate) truncations.

    The checksum is left as it was: with_checksum() makes it match again.
    """
    from vkdelegate.serialization.blob import deserialize_blob

    rng = random.Random(seed)
    sites = flatbuffer_sites(blob)
    num_values = len(deserialize_blob(blob).values)
    out = []
    while len(out) < count:
        roll = rng.random()
        mutant = bytearray(blob)
        if truncate and roll < 0.05:
            out.append(("truncate", bytes(blob[: rng.randrange(len(blob))])))
            continue
        if roll < 0.25:
            for at in rng.sample(range(len(blob)), rng.randint(1, 4)):
                mutant[at] ^= 1 << rng.randrange(8)
            out.append(("byte_flip", bytes(mutant)))
            continue
        site = rng.choice(sites)
        old = struct.unpack_from(site.fmt, blob, site.pos)[0]
        mutant[site.pos : site.pos + struct.calcsize(site.fmt)] = _pack(
            site.fmt, _mutated_value(rng, site, old, num_values))
        if mutant != blob:
            out.append((site.kind, bytes(mutant)))
    return out


# ----------------------------------------------------------------------------
# Running mutants in a child process


@dataclass
class Outcome:
    kind: str
    result: str  # "error", "same", "different" or "crash"
    message: str = ""


def run_mutants(route: str, reference_blob: bytes, cases: Sequence[Tuple[str, bytes]], inputs: Sequence,
                pte: Optional[bytes] = None, timeout: float = 120) -> List[Outcome]:
    """Loads and runs each case through route ("graph": vkdelegate.runtime.Graph; "executorch":
    the pte with the case's bytes in place of reference_blob), in child processes; a child that dies
    marks its current case "crash" and the next child goes on after it."""
    outcomes: List[Optional[Outcome]] = [None] * len(cases)
    with tempfile.TemporaryDirectory() as scratch:
        job = os.path.join(scratch, "job.pickle")
        with open(job, "wb") as f:
            # Arrays as (bytes, dtype name, shape): Graph.run wants numpy's own dtype objects,
            # which an unpickled array does not have.
            arrays = [(bytes(np.ascontiguousarray(x)), np.asarray(x).dtype.name, np.shape(x)) for x in inputs]
            pickle.dump({"route": route, "reference": reference_blob, "cases": [b for _, b in cases],
                         "inputs": arrays, "pte": pte}, f)
        start = 0
        while start < len(cases):
            child = subprocess.run([sys.executable, __file__, job, str(start)], capture_output=True, text=True,
                                   timeout=timeout, errors="replace")
            done, reference_ran = start, False
            for line in child.stdout.splitlines():
                if not line.startswith("{"):
                    continue
                record = json.loads(line)
                if "reference" in record:
                    if record["reference"] != "ok":
                        raise AssertionError(f"the unmutated blob fails: {record['reference']}")
                    reference_ran = True
                    continue
                i = record["case"]
                outcomes[i] = Outcome(cases[i][0], record["result"], record.get("message", ""))
                done = i + 1
            if child.returncode != 0:
                if not reference_ran or done >= len(cases):
                    raise AssertionError(f"mutant worker failed after its cases:\n{child.stderr[-3000:]}")
                outcomes[done] = Outcome(cases[done][0], "crash", f"exit {child.returncode}: {child.stderr[-1500:]}")
                done += 1
            start = done
    return outcomes


def _worker(job_path: str, start: int) -> None:
    with open(job_path, "rb") as f:
        job = pickle.load(f)
    route, reference = job["route"], job["reference"]
    inputs = [np.frombuffer(data, dtype=dtype).reshape(shape).copy() for data, dtype, shape in job["inputs"]]
    if route == "graph":
        import vkdelegate.runtime as rt

        def run(blob: bytes):
            return rt.Graph(blob).run(inputs)
    else:
        import torch
        from executorch.runtime import Runtime

        import vkdelegate.runtime as rt  # registers the backend

        pte, at = job["pte"], job["pte"].find(reference)
        assert at >= 0, "the pte does not hold the reference blob"
        runtime = Runtime.get()

        def run(blob: bytes):
            assert len(blob) == len(reference), "the executorch route takes mutants of the same length"
            program = runtime.load_program(pte[:at] + blob + pte[at + len(blob):])
            method = program.load_method("forward")
            return [o.numpy() for o in method.execute([torch.as_tensor(x) for x in inputs])]

    expected = run(reference)
    print(json.dumps({"reference": "ok"}), flush=True)
    for i in range(start, len(job["cases"])):
        try:
            outputs = run(job["cases"][i])
        except Exception as error:  # noqa: BLE001  (any Python exception is an error, not a crash)
            message = f"{type(error).__name__}: {error}"
            if route != "graph":
                message += f" (backend: {rt.last_error()})"
            print(json.dumps({"case": i, "result": "error", "message": message}), flush=True)
            continue
        same = len(outputs) == len(expected) and all(
            o.shape == e.shape and o.dtype == e.dtype and np.array_equal(o, e, equal_nan=True)
            for o, e in zip(outputs, expected))
        print(json.dumps({"case": i, "result": "same" if same else "different"}), flush=True)


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]))
