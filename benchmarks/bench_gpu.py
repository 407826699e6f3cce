"""Times vkdelegate (through the C++ runner) and PyTorch CUDA on the same GPU, in
one run, and writes results.json and results.md into --out.

Runs inside a bundle made by make_bundle.py; needs torch with CUDA, no executorch.
Kernel figures (GB/s, TFLOP/s) compare GPU time only: ours from the runner's
timestamp queries, PyTorch's from CUDA events. Model figures are per-execute
latencies: ours include copying the input in and the output out, PyTorch's
inputs already sit on the GPU. The runner reports through --json; it also runs
each case once on PyTorch's own inputs (--inputs, --dump-outputs), and the
largest error of its outputs relative to PyTorch CUDA's is recorded per case.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cases import MICRO, QUANT, round_weights_bf16, work_rate  # noqa: E402
from models import MODELS  # noqa: E402


def run_runner(pte, iters, profile, extra=()):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "result.json")
        args = [os.path.join(HERE, "vkdelegate_runner"), "--model", os.path.join(HERE, pte),
                "--iters", str(iters), "--warmup", "10", "--json", path]
        # Profiled runs also record each kernel's compiled statistics (registers, shared memory).
        args += ["--profile", "--pipeline-stats"] if profile else []
        r = subprocess.run(args + list(extra), capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"runner failed on {pte}: {r.stderr.strip()[-2000:]}")
        with open(path) as f:
            result = json.load(f)
    if profile:
        # The runner's own table, for people reading the results.
        result["profile"] = r.stdout[r.stdout.index("GPU time per dispatch"):]
    return result


def max_relative_error(pte, inputs, reference):
    """Runs the .pte once on `inputs` (CPU tensors) and returns max |ours - ref| / max |ref|
    over the outputs, ref being PyTorch CUDA's output on the same inputs."""
    refs = reference if isinstance(reference, (list, tuple)) else [reference]
    with tempfile.TemporaryDirectory() as tmp:
        for i, x in enumerate(inputs):
            with open(os.path.join(tmp, f"input_{i}.bin"), "wb") as f:
                f.write(x.detach().cpu().contiguous().numpy().tobytes())
        run_runner(pte, 1, profile=False, extra=["--inputs", tmp, "--dump-outputs", tmp])
        worst = 0.0
        for i, ref in enumerate(refs):
            ref = ref.detach().cpu()
            with open(os.path.join(tmp, f"output_{i}.bin"), "rb") as f:
                data = f.read()
            # force_fp16 keeps float32 outputs where PyTorch's half model gives float16.
            dtype = torch.float32 if ref.dtype == torch.float16 and len(data) == 4 * ref.numel() else ref.dtype
            ours = torch.frombuffer(bytearray(data), dtype=dtype).reshape(ref.shape)
            scale = ref.double().abs().max().clamp_min(1e-30)
            worst = max(worst, ((ours.double() - ref.double()).abs().max() / scale).item())
    return worst


