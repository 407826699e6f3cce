#!/usr/bin/env python3
"""Combines the results.json of bundle runs into benchmarks/results/latest.json and latest.md.
A case in a later run replaces its row from an earlier one. --carry-models OLD.json keeps the
model rows of an earlier table that these runs did not measure (models too large to travel in
the same bundle), each marked with the date it was measured; kernel rows are never carried.

    python benchmarks/combine_results.py RUN1/results.json [RUN2/results.json ...]
    python benchmarks/combine_results.py RUN/results.json --carry-models benchmarks/results/latest.json
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_gpu import markdown  # noqa: E402


def combine(runs, carried=None):
    meta = dict(runs[-1]["meta"])
    meta["command"] = "; ".join(run["meta"]["command"] for run in runs)
    meta["made_with"] = "; ".join(run["meta"]["made_with"] for run in runs if run["meta"].get("made_with"))
    by_name = {}
    for run in runs:
        for row in run["rows"]:
            row = dict(row)
            if run["meta"]["date"] != meta["date"]:
                row["measured"] = run["meta"]["date"]
            by_name[row["name"]] = row
    if carried:
        for row in carried["rows"]:
            if row["kind"] == "model" and row["name"] not in by_name and "error" not in row:
                by_name[row["name"]] = dict(row, measured=row.get("measured", carried["meta"]["date"]))
    return meta, list(by_name.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="results.json of each run, oldest first")
    ap.add_argument("--carry-models", metavar="OLD.json", help="an earlier latest.json whose other model rows stay")
    args = ap.parse_args()
    runs = [json.load(open(path)) for path in args.runs]
    carried = json.load(open(args.carry_models)) if args.carry_models else None
    meta, rows = combine(runs, carried)
    out = os.path.join(HERE, "results")
    with open(os.path.join(out, "latest.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    with open(os.path.join(out, "latest.md"), "w") as f:
        f.write(markdown(meta, rows))
    print(markdown(meta, rows))


if __name__ == "__main__":
    main()
