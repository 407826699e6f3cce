#!/usr/bin/env python3
"""Combines the results.json of bundle runs into benchmarks/results/latest.json and latest.md.
A case in a later run replaces its row from an earlier one; with several runs, each row says which
run it came from (the table's run column, the runs' commands above it). --carry-models OLD.json
keeps the model rows of an earlier table that these runs did not measure, each marked with the
date it was measured; kernel rows are never carried.

    python benchmarks/combine_results.py RUN_1/1/results.json RUN_2/2/results.json ...   # make_bundle --full-table's runs
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
    made_with = []  # --full-table's bundles share one command
    for run in runs:
        if run["meta"].get("made_with") and run["meta"]["made_with"] not in made_with:
            made_with.append(run["meta"]["made_with"])
    meta["made_with"] = "; ".join(made_with)
    meta["runs"] = [{"run": k, "command": run["meta"]["command"], "date": run["meta"]["date"]}
                    for k, run in enumerate(runs, 1)]
    by_name = {}
    for k, run in enumerate(runs, 1):
        for row in run["rows"]:
            row = dict(row, run=k)
            if run["meta"]["date"] != meta["date"]:
                row["measured"] = run["meta"]["date"]
            by_name[row["name"]] = row
    if carried:
        for row in carried["rows"]:
            if row["kind"] == "model" and row["name"] not in by_name and "error" not in row:
                by_name[row["name"]] = dict(row, measured=row.get("measured", carried["meta"]["date"]),
                                            run="earlier")
    return meta, list(by_name.values())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="results.json of each run, oldest first")
    ap.add_argument("--carry-models", metavar="OLD.json", help="an earlier latest.json whose other model rows stay")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="where latest.json and latest.md go")
    args = ap.parse_args(argv)
    runs = []
    for path in args.runs:
        with open(path) as f:
            runs.append(json.load(f))
    carried = None
    if args.carry_models:
        with open(args.carry_models) as f:
            carried = json.load(f)
    meta, rows = combine(runs, carried)
    meta["combined_with"] = " ".join(["python benchmarks/combine_results.py"] + list(argv if argv is not None
                                                                                       else sys.argv[1:]))
    with open(os.path.join(args.out, "latest.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    with open(os.path.join(args.out, "latest.md"), "w") as f:
        f.write(markdown(meta, rows))
    print(markdown(meta, rows))


if __name__ == "__main__":
    main()
