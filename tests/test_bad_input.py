"""Bad blobs and bad inputs give clear errors, never a crash."""
import random
import struct

import numpy as np
import pytest
import torch

import vkdelegate.runtime as rt
from executorch.runtime import Runtime
from helpers import delegate_blob, load_method, lower

from vkdelegate.serialization.blob import HEADER_SIZE as HEADER


@pytest.fixture(scope="module")
def mlp_blob_and_pte():
    m = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3)).eval()
    em = lower(m, (torch.randn(2, 6),))
    blob = delegate_blob(em)
    return m, blob, em.to_executorch().buffer


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


def test_corrupted_bytes_never_crash(mlp_blob_and_pte):
    """Random byte flips in header and graph: loads and runs, or raises; never crashes."""
    _, blob, _ = mlp_blob_and_pte
    fb_end = struct.unpack_from("<QQ", blob, 16)
    end = fb_end[0] + fb_end[1]
    rng = random.Random(0)
    outcomes = {"error": 0, "ran": 0}
    for _ in range(300):
        b = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(0, end)] = rng.randrange(256)
        try:
            g = rt.Graph(bytes(b))
            g.run([np.ones((2, 6), np.float32)])
            outcomes["ran"] += 1
        except (ValueError, RuntimeError) as e:
            assert str(e), "errors must say what is wrong"
            outcomes["error"] += 1
    assert outcomes["error"] > 0


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
    (out,) = g.run([np.ones((2, 6), np.float32)])  # still usable afterwards
    assert out.shape == (2, 3)


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
    """int64 tensors live as int32 on the GPU: a value that does not fit is refused."""
    class AddInts(torch.nn.Module):
        def forward(self, x, y):
            return x + y

    x = torch.tensor([[1, 2, 3]], dtype=torch.int64)
    em = lower(AddInts(), (x, x.clone()))
    g = rt.Graph(delegate_blob(em))
    (out,) = g.run([np.array([[1, 2, 3]]), np.array([[4, 5, -6]])])
    assert out.dtype == np.int64 and out.tolist() == [[5, 7, -3]]
    with pytest.raises(ValueError, match="does not fit"):
        g.run([np.array([[2**40, 0, 0]]), np.array([[0, 0, 0]])])
