#!/usr/bin/env python3
"""Exports a KV-cache Llama (examples/llm.py's export) with periodic weights (cases.make_periodic),
so the bundle for the decode benchmark compresses: the TinyLlama shape's int4 .pte (about 870 MiB,
mostly the float32 token embedding) travels as a few MiB. Slow (minutes): export once and reuse.

    nice python benchmarks/export_llm_periodic.py --config tinyllama-shape --quant int4 \\
        --max-seq-len 1024 --out /tmp/tinyllama_int4_periodic.pte
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cases import make_periodic  # noqa: E402
from vkdelegate.examples import llm  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="tinyllama-shape", choices=sorted(llm.CONFIGS))
    ap.add_argument("--quant", default="int4", choices=llm.QUANTS)
    ap.add_argument("--max-seq-len", type=int, default=1024)
    ap.add_argument("--layers", type=int, help="fewer layers than the config (same widths)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.layers:
        llm.CONFIGS[args.config] = dict(llm.CONFIGS[args.config], layers=args.layers)
    model = make_periodic(llm.build_model(args.config, args.max_seq_len))
    t0 = time.perf_counter()
    program = llm.export_llm(model, args.quant)
    with open(args.out, "wb") as f:
        program.write_to_file(f)
    print(f"wrote {args.out} ({len(program.buffer) / 2**20:.1f} MiB) in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
