"""GGUF weights (vkdelegate.gguf): block decoders against gguf.quants, the fused
et_vk.vkd_linear_gguf on the GPU against the dequantize-then-float reference
(tight) and the float weights (loose), unsupported types and shapes, and the
examples' Llama run from GGUF files in llama.cpp's naming and layout."""
import copy
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from gguf_files import QT, dequantize as reference_dequantize, quantize, write_gguf
from helpers import TOLERANCES, cpu_ops, delegate_calls, lower, relative_error, run_pte
from vkdelegate.examples.models.llama import Llama
from vkdelegate.gguf import (GGUFEmbedding, GGUFLinear, dequantize, dequantized_copy, llama_config, llama_cpp_names,
                             load_gguf_linears, rope_rows)
from vkdelegate.quant.gguf_file import GGUFFile
from vkdelegate.quant.gguf_linear import FORMATS_BY_NAME, random_blocks
from gguf_files import gguf

TYPES = [QT.Q4_0, QT.Q4_1, QT.Q8_0, QT.Q4_K, QT.Q6_K]
BLOCK = {QT.Q4_0: 32, QT.Q4_1: 32, QT.Q8_0: 32, QT.Q4_K: 256, QT.Q6_K: 256}
# Relative error of the quantized linear's output against float weights (loose).
FLOAT_ERROR = {QT.Q4_0: 0.15, QT.Q4_1: 0.12, QT.Q8_0: 0.01, QT.Q4_K: 0.15, QT.Q6_K: 0.04}
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
def test_decoders_match_gguf_quants(qtype):
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((5, 2 * BLOCK[qtype])).astype(np.float32)
    weight[0] = 0  # all-zero blocks: zero scales
    weight[1, : BLOCK[qtype]] = 3.0  # constant blocks
    for blocks in (quantize(weight, qtype), random_blocks(int(qtype), 5, 2 * BLOCK[qtype]).numpy()):
        ours = dequantize(torch.from_numpy(blocks), int(qtype), 5, 2 * BLOCK[qtype]).numpy()
        np.testing.assert_array_equal(ours, reference_dequantize(blocks, qtype))


def _gguf_linear(qtype, weight, bias=None):
    blocks = torch.from_numpy(quantize(weight.numpy(), qtype))
    return GGUFLinear(blocks, int(qtype), weight.shape[0], weight.shape[1], bias)


# (x sizes, N): M = 1 and M <= 4 take the GEMV path, larger M the tiled one; odd N.
SHAPES = [((1, 1), 13), ((2, 2), 7), ((2, 37), 33)]


@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("lead, n", SHAPES, ids=lambda v: str(v))
def test_fused_linear_matches_dequantized_and_float(qtype, lead, n):
    torch.manual_seed(0)
    k = BLOCK[qtype] * 3  # an odd number of blocks: 96 or 768
    weight, bias = torch.randn(n, k) * 0.1, torch.randn(n)
    module = _gguf_linear(qtype, weight, bias).eval()
    x = torch.randn(*lead, k)
    em = lower(module, (x,))
    assert cpu_ops(em) == [] and len(delegate_calls(em)) == 1
    out = run_pte(em.to_executorch().buffer, (x,))[0]
    blocks = quantize(weight.numpy(), qtype)
    dequantized = torch.from_numpy(reference_dequantize(blocks, qtype))
    torch.testing.assert_close(out, torch.nn.functional.linear(x, dequantized, bias), **TOLERANCES["matmul"])
    assert relative_error(out, torch.nn.functional.linear(x, weight, bias)) < FLOAT_ERROR[qtype]


def _blob_ops(em):
    from helpers import delegate_blob
    from vkdelegate.serialization import deserialize_blob

    return {call.name.rsplit(".", 1)[0] for call in deserialize_blob(delegate_blob(em)).chain}


