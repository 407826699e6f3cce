"""Per-op latency of the eager vulkan device (vkdelegate.eager), cached, result synchronised.

    python3 benchmarks/eager_latency.py [--repeats 200] [--json FILE] [--cases 'add 64x64' ...]

Cases (issue 20's): add of two 64x64 tensors; mm 64x64x64; a chain of 100 small ops
(alternating add and mul on 64x64); the examples' mlp and transformer_block models (inference).
Each is timed after a warm-up call (the one-op graphs built and cached), per call, with the
result copied to the host at the end of each timed run (which waits for the ops), twice: ops
queued into one command buffer (the default), and each op submitted and waited for
(queue_limit(0)). Also: the first call (graph builds and loads), and PyTorch CPU eager and,
where torch has CUDA, PyTorch CUDA eager of the same calls, timed the same way (the result's
.cpu() included); the models' max relative error against the CPU.
"""
import argparse
import copy
import json
import os
import statistics
import sys
import time

import torch

import vkdelegate.eager as eager

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from models import MODELS  # noqa: E402  (plain torch: the examples' model definitions)


def _time(fn, repeats: int) -> float:
    """Median seconds of fn() over `repeats` runs."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _chain(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    for i in range(50):
        x = x + y
        x = x * y
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--cases", nargs="+", help="only these cases (default: all), e.g. 'mm 64^3'")
    args = parser.parse_args()
    torch.manual_seed(0)
    cuda = torch.cuda.is_available()
    a_cpu, b_cpu = torch.randn(64, 64), torch.randn(64, 64) * 0.01
    cases = {
        "add 64x64": (lambda x, y: torch.add(x, y), (a_cpu, b_cpu), 1),
        "mm 64^3": (lambda x, y: torch.mm(x, y), (a_cpu, b_cpu), 1),
        "chain of 100 ops": (_chain, (a_cpu, b_cpu), 100),
    }
    for name in ("mlp", "transformer_block"):
        model, inputs = MODELS[name]()
        cases[name] = (model, tuple(inputs), 0)
    if args.cases:
        unknown = set(args.cases) - set(cases)
        if unknown:
            parser.error(f"unknown cases {sorted(unknown)}; the cases: {list(cases)}")
        cases = {name: case for name, case in cases.items() if name in args.cases}
    print(f"device: {eager.device_name()}; torch {torch.__version__}"
          + (f", CUDA: {torch.cuda.get_device_name()}" if cuda else "") + f"; median of {args.repeats}")
    print("| case | first call (ms) | vulkan, queued: per call (ms) | per op | vulkan, one submit per op: per call "
          "(ms) | per op | CPU eager per call (ms) | CUDA eager per call (ms) | vulkan queued / CUDA | max rel err |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    with torch.no_grad():
        for name, (fn, inputs_cpu, ops) in cases.items():
            on = {}
            for dev in ("vulkan",) + (("cuda",) if cuda else ()):
                model = copy.deepcopy(fn).to(dev) if isinstance(fn, torch.nn.Module) else fn  # .to() moves in place
                on[dev] = (model, [t.to(dev) for t in inputs_cpu])
            call = {dev: (lambda f=f, x=x: f(*x).cpu()) for dev, (f, x) in on.items()}
            eager.clear_cache()
            start = time.perf_counter()
            got = call["vulkan"]()
            first = time.perf_counter() - start
            repeats = args.repeats if ops == 1 else max(args.repeats // 20, 5)  # chains and models: fewer
            queued = _time(call["vulkan"], repeats)
            previous = eager.queue_limit(0)
            each = _time(call["vulkan"], repeats)
            eager.queue_limit(previous)
            want = fn(*inputs_cpu)
            cpu = _time(lambda: fn(*inputs_cpu), repeats)
            err = ((got - want).abs().max() / want.abs().max()).item()
            row = {"case": name, "first_ms": first * 1e3, "queued_ms": queued * 1e3, "each_ms": each * 1e3,
                   "cpu_ms": cpu * 1e3, "ops": ops, "max_rel_err": err}
            if cuda:
                call["cuda"]()
                row["cuda_ms"] = _time(call["cuda"], repeats) * 1e3
            rows.append(row)
            per = (lambda t: f"{t / ops:.3f}") if ops else (lambda t: "")
            print(f"| {name} | {row['first_ms']:.2f} | {row['queued_ms']:.3f} | {per(row['queued_ms'])} | "
                  f"{row['each_ms']:.3f} | {per(row['each_ms'])} | {row['cpu_ms']:.3f} | "
                  + (f"{row['cuda_ms']:.3f} | {row['queued_ms'] / row['cuda_ms']:.2f}x" if cuda else " | ")
                  + f" | {err:.1e} |", flush=True)
    # Where a queued op's host time goes: the chain again, split into the queue's submits and waits
    # (one per 64 ops and one at the end: the GPU's time for them, and the driver's submit) and the
    # rest (the dispatch: the C++ kernel's cache key and outputs, the graph's sizes, its dispatches
    # and copies recorded into the queue; and Python's call of each op).
    from vkdelegate.runtime import _vkdelegate

    a, b = a_cpu.to("vulkan"), b_cpu.to("vulkan")
    with torch.no_grad():
        _chain(a, b).cpu()
        rounds = 20
        submits, waited = _vkdelegate._eager_submits()
        start = time.perf_counter()
        for _ in range(rounds):
            _chain(a, b)
        eager.synchronize()
        total = time.perf_counter() - start
        submits_after, waited_after = _vkdelegate._eager_submits()
    ops = 100 * rounds
    flushes, flush_seconds = submits_after - submits, waited_after - waited
    breakdown = {"per_op_us": total / ops * 1e6, "dispatch_us": (total - flush_seconds) / ops * 1e6,
                 "flushes": flushes, "flush_us": flush_seconds / max(flushes, 1) * 1e6,
                 "flush_per_op_us": flush_seconds / ops * 1e6}
    # The floor under one synchronised op: a queued 4-byte device copy submitted and waited for (the
    # submit, the GPU's start and the fence), and .cpu() of a 64x64 result with nothing queued.
    one, other = torch.zeros(1, device="vulkan"), torch.ones(1, device="vulkan")

    def round_trip():
        one.copy_(other)
        eager.synchronize()

    result = a + b
    eager.synchronize()
    breakdown["round_trip_us"] = _time(round_trip, args.repeats) * 1e6
    breakdown["read_us"] = _time(result.cpu, args.repeats) * 1e6
    print(f"a queued copy submitted and waited for: {breakdown['round_trip_us']:.1f} us; .cpu() of a 64x64 result, "
          f"nothing queued: {breakdown['read_us']:.1f} us")
    print(f"queued chain, per op: {breakdown['per_op_us']:.1f} us on the host: dispatching and recording "
          f"{breakdown['dispatch_us']:.1f} us, the queue's submits and waits {breakdown['flush_per_op_us']:.1f} us "
          f"({flushes} of {breakdown['flush_us']:.0f} us each)")
    stats = eager.cache_stats()
    print(f"cache: {stats}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": eager.device_name(), "torch": torch.__version__, "breakdown": breakdown,
                       "cuda": torch.cuda.get_device_name() if cuda else None, "rows": rows,
                       "cache": {k: v for k, v in stats.items() if isinstance(v, (int, float, str, list))}}, f, indent=1)


if __name__ == "__main__":
    main()
