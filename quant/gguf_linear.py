"""Linear and embedding layers on GGUF-quantized weights, read in their own block layouts.

`et_vk.vkd_linear_gguf(x, weight, ggml_type, n, k, bias)` computes
`x @ W.T + bias` where W [n, k] is stored as the raw GGUF blocks of one
tensor, row after row (llama.cpp's layout, nothing re-quantized). The blocks
travel as int32 words: the bytes, zero-padded to a multiple of 4 and read
little-endian, because blocks are 18, 20, 34, 144 or 210 bytes long and GPUs need
not have 8-bit storage; the shaders take the bytes back out of the words.

`et_vk.vkd_embedding_gguf(weight, indices, ggml_type, rows, dim)` gathers rows
of such a weight [rows, dim] (a token embedding; with tied embeddings the same
words are the LM head's GGUFLinear weight).

The reference implementations (eager, and what tests compare against)
dequantize the blocks with the torch decoders below, then run a float linear
or gather the rows.
"""
import sys
from dataclasses import dataclass
from typing import Dict, Optional

import torch

from .library import define


@dataclass(frozen=True)
class BlockFormat:
    name: str
    ggml_type: int  # gguf.GGMLQuantizationType value
    block_size: int  # weights per block; K must be a multiple of it
    block_bytes: int


# The block layouts the shaders read (values of gguf.GGMLQuantizationType).
FORMATS: Dict[int, BlockFormat] = {
    fmt.ggml_type: fmt
    for fmt in (
        BlockFormat("Q4_0", 2, 32, 18),
        BlockFormat("Q4_1", 3, 32, 20),
        BlockFormat("Q8_0", 8, 32, 34),
        BlockFormat("Q4_K", 12, 256, 144),
        BlockFormat("Q6_K", 14, 256, 210),
    )
}
FORMATS_BY_NAME: Dict[str, BlockFormat] = {fmt.name: fmt for fmt in FORMATS.values()}


def block_format(ggml_type: int) -> BlockFormat:
    if ggml_type not in FORMATS:
        names = ", ".join(f"{fmt.name} ({fmt.ggml_type})" for fmt in FORMATS.values())
        raise ValueError(f"ggml type {ggml_type} is not supported by vkd_linear_gguf (supported: {names})")
    return FORMATS[ggml_type]


def shape_error(ggml_type: int, n: int, k: int) -> Optional[str]:
    """Why a weight [n, k] of this type cannot be a vkd_linear_gguf weight, or None."""
    if ggml_type not in FORMATS:
        return f"ggml type {ggml_type} is not one of {', '.join(FORMATS_BY_NAME)}"
    fmt = FORMATS[ggml_type]
    if n < 1 or k < 1 or k % fmt.block_size:
        return f"{fmt.name} weights need K a positive multiple of {fmt.block_size}, got [N={n}, K={k}]"
    return None


def weight_nbytes(ggml_type: int, n: int, k: int) -> int:
    fmt = block_format(ggml_type)
    return n * (k // fmt.block_size) * fmt.block_bytes


def pack_words(blocks: torch.Tensor) -> torch.Tensor:
    """Raw block bytes (uint8, any shape) -> int32 words, zero-padded, little-endian."""
    flat = blocks.detach().contiguous().reshape(-1).to(torch.uint8)
    pad = (-flat.numel()) % 4
    if pad:
        flat = torch.cat([flat, flat.new_zeros(pad)])
    if sys.byteorder == "little":  # the bytes are the words' memory
        return flat.clone().view(torch.int32)
    # Assemble words from bytes arithmetically: independent of the host's byte order.
    quads = flat.reshape(-1, 4).to(torch.int64)
    words = quads[:, 0] | (quads[:, 1] << 8) | (quads[:, 2] << 16) | (quads[:, 3] << 24)
    return torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)