@pytest.mark.parametrize("qtype", [QT.Q4_0, QT.Q8_0], ids=lambda t: t.name)
def test_q4_0_and_q8_0_repack_onto_the_weight_only_ops(qtype):
    """backends/gguf_repack.py: the same numbers through vkd_linear_qw / vkd_embedding_qw (one row:
    the fused GEMV; three rows: the rows kernel), and the block kernels with gguf_repack=False."""
    torch.manual_seed(1)
    k, n, rows = 96, 13, 23

    class LinearOfEmbedding(torch.nn.Module):
        def __init__(self):
            super().__init__()
            table = quantize(torch.randn(rows, k).numpy(), qtype)
            self.embed = GGUFEmbedding.from_blocks(torch.from_numpy(table), int(qtype), rows, k)
            self.linear = _gguf_linear(qtype, torch.randn(n, k) * 0.1, torch.randn(n))

        def forward(self, tokens, x):
            return self.linear(x + self.embed(tokens))

    module = LinearOfEmbedding().eval()
    for lead in ((1, 1), (1, 3)):
        tokens, x = torch.randint(0, rows, lead), torch.randn(*lead, k)
        with torch.no_grad():
            expected = module(tokens, x)
        outs = {}
        for repack, ops in ((True, {"et_vk.vkd_linear_qw", "et_vk.vkd_embedding_qw"}),
                            (False, {"et_vk.vkd_linear_gguf", "et_vk.vkd_embedding_gguf"})):
            em = lower(module, (tokens, x), options={"gguf_repack": repack})
            assert cpu_ops(em) == [] and ops <= _blob_ops(em), _blob_ops(em)
            outs[repack] = run_pte(em.to_executorch().buffer, (tokens, x))[0]
            torch.testing.assert_close(outs[repack], expected, **TOLERANCES["matmul"])
        torch.testing.assert_close(outs[True], outs[False], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("qtype, k", [(QT.Q4_0, 48), (QT.Q4_1, 40), (QT.Q8_0, 100), (QT.Q4_K, 288), (QT.Q6_K, 128)],
                         ids=lambda v: getattr(v, "name", str(v)))
def test_k_not_a_multiple_of_the_block_is_rejected(qtype, k):
    with pytest.raises(ValueError, match=f"multiple of {BLOCK[qtype]}"):
        GGUFLinear(torch.zeros(7, 64, dtype=torch.uint8), int(qtype), 7, k)
    with pytest.raises(ValueError, match=f"multiple of {BLOCK[qtype]}"):
        dequantize(torch.zeros(7 * 64, dtype=torch.uint8), int(qtype), 7, k)


def test_partitioner_rejects_what_the_runtime_cannot_run():
    from vkdelegate.op_registry import REGISTRY

    class Odd(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("words", torch.zeros(64, dtype=torch.int32))

        def forward(self, x):
            # A K of 48 is no Q4_0 weight: eager refuses too, so trace with a fake kernel only.
            return torch.ops.et_vk.vkd_linear_gguf(x, self.words, 2, 5, 64, None)

    ep = torch.export.export(Odd(), (torch.randn(2, 64),))
    node = next(n for n in ep.graph.nodes if n.op == "call_function")
    node.args = (node.args[0], node.args[1], 6, 5, 64, None)  # Q5_1
    assert "Q4_0, Q4_1, Q8_0, Q4_K, Q6_K" in REGISTRY.lookup(node)[1]
    node.args = (node.args[0], node.args[1], 12, 5, 64, None)  # Q4_K with K = 64
    assert "multiple of 256" in REGISTRY.lookup(node)[1]


@pytest.mark.parametrize("qtype", [QT.Q5_1, QT.IQ4_NL, QT.Q5_K], ids=lambda t: t.name)
def test_unsupported_type_names_tensor_and_type(tmp_path, qtype):
    path = tmp_path / "unsupported.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    size = gguf.GGML_QUANT_SIZES[qtype]
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((256, 256 // size[0] * size[1]), np.uint8), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    model = _tiny_llama()
    with pytest.raises(ValueError, match=f"blk.0.attn_q.weight has type {qtype.name}"):
        load_gguf_linears(model, path)


@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
def test_embedding_matches_dequantized_rows(qtype):
    rows, dim = 23, BLOCK[qtype] * 3  # odd rows, an odd number of blocks per row
    weight = torch.randn(rows, dim)
    blocks = quantize(weight.numpy(), qtype)
    module = GGUFEmbedding.from_blocks(torch.from_numpy(blocks), int(qtype), rows, dim).eval()
    table = torch.from_numpy(reference_dequantize(blocks, qtype))
    for indices in (torch.tensor([[22, 0, 5], [5, 5, 1]]), torch.tensor([3, 22], dtype=torch.int32)):
        torch.testing.assert_close(module(indices), table[indices.long()], rtol=0, atol=0)
    indices = torch.tensor([[22, 0, 5], [5, 5, 1]])
    em = lower(module, (indices,))
    assert cpu_ops(em) == [] and len(delegate_calls(em)) == 1
    out = run_pte(em.to_executorch().buffer, (indices,))[0]
    torch.testing.assert_close(out, table[indices], rtol=0, atol=0)


def test_embedding_index_out_of_range_is_an_error():
    import vkdelegate.runtime as rt
    from helpers import delegate_blob

    # Q4_K: the GGUF kernel's own check (Q4_0 / Q8_0 tables become vkd_embedding_qw: backends/gguf_repack.py).
    blocks = random_blocks(int(QT.Q4_K), 7, 256)
    module = GGUFEmbedding.from_blocks(blocks, int(QT.Q4_K), 7, 256).eval()
    with pytest.raises(IndexError, match="index 7 is out of range for 7 rows"):
        module(torch.tensor([1, 7]))
    g = rt.Graph(delegate_blob(lower(module, (torch.tensor([1, 2]),))))
    for bad in (7, -1, 2**31 - 1):
        with pytest.raises(ValueError, match=r"op #\d+ \(et_vk.vkd_embedding_gguf.default\): .*index"):
            g.run([np.array([1, bad])])
        np.testing.assert_array_equal(g.run([np.array([6, 0])])[0], module(torch.tensor([6, 0])).numpy())


def test_embedding_rejects_bad_words():
    words = torch.zeros(10, dtype=torch.int32)
    with pytest.raises(ValueError, match="multiple of 32"):
        GGUFEmbedding(words, int(QT.Q8_0), 1, 20)
    with pytest.raises(ValueError, match="is 9 int32 words, got 10"):
        GGUFEmbedding(words, int(QT.Q8_0), 1, 32)


def _write_raw(path, name, blocks, qtype):
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor(name, blocks, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_bad_shapes_name_tensor_and_type(tmp_path):
    # A Q8_0 weight of the wrong size for its linear, and a 3-D Q4_1 tensor.
    _write_raw(tmp_path / "wrong.gguf", "blk.0.attn_q.weight", quantize(np.ones((64, 256), np.float32), QT.Q8_0),
               QT.Q8_0)
    with pytest.raises(ValueError, match=r"blk.0.attn_q.weight \(Q8_0\) is \[64, 256\]"):
        load_gguf_linears(_tiny_llama(), tmp_path / "wrong.gguf", strict=False)
    blocks = quantize(np.ones((6, 64), np.float32), QT.Q4_1).reshape(2, 3, -1)
    _write_raw(tmp_path / "3d.gguf", "token_embd.weight", blocks, QT.Q4_1)
    with pytest.raises(ValueError, match=r"token_embd.weight \(Q4_1\): quantized tensors must be 2-D"):
        load_gguf_linears(_tiny_llama(), tmp_path / "3d.gguf", strict=False)


def test_truncated_file_is_an_error(tmp_path):
    path = tmp_path / "cut.gguf"
    _write_raw(path, "token_embd.weight", quantize(np.ones((67, 256), np.float32), QT.Q8_0), QT.Q8_0)
    data = path.read_bytes()
    path.write_bytes(data[:-100])
    with pytest.raises(ValueError, match="token_embd.weight \\(Q8_0\\) runs past the end"):
        GGUFFile(path)
    path.write_bytes(b"GGML" + data[4:])
    with pytest.raises(ValueError, match="not a GGUF file"):
        GGUFFile(path)


def test_import_gguf_from_the_repo_root_is_the_pypi_package():
    # The repo root is the vkdelegate package: its gguf.py shadows the PyPI one there.
    script = "import gguf; print(gguf.__file__); print(gguf.GGUFReader.__name__)"
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert os.path.realpath(result.stdout.split()[0]) != os.path.realpath(os.path.join(REPO_ROOT, "gguf.py"))
    assert result.stdout.split()[1] == "GGUFReader"


# ----------------------------------------------------------------------------
# The examples' Llama from GGUF files

# K-quants need every K (dim, hidden) a multiple of 256; odd vocab for an odd N.
LLAMA = dict(vocab=67, dim=256, layers=2, heads=4, kv_heads=2, hidden=512, max_seq_len=16, seed=0)


def _tiny_llama():
    return Llama(**LLAMA).eval()


def _write_llama_gguf(path, model, qtype):
    """The model's weights in llama.cpp's names and layout: Q/K rows permuted for
    GGML's rope, linears and the embedding quantized to qtype, norms float."""
    tensors = {}
    head_dim = LLAMA["dim"] // LLAMA["heads"]
    params = dict(model.named_parameters())
    for gguf_name, target in llama_cpp_names(model).items():
        path_, rows = target if isinstance(target, tuple) else (target, None)
        value = params[path_].detach().numpy()
        if rows is not None:
            permuted = np.empty_like(value)
            permuted[rows.numpy()] = value
            value = permuted
        tensors[gguf_name] = (value, QT.F32 if value.ndim == 1 else qtype)
    tensors["rope_freqs.weight"] = (np.ones(head_dim // 2, np.float32), QT.F32)
    writer_path = str(path)
    write_gguf(writer_path, tensors, extra=dict(
        context_length=LLAMA["max_seq_len"], embedding_length=LLAMA["dim"], block_count=LLAMA["layers"],
        feed_forward_length=LLAMA["hidden"], head_count=LLAMA["heads"], head_count_kv=LLAMA["kv_heads"],
        layer_norm_rms_eps=1e-5, rope_freq_base=10000.0))


def _dequantized_model(model, qtype):
    """The float model with every 2-D weight replaced by gguf.quants' dequantization of its blocks."""
    deq = copy.deepcopy(model)
    with torch.no_grad():
        for _, param in deq.named_parameters():
            if param.dim() == 2:
                blocks = quantize(param.detach().numpy(), qtype)
                param.copy_(torch.from_numpy(reference_dequantize(blocks, qtype)))
    return deq


def test_llama_cpp_rope_rows_undo_the_conversion_permutation():
    # convert_hf_to_gguf.py: w.reshape(heads, 2, head_dim // 2, -1).swapaxes(1, 2).reshape(w.shape)
    heads, head_dim = 3, 8
    w = torch.arange(heads * head_dim * 2).reshape(heads * head_dim, 2)
    permuted = w.reshape(heads, 2, head_dim // 2, 2).swapaxes(1, 2).reshape(w.shape)
    assert torch.equal(permuted[rope_rows(heads, head_dim)], w)


# Q4_1 runs a real model in tests/test_smollm.py; a tiny Llama each costs seconds on lavapipe.
@pytest.mark.parametrize("qtype", [QT.Q4_0, QT.Q8_0, QT.Q4_K, QT.Q6_K], ids=lambda t: t.name)
def test_llama_runs_from_gguf(tmp_path, qtype):
    path = tmp_path / f"llama-{qtype.name}.gguf"
    float_model = _tiny_llama()
    _write_llama_gguf(path, float_model, qtype)
    assert llama_config(path) == {k: v for k, v in LLAMA.items() if k != "seed"} | dict(eps=1e-5, rope_theta=10000.0)

    model = Llama(**LLAMA).eval()
    torch.manual_seed(123)
    for param in model.parameters():  # make sure everything comes from the file
        torch.nn.init.normal_(param)
    report = load_gguf_linears(model, path)
    assert sorted(report.quantized) == sorted(
        name for name, module in float_model.named_modules()
        if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)))
    assert set(report.quantized.values()) == {qtype.name}
    assert report.quantized["tok_embeddings"] == qtype.name and report.dequantized == []
    assert report.skipped == ["rope_freqs.weight"]

    (tokens,) = Llama.example_inputs(batch=1, seq=9, vocab=LLAMA["vocab"])
    em = lower(model, (tokens,))
    assert cpu_ops(em) == [] and len(delegate_calls(em)) == 1
    # Q4_0 / Q8_0 repacked onto the weight-only ops take their fusions ([rms_norm + q/k/v] ...).
    ops = _blob_ops(em)
    repacked = qtype in (QT.Q4_0, QT.Q8_0)
    assert ("et_vk.vkd_linear_qw_fused" in ops) == repacked and ("et_vk.vkd_linear_gguf" in ops) != repacked, ops
    out = run_pte(em.to_executorch().buffer, (tokens,))[0]
    with torch.no_grad():
        dequantized_ref = _dequantized_model(float_model, qtype)(tokens)
        float_ref = float_model(tokens)
        eager = model(tokens)
    torch.testing.assert_close(eager, dequantized_ref, **TOLERANCES["model"])
    torch.testing.assert_close(out, dequantized_ref, **TOLERANCES["model"])
    assert relative_error(out, float_ref) < 2 * FLOAT_ERROR[qtype]


def test_tied_embeddings_and_missing_tensors(tmp_path):
    # A file without output.weight (tied embeddings): token_embd feeds the LM head too.
    float_model = _tiny_llama()
    path = tmp_path / "tied.gguf"
    tensors = {}
    params = dict(float_model.named_parameters())
    for gguf_name, target in llama_cpp_names(float_model, permuted_qk=False).items():
        if gguf_name != "output.weight":
            value = params[target].detach().numpy()
            tensors[gguf_name] = (value, QT.F32 if value.ndim == 1 else QT.Q8_0)
    write_gguf(path, tensors)
    model = _tiny_llama()
    report = load_gguf_linears(model, path, llama_cpp_names(model, path, permuted_qk=False))
    assert report.quantized["output"] == report.quantized["tok_embeddings"] == "Q8_0"
    assert model.output.weight is model.tok_embeddings.words() is model.tok_embeddings.weight  # one copy
    assert [name for name, _ in model.named_buffers() if "weight" in name and "layers" not in name] == ["output.weight"]
    torch.testing.assert_close(model.output.dequantized_weight(), model.tok_embeddings.dequantized_weight(),
                               rtol=0, atol=0)
    # Lowered, the shared blocks are one input of the program (tests/test_smollm.py checks the size).
    (tokens,) = Llama.example_inputs(batch=1, seq=5, vocab=LLAMA["vocab"])
    program = torch.export.export(model, (tokens,))
    assert [spec.target for spec in program.graph_signature.input_specs if "output" in str(spec.target)
            or "tok_embeddings" in str(spec.target)] == ["output.weight"]
    em = lower(model, (tokens,))
    assert cpu_ops(em) == [] and len(delegate_calls(em)) == 1
    out = run_pte(em.to_executorch().buffer, (tokens,))[0]
    with torch.no_grad():
        torch.testing.assert_close(out, dequantized_copy(model)(tokens), **TOLERANCES["model"])
    float_model_ = _tiny_llama()
    load_gguf_linears(float_model_, path, llama_cpp_names(float_model_, path, permuted_qk=False),
                      quantized_embeddings=False)
    assert isinstance(float_model_.tok_embeddings, torch.nn.Embedding)
    torch.testing.assert_close(float_model_.tok_embeddings.weight, model.tok_embeddings.dequantized_weight(),
                               rtol=0, atol=0)

    # Without the tied mapping, the LM head would keep its random weights: strict loading says so.
    with pytest.raises(ValueError, match="gives nothing for output.weight"):
        load_gguf_linears(_tiny_llama(), path, llama_cpp_names(_tiny_llama(), permuted_qk=False))


class _WheelGGUFModel(torch.nn.Module):
    """Token embedding, a linear with bias and an `x @ weight.t()` head, their weights the executorch wheel's
    ExportableGGUFTensor (raw GGUF blocks that export as torchao.dequantize_gguf)."""

    def __init__(self, types, vocab=11, dim=256, hidden=512):
        super().__init__()
        from gguf_files import wheel_gguf_weight

        def raw(type_name, n, k):
            if type_name == "q5_k":
                from gguf_files import random_q5_k_blocks
                return torch.from_numpy(random_q5_k_blocks(n, k))
            return random_blocks(FORMATS_BY_NAME[type_name.upper()].ggml_type, n, k)

        embed_type, up_type, head_type = types
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(vocab, dim)
        self.embed.weight = wheel_gguf_weight(raw(embed_type, vocab, dim), embed_type)
        self.up = torch.nn.Linear(dim, hidden)
        self.up.weight = wheel_gguf_weight(raw(up_type, hidden, dim), up_type)
        self.head = wheel_gguf_weight(raw(head_type, vocab, hidden), head_type)

    def forward(self, tokens):
        h = torch.relu(self.up(self.embed(tokens)))
        return h @ self.head.t()


def _raw_bytes(model):
    return sum(p.raw.numel() for p in model.parameters() if hasattr(p, "raw"))


@pytest.mark.parametrize("types", [("q4_k", "q6_k", "q4_k"), ("q6_k", "q4_k", "q6_k")], ids="-".join)
def test_wheel_dequantize_gguf_fuses_into_gguf_kernels(types):
    from helpers import delegate_blob

    model = _WheelGGUFModel(types).eval()
    tokens = torch.tensor([[3, 10, 0], [7, 7, 1]])
    with torch.no_grad():
        expected = model(tokens)  # the wheel's own dequantize (the gguf package), then float math
    em = lower(model, (tokens,))
    assert cpu_ops(em) == [] and len(delegate_calls(em)) == 1
    blob = delegate_blob(em)
    assert b"et_vk.vkd_embedding_gguf" in blob and b"et_vk.vkd_linear_gguf" in blob
    assert b"dequantize_gguf" not in blob and b"aten.linear" not in blob and b"aten.mm" not in blob
    # The blob holds the blocks once, as words (and the bias): far less than one float copy of the weights.
    floats = 4 * sum(p.numel() for p in model.parameters())
    assert len(blob) < _raw_bytes(model) + 4 * 512 + 16384 < floats / 3
    out = run_pte(em.to_executorch().buffer, (tokens,))[0]
    torch.testing.assert_close(out, expected, **TOLERANCES["matmul"])


def test_wheel_gguf_type_without_a_kernel_stays_on_the_cpu(caplog):
    model = _WheelGGUFModel(("q4_k", "q5_k", "q6_k")).eval()
    tokens = torch.tensor([[3, 10, 0]])
    with torch.no_grad():
        expected = model(tokens)
    with caplog.at_level("INFO", logger="vkdelegate"):
        em = lower(model, (tokens,))
    assert cpu_ops(em) == ["torchao.dequantize_gguf.default"] and len(delegate_calls(em)) == 1
    assert "GGUF type q5_k has no vkdelegate kernel" in caplog.text
    # ExecuTorch has no CPU kernel for the wheel's op (to_executorch: "Missing out variants"), so the
    # lowered program runs here as a module: the partition's inputs and outputs are wired right.
    torch.testing.assert_close(em.exported_program().module()(tokens), expected, **TOLERANCES["matmul"])


def test_wheel_gguf_tied_embedding_and_head_store_the_blocks_once():
    from gguf_files import wheel_gguf_weight
    from helpers import delegate_blob

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(256, 256)
            self.embed.weight = wheel_gguf_weight(random_blocks(int(QT.Q6_K), 256, 256), "q6_k")
            self.output = torch.nn.Linear(256, 256, bias=False)
            self.output.weight = self.embed.weight  # as the wheel's load.py ties (clone=False)

        def forward(self, tokens):
            return self.output(torch.nn.functional.silu(self.embed(tokens)))

    model = Tied().eval()
    tokens = torch.tensor([[5, 255, 0, 5]])
    with torch.no_grad():
        expected = model(tokens)
    em = lower(model, (tokens,))
    assert cpu_ops(em) == [] and len(delegate_calls(em)) == 1
    raw_bytes = model.embed.weight.raw.numel()
    assert raw_bytes <= len(delegate_blob(em)) < raw_bytes + 16384
    torch.testing.assert_close(run_pte(em.to_executorch().buffer, (tokens,))[0], expected, **TOLERANCES["matmul"])


@pytest.mark.filterwarnings("ignore:The given buffer is not writable")  # iter_gguf's torch.frombuffer on the mmap
def test_wheel_iter_gguf_file_lowers_to_gguf_kernels(tmp_path):
    """A .gguf file read by the wheel's own loader (iter_gguf: raw blocks as ExportableGGUFTensor), its weights
    assigned to float32 modules (model.to(float32) makes dequantize_gguf target float32)."""
    from executorch.extension.llm.export.gguf import ExportableGGUFTensor, iter_gguf
    from helpers import delegate_blob

    rng = np.random.default_rng(0)
    path = tmp_path / "wheel.gguf"
    write_gguf(path, {"token_embd.weight": (rng.standard_normal((19, 256)), QT.Q6_K),
                      "output.weight": (rng.standard_normal((23, 256)) * 0.1, QT.Q4_K)})
    tensors = dict(iter_gguf(str(path)))
    assert all(isinstance(t, ExportableGGUFTensor) for t in tensors.values())
    model = torch.nn.Sequential(torch.nn.Embedding(19, 256), torch.nn.Linear(256, 23, bias=False))
    model[0].weight = torch.nn.Parameter(tensors["token_embd.weight"], requires_grad=False)
    model[1].weight = torch.nn.Parameter(tensors["output.weight"], requires_grad=False)
    model = model.to(torch.float32).eval()
    tokens = torch.tensor([[18, 0, 7]])
    with torch.no_grad():
        expected = model(tokens)
    em = lower(model, (tokens,))
    assert cpu_ops(em) == [] and len(delegate_calls(em)) == 1
    assert b"et_vk.vkd_embedding_gguf" in delegate_blob(em) and b"et_vk.vkd_linear_gguf" in delegate_blob(em)
    torch.testing.assert_close(run_pte(em.to_executorch().buffer, (tokens,))[0], expected, **TOLERANCES["matmul"])
