"""The eager vulkan device (vkdelegate.eager): tensors in the runtime's Vulkan memory, copies,
views, registry ops as cached one-op graphs against eager CPU PyTorch, the CPU fallback, and
the errors (docs/eager.md)."""
import copy
import gc
import warnings

import pytest
import torch

import vkdelegate.eager as eager
from helpers import TOLERANCES
from op_samples import SAMPLES
from vkdelegate.examples.models import MODELS
from vkdelegate.op_registry import REGISTRY

DEV = "vulkan"


def test_the_device_is_vulkan():
    assert eager.is_available() and eager.device_name()
    x = torch.ones(3, device=DEV)
    assert x.device.type == DEV and x.device == torch.device("vulkan:0")
    assert x.device == torch.device("privateuseone:0")  # our backend, not PyTorch's own Vulkan
    assert x.is_vulkan and not torch.ones(3).is_vulkan
    assert torch.vulkan.is_available() and torch.vulkan.device_count() == 1
    assert "device='vulkan:0'" in repr(x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.int64, torch.bool])
@pytest.mark.parametrize("shape", [(7,), (3, 5, 2), (1,), ()])
def test_round_trip(dtype, shape):
    torch.manual_seed(0)
    x = (torch.randn(shape) * 100).to(dtype)
    y = x.to(DEV)
    assert y.dtype == dtype and y.shape == x.shape
    assert torch.equal(y.cpu(), x)
    assert torch.equal(y.clone().cpu(), x)  # device -> device


def test_strided_views_and_copies():
    torch.manual_seed(0)
    x = torch.randn(5, 6, 7)
    y = x.to(DEV)
    views = {
        "transpose": lambda t: t.transpose(0, 2),
        "t": lambda t: t[0].t(),
        "permute": lambda t: t.permute(2, 0, 1),
        "select": lambda t: t.select(1, 3),
        "slice": lambda t: t[1:4, ::2, 3:],
        "expand": lambda t: t[:, :1].expand(5, 4, 7),
        "unsqueeze_squeeze": lambda t: t.unsqueeze(1).squeeze(1),
        "view_reshape": lambda t: t.view(30, 7).reshape(5, 42),
        "as_strided": lambda t: t.as_strided((3, 3), (8, 2), 5),
        "chain": lambda t: t.permute(1, 0, 2)[2:, :, 1::3].transpose(0, 1).unsqueeze(0),
    }
    for name, view in views.items():
        got = view(y)
        assert got.untyped_storage().data_ptr() == y.untyped_storage().data_ptr(), name  # metadata only
        assert torch.equal(got.cpu(), view(x)), name
        contiguous = got.contiguous()
        assert contiguous.is_contiguous() and torch.equal(contiguous.cpu(), view(x).contiguous()), name
    # Writes into strided views land where they should, and nowhere else.
    z = y.clone()
    expected = x.clone()
    z[:, 1::2, 2] = torch.arange(15.0).reshape(5, 3).to(DEV)
    expected[:, 1::2, 2] = torch.arange(15.0).reshape(5, 3)
    z.transpose(0, 1)[0].fill_(-1.0)
    expected.transpose(0, 1)[0].fill_(-1.0)
    assert torch.equal(z.cpu(), expected)
    # Overlapping source and destination in one buffer.
    w = torch.arange(10.0).to(DEV)
    w[1:].copy_(w[:-1].clone())
    w[2:6] = w[0:4]
    reference = torch.arange(10.0)
    reference[1:].copy_(reference[:-1].clone())
    reference[2:6] = reference[0:4].clone()
    assert torch.equal(w.cpu(), reference)


