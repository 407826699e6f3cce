"""The C++ runner loads a .pte without Python and times it."""
import os
import re
import subprocess

import torch

import vkdelegate.runtime as rt
from helpers import delegate_blob, lower, to_pte
from vkdelegate.examples.models import MODELS


def run_runner(*args):
    return subprocess.run([rt.runner_path(), *args], capture_output=True, text=True, timeout=600)


def test_runner_times_a_model(tmp_path):
    m, x = MODELS["mlp"]()
    pte = tmp_path / "mlp.pte"
    pte.write_bytes(to_pte(m, x))
    r = run_runner("--model", str(pte), "--iters", "5", "--memory", "--profile")
    assert r.returncode == 0, r.stderr
    assert "device: " in r.stdout
    assert "latency over 5 iterations: min" in r.stdout and "median" in r.stdout
    assert "delegate 0 memory:" in r.stdout
    assert "aten.linear.default" in r.stdout  # profile table


def test_runner_partial_delegation_uses_cpu_kernels(tmp_path):
    class CumsumInside(torch.nn.Module):
        def forward(self, x):
            return torch.relu(torch.cumsum(x * 2.0, dim=1)) + 1.0

    pte = tmp_path / "partial.pte"
    pte.write_bytes(to_pte(CumsumInside(), (torch.randn(3, 5),)))
    r = run_runner("--model", str(pte), "--iters", "2")
    assert r.returncode == 0, r.stderr
    assert "(2 delegates)" in r.stdout


def test_runner_bad_arguments(tmp_path):
    assert run_runner().returncode == 2
    r = run_runner("--model", str(tmp_path / "missing.pte"))
    assert r.returncode == 1 and "cannot open" in r.stderr
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"not a program at all" * 10)
    r = run_runner("--model", str(bad))
    assert r.returncode == 1 and "not a valid program" in r.stderr


def test_runner_json_inputs_and_dumped_outputs(tmp_path):
    """--inputs feeds given tensors, --dump-outputs writes the results raw, --json reports for scripts."""
    import json

    m, x = MODELS["mlp"]()
    pte = tmp_path / "mlp.pte"
    pte.write_bytes(to_pte(m, x))
    for i, t in enumerate(x):
        (tmp_path / f"input_{i}.bin").write_bytes(t.contiguous().numpy().tobytes())
    report = tmp_path / "r.json"
    r = run_runner("--model", str(pte), "--iters", "2", "--profile", "--json", str(report),
                   "--inputs", str(tmp_path), "--dump-outputs", str(tmp_path))
    assert r.returncode == 0, r.stderr
    result = json.loads(report.read_text())
    assert result["delegates"] == 1 and result["iters"] == 2 and result["median_ms"] > 0
    assert any(d["op"].endswith("(aten.linear.default)") for d in result["dispatches"])
    assert result["gpu_us"] > 0
    ref = m(*x).detach()
    out = torch.frombuffer(bytearray((tmp_path / "output_0.bin").read_bytes()), dtype=ref.dtype).reshape(ref.shape)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    (tmp_path / "input_0.bin").write_bytes(b"short")
    r = run_runner("--model", str(pte), "--inputs", str(tmp_path))
    assert r.returncode == 1 and "cannot read" in r.stderr


def test_runner_pipeline_stats_lists_the_kernels_it_ran(tmp_path):
    """--pipeline-stats names every kernel the program's dispatches use, with the driver's
    statistics (registers, shared memory, ...) where it has VK_KHR_pipeline_executable_properties,
    and says so where it has not (lavapipe 22.3)."""
    import json


    m, x = MODELS["mlp"]()
    em = lower(m, x)
    blob = delegate_blob(em)
    expected = set(rt.Graph(blob).shaders())
    pte = tmp_path / "mlp.pte"
    pte.write_bytes(em.to_executorch().buffer)
    report = tmp_path / "r.json"
    r = run_runner("--model", str(pte), "--iters", "1", "--pipeline-stats", "--json", str(report))
    assert r.returncode == 0, r.stderr
    pipelines = json.loads(report.read_text())["pipelines"]
    assert {p["shader"] for p in pipelines} == expected
    missing = "the driver has no VK_KHR_pipeline_executable_properties" in r.stdout
    for p in pipelines:
        assert f"kernel {p['shader']} [{p['local_size']}]:" in r.stdout
        assert missing or p["statistics"], p
    r = run_runner("--model", str(pte), "--iters", "1", "--pipeline-ir", str(tmp_path / "ir"))
    assert r.returncode == 0, r.stderr


