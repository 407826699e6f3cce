#!/usr/bin/env python3
"""Exports a KV-cache Llama (examples/llm.py's export) with periodic weights (cases.make_periodic),
so the bundle for the decode benchmark compresses: the TinyLlama shape's int4 .pte (about 870 MiB,
mostly the float32 token embedding) travels as a few MiB. Slow (minutes): export once and reuse.

    nice python benchmarks/export_llm_periodic.py --config tinyllama-shape --quant int4 \\
        --max-seq-len 1024 --out /tmp/tinyllama_int4_periodic.pte

--quant q4_0 takes the GGUF route instead: every linear and the token embedding quantized to
Q4_0 blocks by the `gguf` package into a .gguf file (llama.cpp's names, norms F32), which our
loader reads back (vkdelegate.quant.gguf_loader) as a user's .gguf would be read.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cases import make_periodic  # noqa: E402
from vkdelegate.examples import llm  # noqa: E402


def gguf_q4_0(model, path: str) -> None:
    """Writes model's weights to path (all linears and the embedding Q4_0, the rest F32) and loads
    them back into model through our GGUF loader."""
    import gguf
    from vkdelegate.quant.gguf_loader import llama_cpp_names, load_gguf_linears

    names = llama_cpp_names(model, permuted_qk=False)  # written in our row order
    params = dict(model.named_parameters())
    writer = gguf.GGUFWriter(path, "llama")
    for gguf_name, ours in names.items():
        if ours not in params:
            continue
        weight = params[ours].detach().float().numpy()
        if weight.ndim == 2:
            writer.add_tensor(gguf_name, gguf.quants.quantize(weight, gguf.GGMLQuantizationType.Q4_0),
                              raw_dtype=gguf.GGMLQuantizationType.Q4_0)
        else:
            writer.add_tensor(gguf_name, weight)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    load_gguf_linears(model, path, name_map=names)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="tinyllama-shape", choices=sorted(llm.CONFIGS))
    ap.add_argument("--quant", default="int4", choices=llm.QUANTS + ("q4_0",))
    ap.add_argument("--max-seq-len", type=int, default=1024)
    ap.add_argument("--layers", type=int, help="fewer layers than the config (same widths)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--option", action="append", default=[], metavar="KEY=JSON",
                    help="a VulkanPartitioner compile option (fuse_rope_attention=false: the rope and cache "
                         "writes a dispatch of their own, to compare)")
    args = ap.parse_args()
    if args.layers:
        llm.CONFIGS[args.config] = dict(llm.CONFIGS[args.config], layers=args.layers)
    model = make_periodic(llm.build_model(args.config, args.max_seq_len))
    t0 = time.perf_counter()
    if args.quant == "q4_0":
        gguf_q4_0(model, os.path.splitext(args.out)[0] + ".gguf")
        print(f"wrote {os.path.splitext(args.out)[0]}.gguf in {time.perf_counter() - t0:.1f} s")
    options = {key: json.loads(value) for key, value in (item.split("=", 1) for item in args.option)}
    program = llm.export_llm(model, "none" if args.quant == "q4_0" else args.quant, options=options)
    with open(args.out, "wb") as f:
        program.write_to_file(f)
    print(f"wrote {args.out} ({len(program.buffer) / 2**20:.1f} MiB) in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