@pytest.mark.filterwarnings("error")  # factories and printing run without the CPU fallback
def test_factories_and_printing():
    torch.manual_seed(3)
    a = torch.randn(4, 5, device=DEV)
    torch.manual_seed(3)
    assert torch.equal(a.cpu(), torch.randn(4, 5))
    assert torch.equal(torch.zeros(3, 2, device=DEV).cpu(), torch.zeros(3, 2))
    assert torch.equal(torch.full((2, 3), 7, dtype=torch.int32, device=DEV).cpu(), torch.full((2, 3), 7, dtype=torch.int32))
    assert torch.equal(torch.tensor([[1, 2], [3, 4]], device=DEV).cpu(), torch.tensor([[1, 2], [3, 4]]))
    assert torch.empty(0, 3, device=DEV).cpu().shape == (0, 3)
    e = torch.empty(2, 3, device=DEV).zero_()
    assert torch.equal(e.cpu(), torch.zeros(2, 3))
    assert torch.tensor(2.5, device=DEV).item() == 2.5
    out = torch.empty(0, device=DEV)
    torch.randn(6, out=out)  # resize_ and _copy_from_and_resize
    assert out.shape == (6,)
    text = str(torch.arange(6.0).reshape(2, 3).to(DEV))
    assert text == "tensor([[0., 1., 2.],\n        [3., 4., 5.]], device='vulkan:0')"
    model = torch.nn.Linear(3, 2).vulkan()
    assert model.weight.device.type == DEV


def _tolerance(entry, dtype):
    kind = entry.kind if entry.kind in TOLERANCES else "matmul"
    return TOLERANCES[f"fp16_{kind}" if dtype == torch.float16 else kind]


def _to_device(value):
    return value.to(DEV) if isinstance(value, torch.Tensor) else value


# Registry entries whose samples run eagerly here, one of each kind of op.
EAGER_ENTRIES = ["add", "mul", "div", "relu", "gelu", "mm", "addmm", "linear", "bmm", "softmax", "log_softmax",
                 "native_layer_norm", "convolution", "sum", "mean", "amax", "argmax", "var", "cat", "where",
                 "comparison", "exp", "embedding", "index_select", "permute_copy", "max_pool2d_with_indices",
                 "scaled_dot_product_attention", "rms_norm", "linear_gguf", "embedding_gguf"]
# Views eagerly: metadata over the same storage, no kernel (a chain of them against the CPU).
VIEW_ENTRIES = {"permute_copy"}


# Samples with larger operands (the kernels' tiled and split-K choices, which tests/test_ops.py
# covers through the delegate) cost seconds each on lavapipe here: left out.
MAX_SAMPLE_ELEMENTS = 1 << 16


@pytest.mark.parametrize("entry_name", EAGER_ENTRIES)
def test_registry_samples_match_cpu(entry_name):
    entry = next(e for e in REGISTRY if e.name == entry_name)
    eager.clear_cache()
    for case in SAMPLES[entry_name]():
        if any(isinstance(item, torch.Tensor) and item.numel() > MAX_SAMPLE_ELEMENTS for item in case.inputs) or any(
                item.numel() > MAX_SAMPLE_ELEMENTS for item in case.module.state_dict().values()):
            continue
        with torch.no_grad():
            expected = copy.deepcopy(case.module).eval()(*case.inputs)
        if any(item.numel() > MAX_SAMPLE_ELEMENTS for item in (expected if isinstance(expected, tuple) else (expected,))):
            continue
        expected = expected if isinstance(expected, tuple) else (expected,)
        # Twice: the first call builds the one-op graphs (Python), the second runs them from the C++
        # kernels' cache.
        for call in ("first call", "cached call"):
            with torch.no_grad():
                got = copy.deepcopy(case.module).eval().to(DEV)(*[_to_device(item) for item in case.inputs])
            got = got if isinstance(got, tuple) else (got,)
            for want, have in zip(expected, got):
                assert have.device.type == DEV, case.case_id
                dtype = next((item.dtype for item in case.inputs if isinstance(item, torch.Tensor)), want.dtype)
                torch.testing.assert_close(have.cpu(), want, **_tolerance(entry, dtype), equal_nan=True,
                                           msg=lambda m: f"{entry_name} {case.case_id} ({call}): {m}")
    if entry_name not in VIEW_ENTRIES:
        assert eager.cache_stats()["graphs"] > 0, f"no {entry_name} sample ran through a one-op graph"
        assert eager._C.fast_stats()[1] > 0, f"no {entry_name} sample's second call ran from the C++ cache"


