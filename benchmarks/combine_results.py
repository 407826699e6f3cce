#!/usr/bin/env python3
"""Combines the results.json of several bundle runs (each under 64 MiB, e.g. the
micro-benchmarks and small models, then the larger models) into
benchmarks/results/latest.json and latest.md. Every row keeps the reference
measured in its own run; a case in a later run replaces its row from an earlier one.

    python benchmarks/combine_results.py RUN1/results.json RUN2/results.json
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))  # bench_gpu imports `models`

from bench_gpu import markdown  # noqa: E402


def main():
    runs = [json.load(open(path)) for path in sys.argv[1:]]
    meta = dict(runs[0]["meta"])
    meta["command"] = "; ".join(run["meta"]["command"] for run in runs)
    meta["made_with"] = "; ".join(run["meta"]["made_with"] for run in runs if run["meta"].get("made_with"))
    # A case measured again in a later run replaces the earlier row (in its place).
    by_name = {}
    for run in runs:
        for row in run["rows"]:
            by_name[row["name"]] = row
    rows = list(by_name.values())
    out = os.path.join(HERE, "results")
    with open(os.path.join(out, "latest.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    with open(os.path.join(out, "latest.md"), "w") as f:
        f.write(markdown(meta, rows))
    print(markdown(meta, rows))


if __name__ == "__main__":
    main()
