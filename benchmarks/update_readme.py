#!/usr/bin/env python3
"""Copies benchmarks/results/latest.md into README.md between the benchmark markers."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- benchmarks:begin -->", "<!-- benchmarks:end -->"


def main():
    with open(os.path.join(ROOT, "benchmarks", "results", "latest.md")) as f:
        table = f.read().strip()
    path = os.path.join(ROOT, "README.md")
    with open(path) as f:
        readme = f.read()
    block = f"{BEGIN}\n{table}\n{END}"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    readme = pattern.sub(lambda _: block, readme) if pattern.search(readme) else readme + "\n" + block + "\n"
    with open(path, "w") as f:
        f.write(readme)


if __name__ == "__main__":
    main()
