"""A fast reader of GGUF files (version 2 and 3): the metadata and the tensors'
data, memory-mapped.

gguf.GGUFReader parses every metadata value through numpy memmap slices, which
takes tens of seconds for a tokenizer's 100k strings; this reads them with
struct in one pass. It offers the part of GGUFReader's interface the loader
uses: `tensors` (name, tensor_type, shape in ggml's ne order, data) and
`get_field(key).contents()`.
"""
import struct
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import numpy as np

from . import pypi_gguf

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_NUMPY = {0: np.uint8, 1: np.int8, 2: np.uint16, 3: np.int16, 4: np.uint32, 5: np.int32, 6: np.float32,
          7: np.bool_, 10: np.uint64, 11: np.int64, 12: np.float64}
_STRING, _ARRAY = 8, 9


@dataclass
class Field:
    name: str
    value: Any

    def contents(self):
        return self.value.tolist() if isinstance(self.value, np.ndarray) else self.value


@dataclass
class Tensor:
    name: str
    tensor_type: Any  # gguf.GGMLQuantizationType
    shape: np.ndarray  # ne: the innermost dim first, as GGUFReader's
    data: np.ndarray  # float32/float16 values, or the raw bytes (uint8) of other types


class GGUFFile:
    def __init__(self, path):
        gguf = pypi_gguf.load()
        self.path = str(path)
        self._map = np.memmap(self.path, dtype=np.uint8, mode="r")
        buf = memoryview(self._map)
        self._buf, self._pos = buf, 0
        if bytes(buf[:4]) != b"GGUF":
            raise ValueError(f"{self.path} is not a GGUF file (no GGUF magic)")
        self._pos = 4
        version = self._scalar(4)
        if version not in (2, 3):
            raise ValueError(f"{self.path}: GGUF version {version} is not read (versions 2 and 3 are)")
        tensor_count, kv_count = self._scalar(10), self._scalar(10)
        self.fields: Dict[str, Field] = {}
        for _ in range(kv_count):
            key = self._string()
            self.fields[key] = Field(key, self._value(self._scalar(4)))
        infos = []
        for _ in range(tensor_count):
            name = self._string()
            ne = [self._scalar(10) for _ in range(self._scalar(4))]
            infos.append((name, ne, self._scalar(4), self._scalar(10)))
        alignment = int(self.fields["general.alignment"].value) if "general.alignment" in self.fields else 32
        start = -(-self._pos // alignment) * alignment
        self.tensors: List[Tensor] = []
        for name, ne, type_value, offset in infos:
            try:
                tensor_type = gguf.GGMLQuantizationType(type_value)
            except ValueError:
                raise ValueError(f"GGUF tensor {name} has type {type_value}, unknown to the gguf package") from None
            block_size, block_bytes = gguf.GGML_QUANT_SIZES[tensor_type]
            count = int(np.prod(ne, dtype=np.int64))
            if ne[0] % block_size:
                raise ValueError(f"GGUF tensor {name} ({tensor_type.name}): ne={ne} is not whole blocks of "
                                 f"{block_size}")
            nbytes = count // block_size * block_bytes
            begin = start + offset
            if begin + nbytes > len(self._map):
                raise ValueError(f"GGUF tensor {name} ({tensor_type.name}) runs past the end of {self.path}")
            raw = self._map[begin:begin + nbytes]
            if tensor_type.name in ("F32", "F16"):
                raw = raw.view(np.float32 if tensor_type.name == "F32" else np.float16)
            self.tensors.append(Tensor(name, tensor_type, np.array(ne, dtype=np.uint64), raw))
        del self._buf

    def get_field(self, key: str) -> Optional[Field]:
        return self.fields.get(key)

    def _scalar(self, type_value: int):
        fmt = _SCALARS[type_value]
        value = struct.unpack_from(fmt, self._buf, self._pos)[0]
        self._pos += struct.calcsize(fmt)
        return value

    def _string(self) -> str:
        n = self._scalar(10)
        text = bytes(self._buf[self._pos:self._pos + n]).decode("utf-8", errors="replace")
        self._pos += n
        return text

    def _value(self, type_value: int):
        if type_value == _STRING:
            return self._string()
        if type_value == _ARRAY:
            item_type, n = self._scalar(4), self._scalar(10)
            if item_type == _STRING:
                return [self._string() for _ in range(n)]
            if item_type in _NUMPY:
                dtype = np.dtype(_NUMPY[item_type])
                values = np.frombuffer(self._buf, dtype=dtype.newbyteorder("<"), count=n, offset=self._pos).copy()
                self._pos += n * dtype.itemsize
                return values
            return [self._value(item_type) for _ in range(n)]
        if type_value not in _SCALARS:
            raise ValueError(f"{self.path}: metadata value type {type_value} is not a GGUF type")
        return self._scalar(type_value)
