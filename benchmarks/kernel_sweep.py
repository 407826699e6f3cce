#!/usr/bin/env python3
"""Kernel choices across whole models, on the GPU machine: the C++ runner on each program under each
setting (environment variables), whole-call latency and one profiled execute, and per program a table
of the dispatches grouped by (op, output shape): their summed GPU time under each setting. For
finding which kernel a product of a given shape should take.

    python3 kernel_sweep.py --out $OUT/ks --models vit_tiny_fp16.pte mlp_fp16.pte \\
        --settings default:- mk4:VKDELEGATE_COOPMM_TILE=mk4 float:VKDELEGATE_NO_COOPMAT=1 --ops linear mm

A setting is LABEL:ENV=V+ENV=V ("-": none; RUNNER=FILE runs another runner binary). Run from a
bundle's folder after run_gpu.sh unpacked it (gpu_vulkan.sh's loader set-up in the environment).
Profiled times hold a barrier after every dispatch.
"""
import argparse
import json
import os
import subprocess
from collections import OrderedDict


def run(runner, pte, envs, iters, out_json):
    envs = dict(envs)
    runner = envs.pop("RUNNER", runner)  # another runner binary the bundle carries (the kernels before a change)
    env = dict(os.environ, **envs)
    args = [runner, "--model", pte, "--iters", str(iters), "--warmup", str(max(5, iters // 10)), "--profile",
            "--gpu-runs", "5", "--json", out_json]
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip()[-400:]}
    with open(out_json) as f:
        return json.load(f)


def groups(result, ops):
    """(op, shape) -> [summed us, count] in graph order. An op's dispatches count as one: its key is
    the shape of its last dispatch (the op's output: a split product's reduce, not its slices)."""
    per_op = OrderedDict()
    for d in result.get("dispatches", []):
        op = d["op"]
        name = op[op.find("(") + 1:op.rfind(")")] if "(" in op else op  # "op #12 (aten.linear.default)"
        if ops and not any(o in name for o in ops):
            continue
        entry = per_op.setdefault(op, [name, "", 0.0])
        entry[1] = d.get("shape", "")
        entry[2] += d["us"]
    out = OrderedDict()
    for name, shape, us in per_op.values():
        g = out.setdefault((name, shape), [0.0, 0])
        g[0] += us
        g[1] += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runner", default="./vkdelegate_runner")
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--settings", nargs="+", default=["default:-"])
    ap.add_argument("--ops", nargs="*", default=[], help="only dispatches whose op name holds one of these")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    settings = []
    for item in args.settings:
        label, _, spec = item.partition(":")
        envs = dict(e.split("=", 1) for e in spec.split("+")) if spec not in ("", "-") else {}
        settings.append((label, envs))
    report = []
    for pte in args.models:
        name = os.path.basename(pte)[:-4]
        results = {}
        for label, envs in settings:
            results[label] = run(args.runner, pte, envs, args.iters, os.path.join(args.out, f"{name}_{label}.json"))
        report.append(f"## {name}\n")
        report.append("| setting | median ms | profiled GPU us |")
        report.append("|---|---|---|")
        for label, r in results.items():
            if "error" in r:
                report.append(f"| {label} | failed: {r['error'][-200:]} | |")
            else:
                report.append(f"| {label} | {r['median_ms']:.4f} | {sum(d['us'] for d in r.get('dispatches', [])):.1f} |")
        ok = [label for label, r in results.items() if "error" not in r]
        if ok:
            per = {label: groups(results[label], args.ops) for label in ok}
            keys = list(per[ok[0]].keys())
            report.append("")
            report.append("| op | shape | n | " + " | ".join(f"{label} us" for label in ok) + " |")
            report.append("|---|---|---|" + "---|" * len(ok))
            for key in keys:
                cells = [f"{per[label][key][0]:.1f}" if key in per[label] else "-" for label in ok]
                report.append(f"| {key[0]} | {key[1]} | {per[ok[0]][key][1]} | " + " | ".join(cells) + " |")
        report.append("")
        print("\n".join(report[-(len(keys) + 8 if ok else 6):]), flush=True)
    with open(os.path.join(args.out, "kernel_sweep.md"), "w") as f:
        f.write("\n".join(report) + "\n")


if __name__ == "__main__":
    main()
