"""Per-op latency of the eager vulkan device (vkdelegate.eager), cached, result synchronised.

    python3 benchmarks/eager_latency.py [--repeats 200]

Cases (issue 20's): add of two 64x64 tensors; mm 64x64x64; a chain of 100 small ops
(alternating add and mul on 64x64). Each is timed after a warm-up call (the one-op graphs
built and cached), per call, with the result copied to the host at the end of each timed run
(which waits for the ops), twice: ops queued into one command buffer (the default), and each
op submitted and waited for (queue_limit(0)). Also: the first call of each op (graph build and
load), and PyTorch CPU eager of the same calls, timed the same way.
"""
import argparse
import statistics
import time

import torch

import vkdelegate.eager as eager


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
    args = parser.parse_args()
    torch.manual_seed(0)
    a_cpu, b_cpu = torch.randn(64, 64), torch.randn(64, 64) * 0.01
    a, b = a_cpu.to("vulkan"), b_cpu.to("vulkan")
    cases = {
        "add 64x64": lambda x, y: torch.add(x, y),
        "mm 64^3": lambda x, y: torch.mm(x, y),
        "chain of 100 ops": _chain,
    }
    print(f"device: {eager.device_name()}; torch {torch.__version__}; median of {args.repeats}")
    print("| case | first call (ms) | vulkan, queued: per call (ms) | per op | vulkan, one submit per op: per call "
          "(ms) | per op | CPU eager per call (ms) |")
    print("|---|---|---|---|---|---|---|")
    with torch.no_grad():
        for name, fn in cases.items():
            eager.clear_cache()
            start = time.perf_counter()
            fn(a, b).cpu()
            first = time.perf_counter() - start
            repeats = max(args.repeats // 20, 5) if "chain" in name else args.repeats
            queued = _time(lambda: fn(a, b).cpu(), repeats)
            previous = eager.queue_limit(0)
            each = _time(lambda: fn(a, b).cpu(), repeats)
            eager.queue_limit(previous)
            cpu = _time(lambda: fn(a_cpu, b_cpu), repeats)
            ops = 100 if "chain" in name else 1
            print(f"| {name} | {first * 1e3:.2f} | {queued * 1e3:.3f} | {queued / ops * 1e3:.3f} | {each * 1e3:.3f} | "
                  f"{each / ops * 1e3:.3f} | {cpu * 1e3:.3f} |")
    print(f"cache: {eager.cache_stats()}")


if __name__ == "__main__":
    main()
