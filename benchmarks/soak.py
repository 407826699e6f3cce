"""Memory soak through the C++ runner: host RSS and device memory after a warm-up, after
10,000 executes, and over 200 load/execute/unload cycles, for each model of the bundle.

Device memory is the driver's usage of each heap where it has VK_EXT_memory_budget (the
whole process: driver allocations too), and our allocator's blocks either way.

    python3 soak.py --out DIR [--executes 10000] [--cycles 200] [--models mlp ...]

In the GPU bundle: `bash benchmarks/bundle/run_gpu.sh $OUT soak` (run_gpu.sh sets up Vulkan
first). Runs anywhere the runner runs: from the repository, `python3 benchmarks/soak.py
--out /tmp/soak --pte model.pte` takes the repository's runner. Writes DIR/soak.json and
DIR/soak.md; exits 1 if a model grows by more than the bounds of tests/test_soak.py (1 KB per
execute, 50 KB per cycle), so that a run says plainly whether memory stayed flat."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXECUTE_BOUND_KB, CYCLE_BOUND_KB = 1.0, 50.0


def runner_path():
    bundled = os.path.join(HERE, "vkdelegate_runner")
    if os.path.exists(bundled):
        return bundled
    return os.path.join(os.path.dirname(HERE), "runtime", "vkdelegate_runner")


def soak(pte, executes, cycles):
    """The runner's memory snapshots (after warm-up, after the executes, after 2 warm-up
    cycles, after `cycles` more) and its device line."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "result.json")
        args = [runner_path(), "--model", pte, "--warmup", "100", "--iters", str(executes),
                "--soak", str(cycles), "--json", path]
        r = subprocess.run(args, capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            raise RuntimeError(f"runner failed on {pte}: {r.stderr.strip()[-2000:]}")
        with open(path) as f:
            return json.load(f)


def device_mib(snapshot):
    """Driver usage of the device-local heaps (VK_EXT_memory_budget), else our blocks, in MiB."""
    usage = sum(h["usage"] for h in snapshot["heaps"] if h["device_local"] and h["budget"] > 0)
    if usage:
        return usage / 2**20, "driver usage"
    return snapshot["block_bytes"] / 2**20, "our blocks"


def row(name, result, executes, cycles):
    warm, ran, cycled0, cycled = result["memory"]
    per_execute = (ran["rss_kb"] - warm["rss_kb"]) / executes
    per_cycle = (cycled["rss_kb"] - cycled0["rss_kb"]) / max(cycles, 1)
    dev = [device_mib(s) for s in (warm, ran, cycled0, cycled)]
    return {
        "model": name, "device": result["device"], "median_ms": result["median_ms"],
        "rss_mb": [s["rss_kb"] / 1024 for s in (warm, ran, cycled0, cycled)],
        "rss_kb_per_execute": per_execute, "rss_kb_per_cycle": per_cycle,
        "device_mib": [d for d, _ in dev], "device_source": dev[0][1],
        "flat": per_execute <= EXECUTE_BOUND_KB and per_cycle <= CYCLE_BOUND_KB
                and dev[1][0] <= dev[0][0] and dev[3][0] <= dev[2][0],
    }


def markdown(rows, executes, cycles):
    lines = [f"Device: {rows[0]['device']}" if rows else "", "",
             f"| model | ms/execute | host RSS MB: warm, +{executes} executes | KB/execute | "
             f"host RSS MB: 2 cycles, +{cycles} cycles | KB/cycle | device MiB (warm, executes, cycles) | flat |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rss, dev = r["rss_mb"], r["device_mib"]
        lines.append(
            f"| {r['model']} | {r['median_ms']:.3f} | {rss[0]:.1f} -> {rss[1]:.1f} | {r['rss_kb_per_execute']:.2f} | "
            f"{rss[2]:.1f} -> {rss[3]:.1f} | {r['rss_kb_per_cycle']:.1f} | "
            f"{dev[0]:.1f}, {dev[1]:.1f}, {dev[3]:.1f} ({r['device_source']}) | {'yes' if r['flat'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--executes", type=int, default=10000)
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--models", nargs="*", help="bundle cases (default: every model of the manifest)")
    ap.add_argument("--pte", nargs="*", default=[], help=".pte files outside a bundle")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cases = [(os.path.splitext(os.path.basename(p))[0], p) for p in args.pte]
    manifest = os.path.join(HERE, "manifest.json")
    if not cases and os.path.exists(manifest):
        with open(manifest) as f:
            entries = json.load(f)["cases"]
        cases = [(c["name"], os.path.join(HERE, c["pte"])) for c in entries
                 if (c["name"] in args.models if args.models else c["kind"] == "model")]
    if not cases:
        sys.exit("no models: run in a bundle (benchmarks/make_bundle.py) or give --pte")
    rows = []
    for name, pte in cases:
        result = soak(pte, args.executes, args.cycles)
        rows.append(row(name, result, args.executes, args.cycles))
        print(json.dumps(rows[-1]), flush=True)
    table = markdown(rows, args.executes, args.cycles)
    print(table)
    with open(os.path.join(args.out, "soak.json"), "w") as f:
        json.dump({"executes": args.executes, "cycles": args.cycles, "rows": rows}, f, indent=1)
    with open(os.path.join(args.out, "soak.md"), "w") as f:
        f.write(table)
    sys.exit(0 if all(r["flat"] for r in rows) else 1)


if __name__ == "__main__":
    main()
