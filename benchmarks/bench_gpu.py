"""Times vkdelegate (through the C++ runner) and PyTorch CUDA on the same GPU, in
one run, and writes results.json and results.md into --out.

Runs inside a bundle made by make_bundle.py; needs torch with CUDA, no executorch.

Kernel rows (micro cases and quantized linears) compare GPU time only, on both sides:
- ours: the runner's Vulkan timestamp queries (--profile), the sum over the execute's
  dispatches with a barrier after each, from the end of the input copies to the end of the
  last dispatch; the median of --gpu-runs profiled executes.
- PyTorch: the call captured in a CUDA graph and timed with CUDA events while the GPU is
  already busy (a spin kernel queued first), so no host dispatch falls between the events.
  A CUDA graph rather than torch.profiler: its time is, like ours, elapsed GPU time of the
  call's kernels with the gaps between them, and it needs no CUPTI.
Each in two states:
- warm: ours, each profiled execute right after the previous one; PyTorch, 100 back-to-back
  calls in one graph (time / 100).
- L2 flushed: a 256 MiB buffer written before every timed call, outside the timing (ours:
  the runner's --flush-l2, a fill recorded after the input copies and before the first
  timestamp; PyTorch: zero_() before each replay of a one-call graph).
Ratios divide like by like (PyTorch time / our time, warm by warm, flushed by flushed).
Model rows are per-execute latencies: ours include copying the input in and the output
out, PyTorch's inputs already sit on the GPU (eager and CUDA-graph replay).
Every case also checks our outputs: micro and model rows against PyTorch CUDA on the same
inputs, quantized rows against torchao's eager output on the same dequantized weights (stored
in the bundle by make_bundle.py); the largest error relative to the reference is recorded.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cases import (BAR_MODELS, FLOOR, FLOOR_BAR_US, GEMV_BAR_CASE, GEMV_BAR_GBS, KERNEL_BARS, MICRO,  # noqa: E402
                   MODEL_BAR, QUANT, round_weights_bf16, work_rate)

RUNNER = os.path.join(HERE, "vkdelegate_runner")
FLUSH_MIB = 256      # written between timed calls: over 5x the H100's 50 MB L2
L2_BYTES = 50 * 10**6
GPU_RUNS = 21        # profiled executes (ours) and flushed calls (PyTorch) per state; medians
BUSY_CYCLES = 2_000_000  # torch.cuda._sleep before each timed replay (~1 ms): the host queues meanwhile
FLOOR_ITERS = 2000   # the floor row's executes: ~15 us each, so more of them than a model's


def run_runner(pte, iters, profile, extra=(), stats=True):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "result.json")
        args = [RUNNER, "--model", os.path.join(HERE, pte), "--iters", str(iters), "--warmup", "10", "--json", path]
        # Profiled runs also record each kernel's compiled statistics (registers, shared memory).
        args += (["--profile"] + (["--pipeline-stats"] if stats else [])) if profile else []
        r = subprocess.run(args + list(extra), capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"runner failed on {pte}: {r.stderr.strip()[-2000:]}")
        with open(path) as f:
            result = json.load(f)
    if profile:
        # The runner's own table, for people reading the results.
        result["profile"] = r.stdout[r.stdout.index("GPU time per dispatch"):]
    return result


def write_inputs(folder, inputs):
    for i, x in enumerate(inputs):
        with open(os.path.join(folder, f"input_{i}.bin"), "wb") as f:
            f.write(x.detach().cpu().contiguous().numpy().tobytes())


def read_outputs(folder, refs):
    """Our dumped outputs (output_<i>.bin) as tensors shaped like refs."""
    outs = []
    for i, ref in enumerate(refs):
        with open(os.path.join(folder, f"output_{i}.bin"), "rb") as f:
            data = f.read()
        # force_fp16 keeps float32 outputs where PyTorch's half model gives float16.
        dtype = torch.float32 if ref.dtype == torch.float16 and len(data) == 4 * ref.numel() else ref.dtype
        if len(data) != ref.numel() * torch.empty((), dtype=dtype).element_size():
            raise RuntimeError(f"output {i} has {len(data)} bytes; the reference {tuple(ref.shape)} {ref.dtype}")
        outs.append(torch.frombuffer(bytearray(data), dtype=dtype).reshape(ref.shape))
    return outs


def _read(path, dtype, shape):
    with open(path, "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=dtype).reshape(shape)


def read_references(bundle, reference):
    """The expected outputs make_bundle.write_reference stored (torchao's eager output)."""
    folder = os.path.join(bundle, reference["dir"])
    return [_read(os.path.join(folder, f"expected_{i}.bin"), getattr(torch, o["dtype"]), o["shape"])
            for i, o in enumerate(reference["outputs"])]


def read_inputs(bundle, reference, like):
    """The inputs the references were computed on, shaped and typed like `like`."""
    folder = os.path.join(bundle, reference["dir"])
    return [_read(os.path.join(folder, f"input_{i}.bin"), x.dtype, x.shape) for i, x in enumerate(like)]


def max_relative_error(ours, refs):
    """max over outputs of max |ours - ref| / max |ref|."""
    worst = 0.0
    for out, ref in zip(ours, refs):
        ref = ref.detach().cpu().double()
        scale = ref.abs().max().clamp_min(1e-30)
        worst = max(worst, ((out.detach().cpu().double() - ref).abs().max() / scale).item())
    return worst


def run_checked(pte, inputs, refs, iters, extra=(), stats=True):
    """Runs the .pte through the runner on `inputs` (CPU tensors), profiled; returns the runner's
    result with its outputs and their max_rel_err against `refs`."""
    refs = list(refs) if isinstance(refs, (list, tuple)) else [refs]
    with tempfile.TemporaryDirectory() as tmp:
        write_inputs(tmp, inputs)
        result = run_runner(pte, iters, profile=True, extra=["--inputs", tmp, "--dump-outputs", tmp, *extra],
                            stats=stats)
        result["outputs"] = read_outputs(tmp, refs)
    result["max_rel_err"] = max_relative_error(result["outputs"], refs)
    return result


def _capture(fn, calls):
    """A CUDA graph of `calls` back-to-back calls of fn (warmed up on a side stream first)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def _timed(graph, before, reps):
    """Median ms of graph.replay() between CUDA events, with before() queued ahead of each."""
    pairs = []
    for _ in range(reps):
        before()
        torch.cuda._sleep(BUSY_CYCLES)  # touches no memory; keeps the GPU busy while the replay is queued
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in pairs)


def torch_kernel_ms(fn, flush, reps=GPU_RUNS):
    """PyTorch's GPU time per call of fn: {"warm": 100 back-to-back calls in a graph / 100,
    "flushed": one call per replay, flush zeroed before each, "warm_single": one call per
    replay without the flush (a check that the 100-call figure holds per call)}."""
    many, one = _capture(fn, 100), _capture(fn, 1)
    return {"warm": _timed(many, lambda: None, max(5, reps // 2)) / 100,
            "flushed": _timed(one, flush.zero_, reps),
            "warm_single": _timed(one, lambda: None, reps)}


def has_weights(module):
    return any(t.is_floating_point() for t in list(module.parameters()) + list(module.buffers()))


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def wall_ms(fn, iters):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def cuda_graph_ms(module, inputs, iters):
    static = [x.clone() for x in inputs]
    graph = _capture(lambda: module(*static), 1)
    return wall_ms(graph.replay, iters)


def torch_model(case):
    """PyTorch's side of a model or floor row of the manifest: (module on CUDA, its CUDA inputs,
    the CPU inputs our runner gets), with the bundle's weights (rounded if make_bundle rounded
    ours) and, for fp16 rows, in half."""
    if case["kind"] == "floor":
        module, cpu_inputs = FLOOR[case["name"]]()
    else:
        module, cpu_inputs = MODELS()[case.get("model", case["name"])]()
    if case.get("weights") == "bf16_rounded":  # make_bundle --round-weights
        round_weights_bf16(module)
    module = module.cuda().eval()
    inputs = [x.cuda() for x in cpu_inputs]
    if case.get("fp16"):  # ours runs force_fp16: PyTorch runs the model in half
        module = module.half()
        inputs = [x.half() if x.is_floating_point() else x for x in inputs]
    return module, inputs, cpu_inputs


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def compile_child(case, iters):
    """torch.compile(mode="reduce-overhead") of one model row, in a process of its own (run_compile
    starts it): {"torch_compile": ms, "compile_s": s, ...} timed as cuda_graph_ms times the graph
    (wall_ms: call + synchronize, median of iters, inputs already on the GPU). Compile time is the
    first three calls: Inductor compiles on the first, CUDA-graph trees record on the second and
    replay from the third."""
    module, inputs, _ = torch_model(case)
    from torch._dynamo.utils import counters

    with torch.no_grad():
        ref = _as_list(module(*inputs))
        compiled = torch.compile(module, mode="reduce-overhead")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(3):
            out = compiled(*inputs)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        err = max_relative_error([o.detach().clone() for o in _as_list(out)], ref)
        ms = wall_ms(lambda: compiled(*inputs), iters)
    return {"torch_compile": ms, "compile_s": compile_s, "compile_max_rel_err": err,
            # Graph breaks split the model; cudagraph skips mean no CUDA graph (both slow it down).
            "compile_graph_breaks": sum(counters["graph_break"].values()),
            "compile_cudagraph_skips": counters["inductor"].get("cudagraph_skips", 0)}


def run_compile(name, iters, timeout):
    """compile_child of manifest case `name` in a fresh process (its own Inductor and Triton caches,
    so the compile time is a cold one and each model starts from torch._dynamo's initial state),
    killed with its compile workers after `timeout` seconds. A compile that fails or runs too long
    gives {"compile_error": why} instead."""
    cache = tempfile.mkdtemp(prefix="bench_compile_")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "inductor"),
               TRITON_CACHE_DIR=os.path.join(cache, "triton"))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--compile-case", name, "--iters", str(iters)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=HERE,
                            start_new_session=True)
    try:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the compile workers too
            proc.communicate()
            return {"compile_error": f"did not compile and run within {timeout:.0f} s",
                    "compile_wall_s": time.perf_counter() - t0}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    result = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode == 0 and result:
        return dict(json.loads(result[-1][len("RESULT "):]), compile_wall_s=time.perf_counter() - t0)
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    reason = next((ln for ln in reversed(lines) if "Error" in ln or "Exception" in ln),
                  lines[-1] if lines else f"exit status {proc.returncode}")
    return {"compile_error": reason.strip()[:300], "compile_log": stderr[-3000:],
            "compile_wall_s": time.perf_counter() - t0}


def finish_model_row(row):
    """The model row's ratios: ours / best of (CUDA graph, torch.compile) and ours / CUDA graph."""
    row["ratio_graph"] = row["ours"] / row["torch_graph"]
    best = min(row["torch_graph"], row.get("torch_compile", float("inf")))
    row["best"] = "torch.compile" if best < row["torch_graph"] else "CUDA graph"
    row["ratio"] = row["ours"] / best


def kernel_row(row, ours, torch_ms, amount, unit):
    """Fills a kernel row: both sides' rates in `unit` (amount: work per call, or a pair of
    (our bytes, PyTorch's bytes)) and the like-for-like ratios of times."""
    ours_amount, torch_amount = amount if isinstance(amount, tuple) else (amount, amount)
    rate_unit = "GB/s" if unit.startswith("GB/s") else unit
    row.update(unit=unit, ours_us=ours["gpu_us"], ours_flushed_us=ours["gpu_us_flushed"],
               ours_us_runs=ours["gpu_us_runs"], ours_flushed_us_runs=ours["gpu_us_flushed_runs"],
               torch_us=torch_ms["warm"] * 1e3, torch_flushed_us=torch_ms["flushed"] * 1e3,
               torch_single_us=torch_ms["warm_single"] * 1e3, load_ms=ours["load_ms"],
               max_rel_err=ours["max_rel_err"], profile=ours["profile"])
    for side, amount_ in (("ours", ours_amount), ("torch", torch_amount)):
        row[side] = work_rate(rate_unit, amount_, row[side + "_us"] / 1e6)
        row[side + "_flushed"] = work_rate(rate_unit, amount_, row[side + "_flushed_us"] / 1e6)
    row["ratio"] = row["torch_us"] / row["ours_us"]
    row["ratio_flushed"] = row["torch_flushed_us"] / row["ours_flushed_us"]


def main():
    start = time.perf_counter()
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="where results.json and results.md go")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--only", nargs="*", help="these cases of the manifest only (a smoke run)")
    ap.add_argument("--compile-timeout", type=float, default=300,
                    help="seconds for one model's torch.compile (compile, record and timing)")
    ap.add_argument("--time-budget", type=float, default=510,
                    help="seconds for the whole run: torch.compile runs last, on what is left of it (the "
                    "device tool stops a command at 600 s; run_gpu.sh's setup comes first)")
    ap.add_argument("--no-compile", action="store_true", help="leave the torch.compile column out")
    ap.add_argument("--compile-case", help=argparse.SUPPRESS)  # run_compile's child process
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with open(os.path.join(HERE, "manifest.json")) as f:
        manifest = json.load(f)
    if args.compile_case:
        case = next(c for c in manifest["cases"] if c["name"] == args.compile_case)
        print("RESULT " + json.dumps(compile_child(case, args.iters)), flush=True)
        return
    if not args.out:
        ap.error("--out is required")
    os.makedirs(args.out, exist_ok=True)
    flush = torch.empty(FLUSH_MIB << 20, dtype=torch.uint8, device="cuda")
    timing = ["--gpu-runs", str(GPU_RUNS), "--flush-l2", str(FLUSH_MIB)]
    meta = {"date": datetime.date.today().isoformat(), "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(), "command": manifest["command"] + (" --only " + " ".join(args.only) if args.only else ""),
            "made_with": manifest.get("made_with", "")}

    rows = []
    results_json = os.path.join(args.out, "results.json")

    def save():  # after every row: a run cut short keeps its rows
        with open(results_json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)

    for case in manifest["cases"]:
        name = case["name"]
        if args.only and name not in args.only:
            continue
        row = {"name": name, "kind": case["kind"]}
        row_start = time.perf_counter()
        try:
            if case["kind"] == "micro":
                factory, unit, work = MICRO[name]
                module, cpu_inputs = factory()
                if case.get("weights") == "bf16_rounded" and has_weights(module):  # make_bundle --round-weights
                    round_weights_bf16(module)
                    row["weights"] = case["weights"]
                module = module.cuda().eval()
                inputs = [x.cuda() for x in cpu_inputs]
                with torch.no_grad():
                    ref = module(*inputs)
                    torch_ms = torch_kernel_ms(lambda: module(*inputs), flush)
                row["working_set_bytes"] = nbytes(inputs) + nbytes([ref]) + nbytes(
                    list(module.parameters()) + list(module.buffers()))
                ours = run_checked(case["pte"], cpu_inputs, ref, 20, timing)
                kernel_row(row, ours, torch_ms, work, unit)
            elif case["kind"] == "quant":
                # Quantized linear: ours reads 4-bit weights and their scales, PyTorch CUDA runs
                # the float linear in fp16 (cuBLAS). Both GB/s columns count the same bytes, ours
                # as stored (our constants as the runner reports them, plus the activations in and
                # out), so their ratio is the ratio of times; PyTorch's fp16 bytes are kept beside.
                factory = QUANT[name][0]
                module, cpu_inputs = factory()
                module = module.cuda().half().eval()
                inputs = [x.cuda().half() for x in cpu_inputs]
                with torch.no_grad():
                    out = module(*inputs)
                    torch_ms = torch_kernel_ms(lambda: module(*inputs), flush)
                refs = read_references(HERE, case["reference"])
                ours = run_checked(case["pte"], read_inputs(HERE, case["reference"], cpu_inputs), refs, 20, timing)
                activations = 4 * (sum(x.numel() for x in cpu_inputs) + out.numel())  # ours: float32 in and out
                our_bytes = ours["constant_bytes"] + activations
                torch_bytes = nbytes(list(module.parameters())) + nbytes(inputs) + nbytes([out])
                row.update(our_bytes=our_bytes, torch_bytes=torch_bytes, weight_bytes=ours["constant_bytes"],
                           working_set_bytes=our_bytes)
                unit = (f"GB/s of our bytes as stored, both sides: {our_bytes / 1e6:.1f} MB of 4-bit weights, "
                        f"scales and activations (PyTorch's fp16 linear reads {torch_bytes / 1e6:.1f} MB)")
                kernel_row(row, ours, torch_ms, our_bytes, unit)
                row["weights_gbs_flushed"] = ours["constant_bytes"] / row["ours_flushed_us"] / 1e3
            else:  # a model, or the floor (a one-op program): whole-call latency
                module, inputs, cpu_inputs = torch_model(case)
                if case.get("weights"):
                    row["weights"] = case["weights"]
                iters = FLOOR_ITERS if case["kind"] == "floor" else args.iters
                with torch.no_grad():
                    eager = wall_ms(lambda: module(*inputs), iters)
                    graph = cuda_graph_ms(module, inputs, iters)
                    ref = module(*inputs)
                # Latency on PyTorch's inputs, then one profiled execute for the table.
                ours = run_checked(case["pte"], cpu_inputs, ref, iters, stats=False)
                row.update(unit="ms", ours=ours["median_ms"], torch_eager=eager, torch_graph=graph,
                           load_ms=ours["load_ms"], max_rel_err=ours["max_rel_err"], profile=ours["profile"])
                finish_model_row(row)
            row["device"] = ours["device"]
        except Exception as e:  # one failing case must not hide the others
            row["error"] = f"{type(e).__name__}: {e}"
        row["row_s"] = time.perf_counter() - row_start  # for make_bundle's run-time estimates
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "profile"}), flush=True)
        save()

    # torch.compile last, each model in a process of its own, on what is left of the time budget:
    # a slow or failing compile costs its own cell only.
    for row in rows:
        if row["kind"] not in ("model", "floor") or "error" in row or args.no_compile:
            continue
        left = args.time_budget - (time.perf_counter() - start)
        if left < 30:
            row["compile_error"] = f"not run: the run's --time-budget of {args.time_budget:.0f} s was spent"
        else:
            iters = FLOOR_ITERS if row["kind"] == "floor" else args.iters
            row.update(run_compile(row["name"], iters, min(args.compile_timeout, left - 10)))
            finish_model_row(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("profile", "compile_log")}), flush=True)
        save()
    meta["run_s"] = time.perf_counter() - start
    save()

    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(markdown(meta, rows))
    print(markdown(meta, rows))


