"""Time a .pte: latency of the whole call through ExecuTorch's runtime, GPU time per op, a chart.

    vkdelegate bench model.pte --iters 100
    vkdelegate bench model.pte --chart ops.png        (or ops.html: one self-contained file)

Latency is wall time of ExecuTorch's execute (inputs copied in, the GPU's work, outputs copied
out), as a user calls it. GPU time per op comes from timestamps around every dispatch in a few
separate profiled runs (a barrier after each dispatch: their sum is above the unprofiled run's GPU time).
"""
import collections
import json
import os
import statistics


def add_arguments(parser):
    from vkdelegate.cli.timing import add_progress_argument

    parser.add_argument("pte", help="a .pte file")
    parser.add_argument("--inputs", nargs="+", default=["random"], metavar="SPEC",
                        help="'random' (default), a file.pt, or shapes such as 8x64")
    parser.add_argument("--iters", type=int, default=50, help="timed executes (default 50)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed executes first (default 3)")
    parser.add_argument("--profile-runs", type=int, default=3,
                        help="profiled executes for the GPU time per op; each dispatch's median (default 3)")
    parser.add_argument("--method", default="forward")
    parser.add_argument("--chart", metavar="OUT.png|OUT.html", action="append", default=[],
                        help="draw GPU time per op as a bar chart (may be given more than once)")
    parser.add_argument("--json", metavar="OUT.json", help="write the numbers as JSON")
    add_progress_argument(parser)


def op_of(node: str) -> str:
    """The runtime names a dispatch 'op #N (target)' after its node: the target."""
    if node.startswith("op #") and node.endswith(")") and " (" in node:
        return node[node.index(" (") + 2:-1]
    return node


def gpu_time_per_op(program, inputs, runs: int):
    """({op: (us, dispatches)}, [[(op, shape, us)] per delegate]) from `runs` profiled executes
    of the delegates this process loaded (the median of each dispatch)."""
    import vkdelegate.runtime as rt

    rt.set_loaded_profiling(True)
    try:
        samples = []
        for _ in range(runs):
            program.execute(inputs)
            timings = rt.loaded_timings()
            samples.append([timings[i] for i in program.graphs])
    finally:
        rt.set_loaded_profiling(False)
    per_dispatch = []
    for d, first in enumerate(samples[0]):
        rows = []
        for k, (op, shape, _) in enumerate(first):
            rows.append((op, shape, statistics.median(run[d][k][2] for run in samples)))
        per_dispatch.append(rows)
    per_op = collections.defaultdict(lambda: [0.0, 0])
    for rows in per_dispatch:
        for node, _, us in rows:
            per_op[op_of(node)][0] += us
            per_op[op_of(node)][1] += 1
    return {op: (us, n) for op, (us, n) in per_op.items()}, per_dispatch


def run(args) -> int:
    import vkdelegate.runtime as rt
    from vkdelegate.cli.chart import short, write_chart
    from vkdelegate.cli.common import CliError, LoadedProgram, describe, parse_input_specs
    from vkdelegate.cli.timing import latency_line, latency_summary, timed_executes

    if args.iters < 1 or args.warmup < 0 or args.profile_runs < 1:
        raise CliError("--iters and --profile-runs must be at least 1, --warmup at least 0")
    for chart in args.chart:
        if os.path.splitext(chart)[1].lower() not in (".png", ".html", ".htm"):
            raise CliError(f"--chart {chart}: the file must end in .png or .html")
        if not os.path.isdir(os.path.dirname(os.path.abspath(chart))):
            raise CliError(f"--chart {chart}: no such directory")
    given = parse_input_specs(args.inputs)
    program = LoadedProgram(args.pte, args.method)
    inputs = program.inputs(given)
    device = rt.device_info() if program.blobs else None
    print(f"{args.pte} on {device['name'] if device else 'the CPU (no vkdelegate delegate)'}; inputs "
          f"{', '.join(describe(t) for t in inputs)}")
    if args.warmup:
        timed_executes(program, inputs, args.warmup, args.progress, "warm-up")
    seconds, _ = timed_executes(program, inputs, args.iters, args.progress, "bench")
    latency = latency_summary(seconds)
    print(latency_line(latency))

    per_op, per_dispatch = {}, []
    if device is not None and not device["timestamps"]:
        print(f"no GPU time per op: {device['name']} has no compute-queue timestamps")
    elif device is not None:
        per_op, per_dispatch = gpu_time_per_op(program, inputs, args.profile_runs)
        total = sum(us for us, _ in per_op.values())
        print(f"GPU time per op (median of {args.profile_runs} profiled runs; total {total:.1f} us over "
              f"{sum(n for _, n in per_op.values())} dispatches):")
        width = max(len(op) for op in per_op) if per_op else 0
        for op, (us, n) in sorted(per_op.items(), key=lambda kv: -kv[1][0]):
            print(f"  {op:{width}s}  {us:10.1f} us  {100 * us / (total or 1):5.1f}%  {n:4d} dispatch(es)")
        slowest = sorted(((us, d, node, shape) for d, rows in enumerate(per_dispatch) for node, shape, us in rows),
                         reverse=True)[:5]
        print("slowest dispatches:")
        for us, d, node, shape in slowest:
            print(f"  {us:10.1f} us  delegate {d} {node} -> {shape}")
    if args.chart and not per_op:
        raise CliError("--chart: no GPU time per op to draw (see above)")
    name = os.path.basename(args.pte)
    for chart in args.chart:
        write_chart(chart, per_op, f"{name}: GPU time per op on {device['name']}",
                    f"GPU time {sum(us for us, _ in per_op.values()) / 1000:.2f} ms per run (profiled: a barrier after "
                    f"every dispatch) · latency of the whole call: median {latency['median_ms']:.2f} ms, "
                    f"p95 {latency['p95_ms']:.2f} ms over {latency['runs']} runs")
        print(f"chart written to {chart}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"pte": args.pte, "device": device["name"] if device else None, "latency": latency,
                       "gpu_us_per_op": {op: {"us": us, "dispatches": n, "label": short(op)}
                                         for op, (us, n) in per_op.items()},
                       "dispatches": per_dispatch}, f, indent=2)
        print(f"numbers written to {args.json}")
    return 0