def test_cache_hits_on_repeat():
    eager.clear_cache()
    a, b = torch.randn(8, 8, device=DEV), torch.randn(8, 8, device=DEV)
    first = torch.mm(a, b)
    stats = eager.cache_stats()
    assert stats["graphs"] == 1 and stats["misses"] == 1 and stats["hits"] == 0
    for _ in range(3):
        again = torch.mm(a, b)
    stats = eager.cache_stats()
    assert stats["graphs"] == 1 and stats["hits"] == 3
    assert torch.equal(again.cpu(), first.cpu())
    torch.mm(torch.randn(4, 8, device=DEV), b)  # new sizes: a new graph
    assert eager.cache_stats()["graphs"] == 2


def test_fallback_runs_on_cpu_and_warns_once():
    x = torch.randn(10)
    y = x.to(DEV)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = torch.cumsum(y, 0)  # no kernel on the device
        second = torch.cumsum(y, 0)
    messages = [str(w.message) for w in caught if "cumsum" in str(w.message)]
    assert len(messages) == 1 and "runs on the CPU" in messages[0]
    assert first.device.type == DEV
    assert torch.equal(first.cpu(), torch.cumsum(x, 0)) and torch.equal(second.cpu(), first.cpu())
    assert any(name.startswith("aten::cumsum") for name in eager.cache_stats()["fallback_ops"])


@pytest.mark.parametrize("name", ["mlp", "transformer_block"])
def test_example_models_on_the_device(name):
    model, inputs = MODELS[name]()
    with torch.no_grad():
        expected = model(*inputs)
        got = model.to(DEV)(*[item.to(DEV) for item in inputs])
    torch.testing.assert_close(got.cpu(), expected, **TOLERANCES["model"])


def test_unsupported_dtype_is_an_error():
    with pytest.raises(RuntimeError, match="dtype ComplexFloat is not supported"):
        torch.zeros(3, dtype=torch.complex64, device=DEV)
    with pytest.raises(RuntimeError, match="is not supported"):
        torch.zeros(3, dtype=torch.complex64).to(DEV)


def test_mixing_devices_is_an_error():
    a = torch.randn(4, device=DEV)
    with pytest.raises(RuntimeError, match="got tensors on vulkan and on cpu"):
        a + torch.randn(4)
    with pytest.raises(RuntimeError, match="got tensors on vulkan and on cpu"):
        torch.cumsum(a, 0) + torch.randn(4)  # an op of the fallback
    # A 0-dim CPU tensor (a scalar) is fine, as in PyTorch.
    assert torch.allclose((a + torch.tensor(2.0)).cpu(), a.cpu() + 2)


def test_a_cpu_scalar_in_a_tensor_list_runs_on_the_cpu():
    """A 0-dim CPU tensor inside a list argument is not moved to the device (only Tensor arguments
    are): the op must not hand its host memory to the GPU as a device buffer, whatever the
    registry says of the call; it runs on the CPU."""
    from vkdelegate.eager import dispatch

    op, target = dispatch._edge_target("aten.index.Tensor")
    x = torch.randn(4, 3)
    index = torch.tensor(2)  # 0-dim, on the CPU
    with pytest.warns(UserWarning, match="a CPU scalar tensor in a list"):
        got = dispatch._run(op, target, "aten.index.Tensor", (x.to(DEV), [index]), {})
    assert got.device.type == DEV and torch.equal(got.cpu(), x[index])