def unpack_bytes(words: torch.Tensor, nbytes: int) -> torch.Tensor:
    """int32 words -> the first nbytes bytes (uint8), as pack_words packed them."""
    if sys.byteorder == "little":  # the words' memory is the bytes: no copy
        return words.detach().contiguous().reshape(-1).view(torch.uint8)[:nbytes]
    w = words.reshape(-1).to(torch.int64) & 0xFFFFFFFF
    quads = torch.stack([(w >> shift) & 0xFF for shift in (0, 8, 16, 24)], dim=-1)
    return quads.reshape(-1)[:nbytes].to(torch.uint8)


def _f16(lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """Little-endian fp16 from two uint8 byte columns, as float32."""
    bits = lo.to(torch.int32) | (hi.to(torch.int32) << 8)
    bits = torch.where(bits >= 2**15, bits - 2**16, bits)
    return bits.to(torch.int16).view(torch.float16).to(torch.float32)


def _nibbles(qs: torch.Tensor) -> torch.Tensor:
    """[..., b] bytes -> [..., 2, b] (uint8): low nibbles, then high nibbles."""
    return torch.stack([qs & 0xF, qs >> 4], dim=-2)


def _dequant_q4_0(b: torch.Tensor) -> torch.Tensor:
    d = _f16(b[:, 0], b[:, 1])[:, None]
    q = _nibbles(b[:, 2:18]).reshape(-1, 32)
    return d * (q.to(torch.float32) - 8)


def _dequant_q4_1(b: torch.Tensor) -> torch.Tensor:
    d = _f16(b[:, 0], b[:, 1])[:, None]
    m = _f16(b[:, 2], b[:, 3])[:, None]
    q = _nibbles(b[:, 4:20]).reshape(-1, 32)
    return d * q.to(torch.float32) + m


def _dequant_q8_0(b: torch.Tensor) -> torch.Tensor:
    d = _f16(b[:, 0], b[:, 1])[:, None]
    q = b[:, 2:34].view(torch.int8).to(torch.float32)
    return d * q


def _dequant_q4_k(b: torch.Tensor) -> torch.Tensor:
    d = _f16(b[:, 0], b[:, 1])[:, None, None]
    dmin = _f16(b[:, 2], b[:, 3])[:, None, None]
    s = b[:, 4:16].to(torch.int32)
    # Eight 6-bit scales and mins: sub-blocks 0-3 in the low bits of bytes 0-7,
    # sub-blocks 4-7 in the nibbles of bytes 8-11 plus the top bits of bytes 0-7.
    scale = torch.cat([s[:, 0:4] & 63, (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)], dim=1)
    minimum = torch.cat([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], dim=1)
    # 32-byte groups: low nibbles are sub-block 2g, high nibbles 2g + 1.
    q = _nibbles(b[:, 16:144].reshape(-1, 4, 32)).reshape(-1, 8, 32).to(torch.float32)
    return (d * scale[:, :, None] * q - dmin * minimum[:, :, None]).reshape(-1, 256)


def _dequant_q6_k(b: torch.Tensor) -> torch.Tensor:
    ql = b[:, 0:128].to(torch.int32).reshape(-1, 2, 64)
    qh = b[:, 128:192].to(torch.int32).reshape(-1, 2, 32)
    scales = b[:, 192:208].view(torch.int8).to(torch.float32)
    d = _f16(b[:, 208], b[:, 209])[:, None]
    # Each half of 128 weights: low 4 bits from 64 bytes (low nibbles, then high),
    # high 2 bits from 32 bytes (bit pairs 0-1, 2-3, 4-5, 6-7).
    low = torch.cat([ql & 0xF, ql >> 4], dim=2)
    high = torch.cat([(qh >> shift) & 3 for shift in (0, 2, 4, 6)], dim=2)
    q = ((low | (high << 4)) - 32).reshape(-1, 16, 16).to(torch.float32)
    return (d[:, :, None] * scales[:, :, None] * q).reshape(-1, 256)


_DEQUANT = {2: _dequant_q4_0, 3: _dequant_q4_1, 8: _dequant_q8_0, 12: _dequant_q4_k, 14: _dequant_q6_k}


def dequantize(blocks: torch.Tensor, ggml_type: int, n: int, k: int) -> torch.Tensor:
    """The float32 weight [n, k] of raw GGUF blocks (uint8 bytes, any shape)."""
    error = shape_error(ggml_type, n, k)
    if error:
        raise ValueError(error)
    fmt = FORMATS[ggml_type]
    nbytes = weight_nbytes(ggml_type, n, k)
    flat = blocks.reshape(-1)
    if flat.numel() < nbytes:
        raise ValueError(f"{fmt.name} weight [{n}, {k}] needs {nbytes} bytes, got {flat.numel()}")
    rows = flat[:nbytes].reshape(-1, fmt.block_bytes)
    return _DEQUANT[ggml_type](rows).reshape(n, k)


def _check_weight_words(weight: torch.Tensor, ggml_type: int, n: int, k: int) -> None:
    error = shape_error(ggml_type, n, k)
    if error:
        raise ValueError(f"vkd_linear_gguf: {error}")
    if weight.dtype != torch.int32:
        raise ValueError(f"vkd_linear_gguf: weight words must be int32, got {weight.dtype}")
    if weight.numel() * 4 < weight_nbytes(ggml_type, n, k):
        raise ValueError(
            f"vkd_linear_gguf: {weight.numel()} words are too few for a {FORMATS[ggml_type].name} "
            f"weight [{n}, {k}] ({weight_nbytes(ggml_type, n, k)} bytes)"
        )


def _linear_gguf_reference(x, weight, ggml_type, n, k, bias=None):
    _check_weight_words(weight, ggml_type, n, k)
    w = dequantize(unpack_bytes(weight, weight_nbytes(ggml_type, n, k)), ggml_type, n, k)
    return torch.nn.functional.linear(x, w.to(x.dtype), bias)


def _linear_gguf_fake(x, weight, ggml_type, n, k, bias=None):
    _check_weight_words(weight, ggml_type, n, k)
    if x.shape[-1] != k:
        raise ValueError(f"vkd_linear_gguf: input's last dim is {x.shape[-1]}, the weight's K is {k}")
    return x.new_empty((*x.shape[:-1], n))


linear_gguf = define(
    "vkd_linear_gguf(Tensor x, Tensor weight, int ggml_type, int n, int k, Tensor? bias=None) -> Tensor",
    _linear_gguf_reference,
    _linear_gguf_fake,
)


def _check_embedding_words(weight, ggml_type, rows, dim):
    error = shape_error(ggml_type, rows, dim)
    if error:
        raise ValueError(f"vkd_embedding_gguf: {error}")
    if weight.dtype != torch.int32 or weight.numel() * 4 < weight_nbytes(ggml_type, rows, dim):
        raise ValueError(f"vkd_embedding_gguf: the weight must be int32 words holding {weight_nbytes(ggml_type, rows, dim)} "
                         f"bytes of {FORMATS[ggml_type].name} blocks, got {weight.numel()} {weight.dtype} elements")


def _embedding_gguf_reference(weight, indices, ggml_type, rows, dim):
    _check_embedding_words(weight, ggml_type, rows, dim)
    row_bytes = weight_nbytes(ggml_type, 1, dim)
    blocks = unpack_bytes(weight, rows * row_bytes).reshape(rows, row_bytes)
    if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= rows):
        bad = indices[(indices < 0) | (indices >= rows)][0]
        raise IndexError(f"vkd_embedding_gguf: index {int(bad)} is out of range for {rows} rows")
    picked = blocks[indices.reshape(-1).long()]  # dequantize only the rows asked for
    return dequantize(picked, ggml_type, picked.shape[0], dim).reshape(*indices.shape, dim)