def cuda_event_ms(fn, iters):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def wall_ms(fn, iters):
    import time

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
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            module(*static)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        module(*static)
    return wall_ms(graph.replay, iters)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with open(os.path.join(HERE, "manifest.json")) as f:
        manifest = json.load(f)

    rows = []
    for case in manifest["cases"]:
        name = case["name"]
        row = {"name": name, "kind": case["kind"]}
        try:
            if case["kind"] == "micro":
                factory, unit, work = MICRO[name]
                module, cpu_inputs = factory()
                module = module.cuda().eval()
                inputs = [x.cuda() for x in cpu_inputs]
                with torch.no_grad():
                    torch_ms = cuda_event_ms(lambda: module(*inputs), 50)
                    row["max_rel_err"] = max_relative_error(case["pte"], cpu_inputs, module(*inputs))
                ours = run_runner(case["pte"], 20, profile=True)
                ours_ms = ours["gpu_us"] / 1e3
                row.update(unit=unit, ours=work_rate(unit, work, ours_ms / 1e3),
                           torch=work_rate(unit, work, torch_ms / 1e3), ours_gpu_ms=ours_ms,
                           torch_ms=torch_ms, load_ms=ours["load_ms"], profile=ours["profile"])
                row["ratio"] = row["ours"] / row["torch"]
            elif case["kind"] == "quant":
                # Quantized linear: GB/s of weights read; PyTorch runs the float linear in fp16.
                factory, _, _, _, our_bytes, torch_bytes = QUANT[name]
                module, inputs = factory()
                module = module.cuda().half().eval()
                inputs = [x.cuda().half() for x in inputs]
                with torch.no_grad():
                    torch_ms = cuda_event_ms(lambda: module(*inputs), 50)
                ours = run_runner(case["pte"], 20, profile=True)
                ours_ms = ours["gpu_us"] / 1e3
                row.update(unit="GB/s of weights, PyTorch fp16", ours=our_bytes / ours_ms / 1e6,
                           torch=torch_bytes / torch_ms / 1e6, ours_gpu_ms=ours_ms, torch_ms=torch_ms,
                           load_ms=ours["load_ms"], profile=ours["profile"], ratio=torch_ms / ours_ms)
            else:
                module, cpu_inputs = MODELS[case.get("model", name)]()
                if case.get("weights") == "bf16_rounded":  # make_bundle --round-weights
                    round_weights_bf16(module)
                    row["weights"] = case["weights"]
                module = module.cuda().eval()
                inputs = [x.cuda() for x in cpu_inputs]
                if case.get("fp16"):  # ours runs force_fp16: PyTorch runs the model in half
                    module = module.half()
                    inputs = [x.half() if x.is_floating_point() else x for x in inputs]
                with torch.no_grad():
                    eager = wall_ms(lambda: module(*inputs), args.iters)
                    graph = cuda_graph_ms(module, inputs, args.iters)
                    row["max_rel_err"] = max_relative_error(case["pte"], cpu_inputs, module(*inputs))
                ours = run_runner(case["pte"], args.iters, profile=False)
                row.update(unit="ms", ours=ours["median_ms"], torch_eager=eager, torch_graph=graph,
                           load_ms=ours["load_ms"], ratio=ours["median_ms"] / graph)
                row["profile"] = run_runner(case["pte"], 5, profile=True)["profile"]
            row["device"] = ours["device"]
        except Exception as e:  # one failing case must not hide the others
            row["error"] = str(e)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "profile"}), flush=True)

    meta = {"date": datetime.date.today().isoformat(), "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(), "command": manifest["command"],
            "made_with": manifest.get("made_with", "")}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(markdown(meta, rows))
    print(markdown(meta, rows))


def markdown(meta, rows):
    device = next((r["device"] for r in rows if "device" in r), "?")
    lines = [f"Measured {meta['date']} on {device} (PyTorch {meta['torch']} CUDA on {meta['gpu']}, same run).",
             f"Command: `{meta['command']}`"]
    if meta.get("made_with"):
        lines.append(f"Bundles: `{meta['made_with']}`")
    lines += ["",
             "| case | vkdelegate | PyTorch CUDA | ratio | load ms | max rel err |", "|---|---|---|---|---|---|"]
    for r in rows:
        err = f"{r['max_rel_err']:.1e}" if "max_rel_err" in r else ""
        if "error" in r:
            lines.append(f"| {r['name']} | error: {r['error'][:80]} | | | | |")
        elif r["kind"] in ("micro", "quant"):
            lines.append(f"| {r['name']} ({r['unit']}) | {r['ours']:.1f} | {r['torch']:.1f} | "
                         f"{r['ratio']:.2f}x | {r['load_ms']:.0f} | {err} |")
        else:
            label = r["name"] + (" (weights rounded to bf16 values)" if r.get("weights") else "")
            lines.append(f"| {label} latency (ms) | {r['ours']:.3f} | eager {r['torch_eager']:.3f}, "
                         f"CUDA graph {r['torch_graph']:.3f} | {r['ratio']:.2f}x graph time | {r['load_ms']:.0f} | {err} |")
    lines.append("")
    lines.append("Kernel rows compare GPU time (our timestamp queries vs CUDA events; ratio > 1 is faster "
                 "than PyTorch; quantized linears: ratio of GPU times). Model rows: per-execute latency incl. host copies vs PyTorch with inputs on "
                 "the GPU (ratio < 1 is faster than the CUDA graph). Max rel err: max |ours - PyTorch CUDA| / max |PyTorch CUDA| "
                 "over the outputs, on the same inputs (TF32 off; fp16 rows against PyTorch's half model).")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
