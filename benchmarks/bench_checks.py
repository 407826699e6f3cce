#!/usr/bin/env python3
"""The cost of the GPU-side checks (glsl/fault.glslh: indices in range, integer
division by zero, int64 results within int32): each model's execute latency with
the checks and with VKDELEGATE_NO_GPU_CHECKS=1 (the unchecked kernels, for
measuring only), in alternating rounds so that drift hits both alike.

Here, lowered and run through ExecuTorch:
    python benchmarks/bench_checks.py                          # every model of examples/models
    python benchmarks/bench_checks.py --models mlp,llama --iters 50 --rounds 7
On the GPU machine, in a bundle of make_bundle.py, through the C++ runner:
    python3 bench_checks.py --runner .                         # the bundle's model cases

Prints one row per model: median ms per execute with and without the checks, their
ratio (goal <= 1.02), and how many dispatches run a checked kernel.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def local_rounds(factory, iters, rounds):
    """(ms with checks, ms without, checked dispatches) of one model of examples/models,
    lowered here and run through ExecuTorch (the settings apply at load: rt.overrides)."""
    import torch
    import vkdelegate.runtime as rt
    from executorch.exir import to_edge_transform_and_lower
    from executorch.exir.lowered_backend_module import LoweredBackendModule
    from executorch.runtime import Runtime
    from vkdelegate.partitioner import VulkanPartitioner

    module, inputs = factory()
    edge = to_edge_transform_and_lower(torch.export.export(module.eval(), tuple(inputs)),
                                       partitioner=[VulkanPartitioner()])
    blobs = [m.processed_bytes for _, m in edge.exported_program().graph_module.named_children()
             if isinstance(m, LoweredBackendModule)]
    checked = 0
    for blob in blobs:
        on, off = rt.Graph(blob).shaders(), rt.Graph(blob, overrides={"NO_GPU_CHECKS": True}).shaders()
        checked += sum(a != b for a, b in zip(on, off))
    pte = edge.to_executorch().buffer
    programs, methods = [], {}
    for key, checks_off in (("on", False), ("off", True)):
        with rt.overrides(NO_GPU_CHECKS=checks_off):
            programs.append(Runtime.get().load_program(pte))  # a Method needs its Program alive
            methods[key] = programs[-1].load_method("forward")
    times = {"on": [], "off": []}
    for method in methods.values():
        for _ in range(5):
            method.execute(list(inputs))
    for r in range(rounds):
        for key in (("on", "off") if r % 2 == 0 else ("off", "on")):
            method = methods[key]
            start = time.perf_counter()
            for _ in range(iters):
                method.execute(list(inputs))
            times[key].append((time.perf_counter() - start) * 1e3 / iters)
    return statistics.median(times["on"]), statistics.median(times["off"]), checked


def runner_rounds(bundle, pte, iters, rounds):
    """(ms with checks, ms without, None) of one .pte through the bundle's C++ runner."""
    def run(checks_off):
        env = dict(os.environ)
        env.pop("VKDELEGATE_NO_GPU_CHECKS", None)
        if checks_off:
            env["VKDELEGATE_NO_GPU_CHECKS"] = "1"
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "result.json")
            r = subprocess.run([os.path.join(bundle, "vkdelegate_runner"), "--model", os.path.join(bundle, pte),
                                "--iters", str(iters), "--warmup", "10", "--json", path],
                               capture_output=True, text=True, timeout=600, env=env)
            if r.returncode != 0:
                raise RuntimeError(f"runner failed on {pte}: {r.stderr.strip()[-2000:]}")
            with open(path) as f:
                return json.load(f)["median_ms"]
    times = {True: [], False: []}
    for r in range(rounds):
        for off in ((False, True) if r % 2 == 0 else (True, False)):
            times[off].append(run(off))
    return statistics.median(times[False]), statistics.median(times[True]), None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="comma-separated names (default: all of examples/models, or the bundle's)")
    ap.add_argument("--iters", type=int, default=20, help="executes per round")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per setting (the median is kept)")
    ap.add_argument("--runner", metavar="BUNDLE", help="time the bundle's .pte files through its C++ runner")
    args = ap.parse_args()

    print("| model | checks on, ms | off (NO_GPU_CHECKS), ms | on / off | checked dispatches |")
    print("|---|---|---|---|---|", flush=True)

    def row(name, on, off, checked):
        print(f"| {name} | {on:.3f} | {off:.3f} | {on / off:.3f} | {'-' if checked is None else checked} |",
              flush=True)

    if args.runner:
        with open(os.path.join(args.runner, "manifest.json")) as f:
            cases = [c for c in json.load(f)["cases"] if c["kind"] not in ("micro", "quant")]
        wanted = set(args.models.split(",")) if args.models else None
        for case in cases:
            if wanted is None or case["name"] in wanted:
                row(case["name"], *runner_rounds(args.runner, case["pte"], args.iters, args.rounds))
    else:
        from vkdelegate.examples.models import MODELS
        for name in args.models.split(",") if args.models else list(MODELS):
            row(name, *local_rounds(MODELS[name], args.iters, args.rounds))


if __name__ == "__main__":
    main()
