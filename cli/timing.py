"""Timed executes with a progress bar, and the numbers run and bench print."""
import statistics
import sys
import time


def add_progress_argument(parser):
    parser.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                        help="a progress bar on stderr (auto: when stderr is a terminal and the run takes a while)")


def timed_executes(program, inputs, iters: int, progress: str, what: str):
    """Seconds of each of `iters` executes of the whole method (ExecuTorch's execute, as a user calls it)."""
    from tqdm import tqdm

    disable = progress == "never" or (progress == "auto" and not sys.stderr.isatty())
    seconds = []
    # auto: the bar appears only once a run has taken a second (delay), so short runs stay quiet.
    with tqdm(total=iters, desc=what, unit="run", disable=disable, file=sys.stderr,
              delay=0 if progress == "always" else 1.0, leave=False) as bar:
        for _ in range(iters):
            t0 = time.perf_counter()
            outputs = program.execute(inputs)
            seconds.append(time.perf_counter() - t0)
            bar.update(1)
    return seconds, outputs


def latency_summary(seconds) -> dict:
    ms = sorted(s * 1e3 for s in seconds)
    p95 = ms[min(len(ms) - 1, max(0, int(round(0.95 * len(ms))) - 1))]
    return {"runs": len(ms), "min_ms": ms[0], "median_ms": statistics.median(ms), "p95_ms": p95,
            "mean_ms": statistics.fmean(ms)}


def latency_line(summary: dict) -> str:
    return (f"latency over {summary['runs']} runs: min {summary['min_ms']:.3f} ms, median {summary['median_ms']:.3f} ms, "
            f"p95 {summary['p95_ms']:.3f} ms")