def test_backward_is_an_error():
    x = torch.randn(4, 3, device=DEV, requires_grad=True)
    w = torch.randn(3, 2, device=DEV)
    y = (x @ w).sum()
    with pytest.raises(RuntimeError, match="autograd is not supported on the eager vulkan device"):
        y.backward()


def test_too_large_is_an_error():
    with pytest.raises(torch.OutOfMemoryError, match="vulkan device: allocating"):
        torch.empty(1 << 42, dtype=torch.uint8, device=DEV)


def test_in_place_ops_and_batch_norm():
    """In-place variants of registry ops (relu_, add_) and eager batch norm in inference run on
    the device, not the fallback."""
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(inplace=True)).eval()
    block[1].running_mean.uniform_(-1, 1)
    block[1].running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 9, 9)
    with torch.no_grad():
        expected = block(x)
        expected.add_(1.5).mul_(2)
        y = block.to(DEV)(x.to(DEV))
        eager.clear_cache()
        y.add_(1.5).mul_(2)
    assert eager.cache_stats()["graphs"] == 2
    torch.testing.assert_close(y.cpu(), expected, **TOLERANCES["matmul"])
    assert not {"aten::native_batch_norm", "aten::relu_", "aten::add_.Tensor"} & set(eager.cache_stats()["fallback_ops"])
    with pytest.raises(RuntimeError, match="does not match the tensor's"):
        torch.ones(3, device=DEV).add_(torch.ones(2, 3, device=DEV))


def test_discrete_memory_through_staging(tmp_path):
    """Where the host cannot map the device's memory (a discrete GPU; VKDELEGATE_DISCRETE_MEMORY=1
    hides lavapipe's mapping), copies go through staging buffers."""
    import os
    import subprocess
    import sys

    script = (
        "import torch, vkdelegate.eager\n"
        "x = torch.arange(24.0).reshape(4, 6)\n"
        "y = x.to('vulkan')\n"
        "assert torch.equal(y.cpu(), x)\n"
        "assert torch.equal(y.t().contiguous().cpu(), x.t().contiguous())\n"
        "assert torch.equal((y @ y.t() + 1).cpu(), x @ x.t() + 1)\n"
        "z = y.clone(); z[1:3, ::2] = 0; x[1:3, ::2] = 0\n"
        "assert torch.equal(z.cpu(), x)\n"
        "import vkdelegate.runtime as rt; assert rt.validation_error_count() == 0\n"
        "print('ok')\n")
    env = dict(os.environ, VKDELEGATE_DISCRETE_MEMORY="1")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


def test_smollm2_gguf_on_the_device():
    """SmolLM2-135M's Q4_1 GGUF on the device: its GGUF linears and embedding (et_vk ops on the
    quantized blocks, resident on the device) and the rest of the Llama, one forward of the
    prompt: greedy's next token is eager CPU's (test_smollm.py checks " for your help"; the CPU
    forward of the GGUF modules, which dequantize on every call, would take this test's time
    three times over)."""
    from gguf_files import smollm2_path
    from tokenizers import Tokenizer

    from vkdelegate.gguf import llama_from_gguf
    from vkdelegate.quant.gguf_file import GGUFFile

    model, _, tokenizer_json = llama_from_gguf(GGUFFile(smollm2_path()), max_seq_len=8)
    tokenizer = Tokenizer.from_file(tokenizer_json)
    tokens = torch.tensor([tokenizer.encode("Thank you").ids])
    with torch.no_grad():
        eager.clear_cache()
        got = model.to(DEV)(tokens.to(DEV)).cpu()
    assert got.shape[-1] == 49152 and torch.isfinite(got).all()
    assert tokenizer.decode([int(got[0, -1].argmax())]) == " for"
    stats = eager.cache_stats()
    assert stats["fallback_calls"] == 0 and not any("gguf" in name for name in stats["fallback_ops"])