def MODELS():
    from models import MODELS as models  # the bundle's copy of examples/models

    return models


def _err(r):
    return f"{r['max_rel_err']:.1e}" if "max_rel_err" in r else ""


def _label(r):
    notes = (["weights rounded to bf16 values"] if r.get("weights") else []) + (
        [f"measured {r['measured']}"] if r.get("measured") else [])  # combine_results.py: an earlier run's row
    return r["name"] + (f" ({', '.join(notes)})" if notes else "")


def _compile_cells(r):
    """The torch.compile and compile-seconds cells of a model row."""
    if "torch_compile" in r:
        return f"{r['torch_compile']:.3f}", f"{r['compile_s']:.0f}"
    if "compile_error" in r:
        return ("not run" if r["compile_error"].startswith("not run") else "failed"), ""
    return "", ""


def _fmt_ratio(x):
    return f"{x:.2f}x"


def bar_lines(rows):
    """Issue 19's bars as (bar, figure, target, status) tuples, from the table's rows."""
    by_name = {r["name"]: r for r in rows if "error" not in r}
    out = []
    expected = [n for m in BAR_MODELS for n in (m, m + "_fp16")]
    measured = [by_name[n] for n in expected if n in by_name]
    missing = [n for n in expected if n not in by_name]
    if measured:
        worst = max(measured, key=lambda r: r["ratio"])
        over = sorted((r for r in measured if r["ratio"] > MODEL_BAR), key=lambda r: -r["ratio"])
        no_compile = [r["name"] for r in measured if "torch_compile" not in r]
        figure = (f"{len(measured) - len(over)} of {len(measured)} rows at or under; worst {worst['name']} "
                  f"{_fmt_ratio(worst['ratio'])}")
        if over:
            figure += "; over: " + ", ".join(f"{r['name']} {_fmt_ratio(r['ratio'])}" for r in over)
        if no_compile:
            figure += "; without a torch.compile figure (CUDA graph only): " + ", ".join(no_compile)
        status = "missed" if over else ("not all measured" if missing or no_compile else "met")
    else:
        figure, status = "no model rows", "not measured"
    if missing:
        figure += "; not in this table: " + ", ".join(missing)
    out.append((f"every model row, fp32 and fp16 ({len(expected)} rows): ours / best of CUDA graph and "
                "torch.compile", figure, f"<= {MODEL_BAR:.1f}x", status))
    floor = next((r for r in rows if r["kind"] == "floor" and "error" not in r), None)
    if floor:
        us = floor["ours"] * 1e3
        figure = f"{floor['name']}: {us:.1f} us (PyTorch CUDA graph {floor['torch_graph'] * 1e3:.1f} us)"
        out.append(("per-execute floor: a one-op program, host copies included", figure,
                    f"<= {FLOOR_BAR_US:.0f} us", "met" if us <= FLOOR_BAR_US else "missed"))
    else:
        out.append(("per-execute floor: a one-op program, host copies included", "not in this table",
                    f"<= {FLOOR_BAR_US:.0f} us", "not measured"))
    for name, bar, library in KERNEL_BARS:
        r = by_name.get(name)
        if r is None:
            out.append((f"{name} vs {library}", "not in this table", f">= {bar}x", "not measured"))
            continue
        figure = f"{_fmt_ratio(r['ratio'])} warm ({_fmt_ratio(r['ratio_flushed'])} L2 flushed)"
        out.append((f"{name} vs {library}", figure, f">= {bar}x", "met" if r["ratio"] >= bar else "missed"))
    return out