def _embedding_gguf_fake(weight, indices, ggml_type, rows, dim):
    _check_embedding_words(weight, ggml_type, rows, dim)
    return torch.empty((*indices.shape, dim), dtype=torch.float32, device=indices.device)


embedding_gguf = define(
    "vkd_embedding_gguf(Tensor weight, Tensor indices, int ggml_type, int rows, int dim) -> Tensor",
    _embedding_gguf_reference,
    _embedding_gguf_fake,
)


# Q4_0 and Q8_0 blocks are one fp16 scale d and 32 signed values q with w = d * q (Q4_0 stores
# q + 8): exactly the weight-only layout of quant/torchao_ops.py (signed 4- or 8-bit values packed
# along K, one float scale per group of 32, no zero points), so backends/gguf_repack.py moves
# them onto those ops (their fusions, GEMVs and tensor-core prefill) with the same numbers.
REPACKED_BITS = {2: 4, 8: 8}  # ggml type -> bits of the weight-only layout
REPACKED_GROUP = 32


def _repack_values(weight: torch.Tensor, ggml_type: int, n: int, k: int):
    _check_weight_words(weight, ggml_type, n, k)
    if ggml_type not in REPACKED_BITS:
        raise ValueError(f"vkd_gguf_to_qw: {FORMATS[ggml_type].name} has no exact weight-only layout")
    b = unpack_bytes(weight, weight_nbytes(ggml_type, n, k)).reshape(-1, FORMATS[ggml_type].block_bytes)
    d = _f16(b[:, 0], b[:, 1]).reshape(n, k // REPACKED_GROUP)
    if ggml_type == 2:
        q = _nibbles(b[:, 2:18]).reshape(-1, 32).to(torch.int8) - 8
    else:
        q = b[:, 2:34].contiguous().view(torch.int8)
    return q.reshape(n, k), d


def _gguf_to_qw_reference(weight, ggml_type, n, k):
    from .torchao_ops import pack_weight

    q, d = _repack_values(weight, ggml_type, n, k)
    return pack_weight(q, REPACKED_BITS[ggml_type]), d


def _gguf_to_qw_fake(weight, ggml_type, n, k):
    _check_weight_words(weight, ggml_type, n, k)
    per = 32 // REPACKED_BITS.get(ggml_type, 4)
    return (weight.new_empty((n, -(-k // per)), dtype=torch.int32),
            weight.new_empty((n, k // REPACKED_GROUP), dtype=torch.float32))


# A Q4_0 / Q8_0 weight's words -> (packed_weight, scales) of et_vk.vkd_linear_qw / vkd_embedding_qw
# (bits REPACKED_BITS[ggml_type], group REPACKED_GROUP, no zeros). AOT only: the graph builder folds it.
gguf_to_qw = define("vkd_gguf_to_qw(Tensor weight, int ggml_type, int n, int k) -> (Tensor, Tensor)",
                    _gguf_to_qw_reference, _gguf_to_qw_fake)


class GGUFLinear(torch.nn.Module):
    """nn.Linear's forward on a weight kept as raw GGUF blocks (int32 words, see pack_words)."""

    def __init__(self, blocks: torch.Tensor, ggml_type: int, out_features: int, in_features: int,
                 bias: Optional[torch.Tensor] = None):
        super().__init__()
        error = shape_error(ggml_type, out_features, in_features)
        if error:
            raise ValueError(error)
        nbytes = weight_nbytes(ggml_type, out_features, in_features)
        if blocks.numel() != nbytes:
            raise ValueError(
                f"a {FORMATS[ggml_type].name} weight [{out_features}, {in_features}] is {nbytes} bytes, "
                f"got {blocks.numel()}"
            )
        self.ggml_type = int(ggml_type)
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.register_buffer("weight", pack_words(blocks))
        self.register_buffer("bias", None if bias is None else bias.detach().to(torch.float32).clone())

    @property
    def format(self) -> BlockFormat:
        return FORMATS[self.ggml_type]

    def dequantized_weight(self) -> torch.Tensor:
        nbytes = weight_nbytes(self.ggml_type, self.out_features, self.in_features)
        return dequantize(unpack_bytes(self.weight, nbytes), self.ggml_type, self.out_features, self.in_features)

    def forward(self, x):
        return linear_gguf(x, self.weight, self.ggml_type, self.out_features, self.in_features, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"format={self.format.name}, bias={self.bias is not None}")


class GGUFEmbedding(torch.nn.Module):
    """nn.Embedding's forward on a weight [num_embeddings, embedding_dim] kept as raw
    GGUF blocks (int32 words, see pack_words), in its buffer `weight`; or, tied
    (`tie_to`), in the buffer of an LM head's GGUFLinear: the blocks are then one
    tensor of the model's state (an exported program has one constant, not an
    unused second one)."""

    def __init__(self, words: torch.Tensor, ggml_type: int, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self._tied = None
        error = shape_error(ggml_type, num_embeddings, embedding_dim)
        if error:
            raise ValueError(error)
        nbytes = weight_nbytes(ggml_type, num_embeddings, embedding_dim)
        if words.dtype != torch.int32 or words.numel() != (nbytes + 3) // 4:
            raise ValueError(f"a {FORMATS[ggml_type].name} embedding [{num_embeddings}, {embedding_dim}] is "
                             f"{(nbytes + 3) // 4} int32 words, got {words.numel()} {words.dtype} elements")
        self.ggml_type = int(ggml_type)
        self.num_embeddings = int(num_embeddings)
        self.embedding_dim = int(embedding_dim)
        self.register_buffer("weight", words)

    def tie_to(self, linear: "GGUFLinear") -> None:
        """Reads the blocks from `linear` (same format and sizes) and drops this module's own buffer."""
        if (linear.ggml_type, linear.out_features, linear.in_features) != (
                self.ggml_type, self.num_embeddings, self.embedding_dim):
            raise ValueError(f"cannot tie a {self.format.name} embedding [{self.num_embeddings}, "
                             f"{self.embedding_dim}] to {linear}")
        del self._buffers["weight"]
        object.__setattr__(self, "_tied", linear)  # not a submodule: its state stays the linear's

    def __getattr__(self, name):
        # `weight` of a tied embedding is the linear's (not a buffer of this module's state).
        if name == "weight" and self.__dict__.get("_tied") is not None:
            return self._tied.weight
        return super().__getattr__(name)

    def words(self) -> torch.Tensor:
        """The int32 words of the blocks (this module's, or the tied linear's)."""
        return self._tied.weight if self._tied is not None else self.weight

    @classmethod
    def from_blocks(cls, blocks: torch.Tensor, ggml_type: int, num_embeddings: int, embedding_dim: int):
        return cls(pack_words(blocks), ggml_type, num_embeddings, embedding_dim)

    @property
    def format(self) -> BlockFormat:
        return FORMATS[self.ggml_type]

    def dequantized_weight(self) -> torch.Tensor:
        nbytes = weight_nbytes(self.ggml_type, self.num_embeddings, self.embedding_dim)
        return dequantize(unpack_bytes(self.words(), nbytes), self.ggml_type, self.num_embeddings,
                          self.embedding_dim)

    def forward(self, indices):
        return embedding_gguf(self.words(), indices, self.ggml_type, self.num_embeddings, self.embedding_dim)

    def extra_repr(self) -> str:
        tied = ", tied to an LM head" if self._tied is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}, format={self.format.name}{tied}"


def random_blocks(ggml_type: int, n: int, k: int, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """Random valid blocks [n, row bytes] (uint8): random quants and scale bytes, fp16
    super-scales drawn so that weights are about +-1 (random bytes there could be inf or NaN)."""
    fmt = block_format(ggml_type)
    largest = {2: 0.1, 3: 0.1, 8: 0.008, 12: 0.001, 14: 0.0003}[ggml_type]
    blocks = torch.randint(0, 256, (n * (k // fmt.block_size), fmt.block_bytes), dtype=torch.uint8,
                           generator=generator)
    offsets = {2: (0,), 3: (0, 2), 8: (0,), 12: (0, 2), 14: (208,)}[ggml_type]
    for offset in offsets:
        magnitude = (torch.rand(blocks.shape[0], generator=generator) * 0.9 + 0.1) * largest
        sign = torch.randint(0, 2, (blocks.shape[0],), generator=generator) * 2 - 1
        if ggml_type == 12:
            sign = torch.ones_like(sign)  # Q4_K's d and dmin are non-negative
        halves = (magnitude * sign).to(torch.float16).view(torch.int16).to(torch.int32) & 0xFFFF
        blocks[:, offset] = (halves & 0xFF).to(torch.uint8)
        blocks[:, offset + 1] = (halves >> 8).to(torch.uint8)
    return blocks.reshape(n, -1)