def test_cached_calls_run_in_cpp(monkeypatch):
    """A call whose one-op graph is cached runs from the C++ kernel, without the Python kernel:
    functional and in-place ops, several outputs, Python numbers (their values part of the key)."""
    from vkdelegate.eager import dispatch

    calls = []
    run = dispatch._run
    monkeypatch.setattr(dispatch, "_run", lambda *args, **kwargs: calls.append(args[2]) or run(*args, **kwargs))
    x, y = torch.randn(5, 7), torch.randn(5, 7)
    a, b = x.to(DEV), y.to(DEV)

    def step(p, q):
        return (torch.softmax(p * 0.5 + q, dim=-1), torch.nn.functional.layer_norm(p, (7,)),
                torch.mm(p.t(), q))  # a strided input: gathered, also in C++

    with torch.no_grad():
        want = step(x, y)
        for attempt in range(3):
            calls.clear()
            got = step(a, b)
            for w, g in zip(want, got):
                torch.testing.assert_close(g.cpu(), w)
            assert calls == ([] if attempt else ["aten.mul.Tensor", "aten.add.Tensor", "aten._softmax.default",
                                                 "aten.native_layer_norm.default", "aten.mm.default",
                                                 "aten.index_select.default"])  # mm's gather, on its miss
        calls.clear()
        assert torch.equal((a * 0.25).cpu(), x * 0.25) and calls == ["aten.mul.Tensor"]  # another number
        c = a.clone()
        for _ in range(3):
            c.add_(b)
        assert calls == ["aten.mul.Tensor", "aten.add.Tensor"]  # the in-place add built once
        torch.testing.assert_close(c.cpu(), x + 3 * y)
        with pytest.raises(RuntimeError, match="does not match the tensor's"):
            a[:1].clone().add_(b)  # broadcast into a smaller tensor: the Python kernel's error


def test_graphs_bind_the_tensors_buffers():
    """A queued op's graph reads its inputs and writes its outputs in the tensors' own buffers (no
    copies), views at an offset included; an output that would overlap an input copies."""
    x = torch.randn(6, 40)
    a = x.to(DEV)
    before = eager.cache_stats()
    got = [torch.softmax(a, -1), a[2:] * a[:4], torch.nn.functional.layer_norm(a[1:5], (40,))]
    after = eager.cache_stats()
    assert after["bound_runs"] - before["bound_runs"] >= 2, (before, after)
    want = [torch.softmax(x, -1), x[2:] * x[:4], torch.nn.functional.layer_norm(x[1:5], (40,))]
    for g, w in zip(got, want):
        torch.testing.assert_close(g.cpu(), w)
    c = a.clone()
    c.add_(a)  # self is both an input and the output: copied
    torch.testing.assert_close(c.cpu(), 2 * x)


@pytest.mark.parametrize("limit", [64, 4])
def test_queued_ops_submit_in_batches(limit):
    """Ops are recorded, not submitted, until a sync point (.cpu(): one submit) or a full batch,
    submitted without waiting; freed tensors' buffers are reused only once the batches that use
    them finish (checked by the validation layer). The result is the CPU's either way."""
    previous = eager.queue_limit(limit)
    try:
        x = torch.randn(16, 16)
        y = x.to(DEV)
        torch.vulkan.synchronize()
        before = eager.cache_stats()["queue_submits"]
        z, expected = y, x
        for _ in range(31):
            z, expected = z * 0.5 + y, expected * 0.5 + x  # 62 ops
        submitted = eager.cache_stats()["queue_submits"] - before
        assert submitted == (0 if limit == 64 else 15)  # batches of `limit` as they filled, 2 ops left open
        torch.testing.assert_close(z.cpu(), expected)
        assert eager.cache_stats()["queue_submits"] - before == submitted + 1  # .cpu(): one more
    finally:
        eager.queue_limit(previous)