def test_runner_runs_raw_blobs_and_names_a_bad_one(tmp_path):
    """--blob: each delegate blob loaded and run in one process; a corrupted one is rejected
    with the loader's error, the others still run, and the exit status says one failed."""
    class AddRelu(torch.nn.Module):
        def forward(self, x, y):
            return torch.relu(x + y)

    blob = delegate_blob(lower(AddRelu(), (torch.randn(4, 8), torch.randn(4, 8))))
    (tmp_path / "a_good.blob").write_bytes(blob)
    (tmp_path / "b_cut.blob").write_bytes(blob[:-8])
    r = run_runner("--blob", str(tmp_path), "--iters", "2")
    lines = [line for line in r.stdout.splitlines() if line.startswith("blob ")]
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(lines) == 2 and ": ran (2 inputs, 1 outputs" in lines[0], r.stdout
    assert "b_cut.blob: rejected: delegate blob is" in lines[1], r.stdout


def test_runner_submit_probe_times_a_bare_submit(tmp_path):
    """--submit-probe: what every execute pays before any program (a submit and the wait for its
    end), empty and with the two barriers every recording has, the end seen by the fence, an event
    or a host-visible word; each with the submit call's own part, which no wait can exceed; no
    program with it."""
    r = run_runner("--submit-probe", "--iters", "20", "--warmup", "2")
    assert r.returncode == 0, r.stderr
    times = lambda line: [float(v) for v in re.findall(r"(?:min|median) ([\d.]+) us", line)]
    lines = [line for line in r.stdout.splitlines() if line.endswith("submits")]
    cases = [i for i, line in enumerate(lines) if not line.startswith(" ")]
    assert [lines[i].split(",")[0].split(":")[0] for i in cases] == [
        "empty command buffer", "two barriers (compute -> compute", "two barriers", "two barriers"], r.stdout
    assert ["fence polled" in lines[cases[0]], "event polled" in lines[cases[2]],
            "host-visible word" in lines[cases[3]]] == [True] * 3, r.stdout
    for i in cases:
        low, median = times(lines[i])
        assert 0 < low <= median, lines[i]
        assert lines[i + 1].startswith("  of which the submit call"), r.stdout
        submit_low, submit_median = times(lines[i + 1])
        assert 0 < submit_low <= low and submit_median <= median, (lines[i], lines[i + 1])
    assert run_runner("--submit-probe", "--model", str(tmp_path / "x.pte")).returncode == 2


def test_runner_flush_l2_times_kernels_without_the_flush(tmp_path):
    """--gpu-runs N reports the median of N profiled executes; --flush-l2 MIB profiles as many
    again, each after a fill of a MIB buffer that falls outside the timestamps (benchmarks/
    bench_gpu.py's cold-cache kernel times): the fills cost far more wall time than the
    flushed executes' GPU times hold. --json also reports the weights' bytes as stored."""
    import json
    import time

    m, x = MODELS["mlp"]()
    pte = tmp_path / "mlp.pte"
    pte.write_bytes(to_pte(m, x))
    report = tmp_path / "r.json"
    walls = {}
    for mib in (0, 256):
        start = time.perf_counter()
        r = run_runner("--model", str(pte), "--iters", "1", "--warmup", "1", "--profile", "--gpu-runs", "3",
                       "--json", str(report), *(["--flush-l2", str(mib)] if mib else []))
        walls[mib] = time.perf_counter() - start
        assert r.returncode == 0, r.stderr
    result = json.loads(report.read_text())
    assert len(result["gpu_us_runs"]) == 3 and len(result["gpu_us_flushed_runs"]) == 3
    assert result["gpu_us"] == sorted(result["gpu_us_runs"])[1] and result["flush_l2_mib"] == 256
    assert "each after a 256 MiB fill (cache flushed): median" in r.stdout
    fills_s = walls[256] - walls[0]  # three 256 MiB fills, and the flushed executes themselves
    assert 3 * max(result["gpu_us_flushed_runs"]) * 1e-6 < 0.5 * fills_s, (result, walls)
    weights = sum(p.numel() * p.element_size() for p in m.parameters())
    assert weights <= result["constant_bytes"] < weights + 4096
    for bad in (["--flush-l2", "64"], ["--profile", "--flush-l2", "0"]):
        r = run_runner("--model", str(pte), *bad)
        assert r.returncode == 2, (bad, r.stderr)
    assert "--flush-l2 times kernels: it needs --profile" in run_runner("--model", str(pte), "--flush-l2", "8").stderr


def test_runner_generate_needs_an_llm(tmp_path):
    """--generate on a program that is not forward(tokens, input_pos): a clear error (tests/test_llm.py
    runs the generation loop on a KV-cache Llama)."""
    m, x = MODELS["mlp"]()
    mlp = tmp_path / "mlp.pte"
    mlp.write_bytes(to_pte(m, x))
    r = run_runner("--model", str(mlp), "--prompt-tokens", "2", "--generate", "1")
    assert r.returncode == 1 and "--generate needs forward(tokens, input_pos)" in r.stderr
    assert run_runner("--model", str(mlp), "--generate", "3").returncode == 2  # no prompt
    r = run_runner("--model", str(mlp), "--prompt-ids", "1,x", "--generate", "3")
    assert r.returncode == 2 and "--prompt-ids takes token ids" in r.stderr