def _runs_column(rows):
    return len({r.get("run") for r in rows}) > 1


def markdown(meta, rows):
    device = next((r["device"] for r in rows if "device" in r), "?")
    lines = [f"Measured {meta['date']} on {device} (PyTorch {meta['torch']} CUDA on {meta['gpu']}, same run).",
             f"Command: `{meta['command']}`"]
    if meta.get("made_with"):
        lines.append(f"Bundle: `{meta['made_with']}`")
    if meta.get("combined_with"):
        lines.append(f"Table: `{meta['combined_with']}`")
    runs = _runs_column(rows)
    if runs:  # combine_results.py of several runs: the run column says where each row came from
        lines.append("Runs (the table's run column): " + "; ".join(
            f"{r['run']}: `{r['command']}` ({r['date']})" for r in meta.get("runs", [])) + ".")
    run_head, run_rule = (" run |", "---|") if runs else ("", "")

    def run_cell(r):
        return f" {r.get('run', '')} |" if runs else ""

    kernels = [r for r in rows if r["kind"] in ("micro", "quant")]
    models = [r for r in rows if r["kind"] not in ("micro", "quant")]
    lines += ["", "Bars (issue 19; kernel ratios warm, L2 flushed beside):", "",
              "| bar | figure | target | status |", "|---|---|---|---|"]
    lines += [f"| {bar} | {figure} | {target} | {status} |" for bar, figure, target, status in bar_lines(rows)]
    if kernels:
        lines += ["", "Kernels: GPU time only on both sides; rate in the row's unit (ratio: PyTorch time / ours, "
                  "> 1 is faster than PyTorch).", "",
                  "| case | working set MB | ours warm | PyTorch warm | ratio warm | ours L2 flushed "
                  "| PyTorch L2 flushed | ratio flushed | max rel err | load ms |" + run_head,
                  "|---|---|---|---|---|---|---|---|---|---|" + run_rule]
        for r in kernels:
            if "error" in r:
                lines.append(f"| {r['name']} | error: {r['error'][:100]} | | | | | | | | |" + run_cell(r))
                continue
            unit = "GB/s of our bytes" if r["kind"] == "quant" else r["unit"]
            lines.append(f"| {_label(r)} ({unit}) | {r['working_set_bytes'] / 1e6:.1f} | {r['ours']:.1f} | "
                         f"{r['torch']:.1f} | {r['ratio']:.2f}x | {r['ours_flushed']:.1f} | {r['torch_flushed']:.1f} | "
                         f"{r['ratio_flushed']:.2f}x | {_err(r)} | {r['load_ms']:.0f} |" + run_cell(r))
    notes = []
    if models:
        lines += ["", "Models: per-execute latency in ms (ours / best: ours over the faster of CUDA graph and "
                  "torch.compile, < 1 is faster than both; the floor row is a one-op program).", "",
                  "| model | ours | PyTorch eager | CUDA graph | torch.compile | compile s | ours / best | "
                  "ours / graph | max rel err | load ms |" + run_head,
                  "|---|---|---|---|---|---|---|---|---|---|" + run_rule]
        for r in models:
            if "error" in r:
                lines.append(f"| {r['name']} | error: {r['error'][:100]} | | | | | | | | |" + run_cell(r))
                continue
            compiled, compile_s = _compile_cells(r)
            if "compile_error" in r:
                notes.append(f"torch.compile of {r['name']}: {r['compile_error']}")
            elif r.get("compile_graph_breaks") or r.get("compile_cudagraph_skips"):
                notes.append(f"torch.compile of {r['name']}: {r['compile_graph_breaks']} graph breaks, "
                             f"{r['compile_cudagraph_skips']} CUDA-graph skips")
            ratio_graph = r.get("ratio_graph", r["ours"] / r["torch_graph"])  # rows of earlier tables lack it
            lines.append(f"| {_label(r)} | {r['ours']:.3f} | {r['torch_eager']:.3f} | {r['torch_graph']:.3f} | "
                         f"{compiled} | {compile_s} | {r['ratio']:.2f}x | {ratio_graph:.2f}x | {_err(r)} | "
                         f"{r['load_ms']:.0f} |" + run_cell(r))
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    bar = next((r for r in kernels if r["name"] == GEMV_BAR_CASE and "error" not in r), None)
    lines.append("")
    if bar:
        lines.append(f"4-bit GEMV bar (issue 16): {GEMV_BAR_CASE}, L2 flushed: {bar['weights_gbs_flushed']:.0f} GB/s "
                     f"of weights ({bar['weight_bytes'] / 1e6:.1f} MB as stored: 4-bit values and their scales; "
                     f"{bar['ours_flushed_us']:.1f} us); bar >= {GEMV_BAR_GBS} GB/s: "
                     f"{'met' if bar['weights_gbs_flushed'] >= GEMV_BAR_GBS else 'missed'}.")
        lines.append("")
    lines.append(
        "Kernel rows: ours is the sum of the execute's dispatch times from Vulkan timestamp queries (a barrier after "
        "each dispatch; input copies outside), median of 21 profiled executes; PyTorch's call runs from a CUDA graph "
        "timed with CUDA events while the GPU is already busy (no host dispatch in the time): warm, 100 back-to-back "
        "calls in one graph / 100; L2 flushed, a 256 MiB buffer written before each call (outside the timing; ours: a "
        "fill recorded before the first timestamp), median of 21. results.json also holds PyTorch warm with one call per "
        "replay (torch_single_us), the like of our one execute per timing: on the small kernels it is a few us slower "
        "than the 100-call figure. Rows whose working set is over the 50 MB L2 gain "
        "little from warmth. Quantized rows: ours 4-bit weights and scales as stored on the GPU, PyTorch the same "
        "linear in fp16 (cuBLAS); both GB/s columns count our bytes as stored (4-bit weights, scales, activations), "
        "so their ratio is the ratio of times (results.json keeps PyTorch's fp16 bytes, torch_bytes); max rel err "
        "against torchao's eager output on the same dequantized weights (float32). Other rows: max |ours - PyTorch "
        "CUDA| / max |PyTorch CUDA| on the same inputs (TF32 off; fp16 rows against PyTorch's half model). Model rows: "
        "median of 200 calls (the floor row: 2000), ours incl. host copies in and out; PyTorch's inputs already on the "
        "GPU, each call followed by a synchronize; torch.compile is mode=\"reduce-overhead\" (Inductor and CUDA-graph "
        "trees, which copy the inputs into the graph's own), compiled in a fresh process with empty caches: compile s "
        "is its first three calls (compile, record, first replay).")
    if any(r.get("measured") for r in rows):
        lines.append("")
        lines.append("Rows marked 'measured DATE' come from an earlier run (combine_results.py --carry-models): model "
                     "rows whose .pte did not fit in this run's bundle; the model-row method has not changed.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