def test_freed_buffers_are_kept_for_new_tensors():
    gc.collect()
    torch.vulkan.synchronize()
    eager.empty_cache()
    assert eager.cache_stats()["kept_bytes"] == 0
    t = torch.empty(1000, device=DEV)
    del t
    stats = eager.cache_stats()
    assert stats["kept_buffers"] == 1 and stats["kept_bytes"] >= 4000
    u = torch.ones(990, device=DEV)  # the same size class: the kept buffer
    assert eager.cache_stats()["kept_buffers"] == 0 and torch.equal(u.cpu(), torch.ones(990))
    del u
    torch.vulkan.empty_cache()
    assert eager.cache_stats()["kept_bytes"] == 0


@pytest.mark.parametrize("limit", [64, 1, 0])
def test_gpu_fault_is_raised(limit):
    """A GPU-side check (an index out of range) fails the op, or with queued ops the sync point."""
    previous = eager.queue_limit(limit)
    try:
        x = torch.randn(3, 4, device=DEV)
        with pytest.raises((RuntimeError, ValueError), match="index 5 is out of range"):
            torch.index_select(x, 0, torch.tensor([0, 5], device=DEV, dtype=torch.int32)).cpu()
    finally:
        eager.queue_limit(previous)


def test_strided_inputs_gather_on_the_gpu():
    """A strided view an op reads (or .contiguous()) is gathered by a queued index_select, not
    through the host: nothing is submitted before the result is read."""
    x = torch.randn(6, 5, 4)
    y = x.to(DEV)
    torch.vulkan.synchronize()
    before = eager.cache_stats()["queue_submits"]
    a = y.transpose(0, 2).contiguous()
    b = torch.softmax(y[1:, ::2].permute(2, 0, 1), dim=-1)
    c = y[:, :1].expand(6, 3, 4) * 2
    assert eager.cache_stats()["queue_submits"] == before
    assert torch.equal(a.cpu(), x.transpose(0, 2).contiguous())
    torch.testing.assert_close(b.cpu(), torch.softmax(x[1:, ::2].permute(2, 0, 1), dim=-1))
    assert torch.equal(c.cpu(), x[:, :1].expand(6, 3, 4) * 2)


def _no_fallback_since(before: int):
    stats = eager.cache_stats()
    assert stats["fallback_calls"] == before, f"ops ran on the CPU: {stats['fallback_ops']}"


def test_state_updates_run_on_the_device():
    """index_put_ into a buffer and the KV-cache ops (states the runtime updates in place) run as
    one-op graphs whose state starts from the argument's tensor: functional, on the device, no
    fallback (benchmarks/eager_samples.py found them on the CPU)."""
    from vkdelegate.quant.library import rope_kv_update, sdpa_rope_kv

    torch.manual_seed(0)
    eager.clear_cache()
    before = eager.cache_stats()["fallback_calls"]
    state, values = torch.randn(5, 3), torch.randn(2, 3)
    for index in (torch.tensor([4, 1], dtype=torch.int32), torch.tensor([0, 3])):
        expected = state.clone().index_put_([index], values)
        got = state.to(DEV)
        got.index_put_([index.to(DEV)], values.to(DEV))
        assert torch.equal(got.cpu(), expected)
    q, k, v = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 2, 8), torch.randn(1, 2, 2, 8)
    cos, sin = torch.randn(2, 1, 8), torch.randn(2, 1, 8)
    caches = torch.randn(1, 9, 2, 8), torch.randn(1, 9, 2, 8)
    positions = torch.tensor([3, 7], dtype=torch.int32)
    for op in (rope_kv_update.default, sdpa_rope_kv.default):
        expected = op(q, k, v, cos, sin, *caches, positions)
        device_caches = [item.to(DEV) for item in caches]
        got = op(*[item.to(DEV) for item in (q, k, v, cos, sin)], *device_caches, positions.to(DEV))
        for want, have in zip(expected, got):
            torch.testing.assert_close(have.cpu(), want, **TOLERANCES["matmul"])
        for cache, device_cache in zip(caches, device_caches):  # the op is functional: its inputs stay
            assert torch.equal(device_cache.cpu(), cache)
    _no_fallback_since(before)
    assert eager.cache_stats()["graphs"] == 4


@pytest.mark.filterwarnings("error")
def test_ops_under_other_names_run_on_the_device():
    """Eager forms the registry covers under another name: floor_divide (div, rounding floor),
    std (sqrt of var), arange's overloads and factories under torch.device, unfold (a view),
    quantize_per_tensor as one op."""
    torch.manual_seed(0)
    eager.clear_cache()
    before = eager.cache_stats()["fallback_calls"]
    a, b = torch.randint(-20, 20, (4, 5)), torch.randint(1, 6, (4, 5))
    assert torch.equal((a.to(DEV) // b.to(DEV)).cpu(), a // b)
    x = torch.randn(4, 5)
    y = x.to(DEV)
    torch.testing.assert_close((y // 0.3).cpu(), x // 0.3)
    torch.testing.assert_close(torch.std(y, dim=1).cpu(), torch.std(x, dim=1), **TOLERANCES["reduction"])
    assert torch.equal(torch.arange(13, device=DEV).cpu(), torch.arange(13))
    assert torch.equal(torch.arange(3, 40, 3, device=DEV).cpu(), torch.arange(3, 40, 3))
    torch.testing.assert_close(torch.arange(-1.0, 2.25, 0.25, device=DEV).cpu(), torch.arange(-1.0, 2.25, 0.25))
    with torch.device(DEV):
        z = y + torch.full((4, 5), 2.5) + torch.arange(5.0)
    torch.testing.assert_close(z.cpu(), x + 2.5 + torch.arange(5.0))
    unfolded = y.unfold(1, 3, 2)
    assert unfolded.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    assert torch.equal(unfolded.cpu(), x.unfold(1, 3, 2))
    quantize = torch.ops.quantized_decomposed.quantize_per_tensor.default
    graphs = eager.cache_stats()["graphs"]
    assert torch.equal(quantize(y, 0.05, 3, -128, 127, torch.int8).cpu(), quantize(x, 0.05, 3, -128, 127, torch.int8))
    assert eager.cache_stats()["graphs"] == graphs + 1
    _no_fallback_since(before)


def test_index_copy_into_a_cache_on_the_device():
    """index_copy_ (a Llama's KV-cache write) as the registry's index_put, on the device."""
    torch.manual_seed(0)
    eager.clear_cache()
    cache, rows = torch.randn(1, 6, 2, 4), torch.randn(1, 2, 2, 4)
    expected = cache.clone().index_copy_(1, torch.tensor([5, 2]), rows)
    got = cache.to(DEV)
    got.index_copy_(-3, torch.tensor([5, 2], device=DEV), rows.to(DEV))
    assert torch.equal(got.cpu(), expected)
    _no_fallback_since(0)


def test_threads_share_the_device():
    """Threads running ops at once (cached and first calls, the C++ kernels and the Python ones,
    the queue's batches) each get their own right results."""
    import threading

    torch.manual_seed(0)
    weights = [torch.randn(24, 24) for _ in range(4)]
    errors = []

    def work(index):
        try:
            w = weights[index]
            x = torch.randn(7 + index, 24)
            wd, xd = w.to(DEV), x.to(DEV)
            want = x
            got = xd
            for step in range(40):
                want = torch.relu(want @ w * 0.1 + x) if step % 2 else torch.tanh(want + step)
                got = torch.relu(got @ wd * 0.1 + xd) if step % 2 else torch.tanh(got + step)
            torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)
        except Exception as error:  # noqa: BLE001 (reported below, per thread)
            errors.append(f"thread {index}: {error!r}")

    with torch.no_grad():
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    assert not errors, errors
