#!/usr/bin/env python3
"""Builds the LLM decode benchmark's bundle (benchmarks/bundle_decode/, git-ignored, < 64 MiB):
the C++ runner, the executorch libraries, a KV-cache Llama .pte with periodic weights
(export_llm_periodic.py: it compresses, so the TinyLlama shape travels), bench_llm.py and
the plain-torch model definition for PyTorch's side. Every file over 1 MiB is stored
xz-compressed (run_gpu.sh unpacks them).

    nice python benchmarks/export_llm_periodic.py --out /tmp/tinyllama_int4.pte     # once, slow
    python benchmarks/make_llm_bundle.py --pte /tmp/tinyllama_int4.pte
    # on the GPU machine, carrying .gl2, .gltools and benchmarks/bundle_decode:
    bash benchmarks/bundle_decode/run_gpu.sh $OUT llm
"""
import argparse
import json
import lzma
import os
import shutil
import sys

import executorch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from make_bundle import LIBS, LIMIT  # noqa: E402
from vkdelegate.examples import llm  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pte", required=True, help="export_llm_periodic.py's output")
    ap.add_argument("--config", default="tinyllama-shape", choices=sorted(llm.CONFIGS))
    ap.add_argument("--layers", type=int, help="as given to export_llm_periodic.py, if fewer than the config's")
    ap.add_argument("--quant", default="int4", help="as given to export_llm_periodic.py")
    ap.add_argument("--max-seq-len", type=int, default=1024, help="as given to export_llm_periodic.py")
    ap.add_argument("--prompts", type=int, nargs="*", default=[128, 512],
                    help="prompt lengths: decode runs at context prompt+1 onwards; the last is profiled")
    ap.add_argument("--steps", type=int, default=64, help="decode steps per generation")
    ap.add_argument("--runs", type=int, default=3, help="timed generations per prompt")
    ap.add_argument("--extra-pte", nargs="*", default=[],
                    help="more programs of the same model (another export option), for sweep_llm.sh's PTE=FILE")
    ap.add_argument("--out", default=os.path.join(HERE, "bundle_decode"))
    args = ap.parse_args()

    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    shutil.copy2(os.path.join(ROOT, "runtime", "vkdelegate_runner"), args.out)
    libdir = os.path.join(list(executorch.__path__)[0], "lib")
    for lib in LIBS:
        shutil.copy2(os.path.join(libdir, lib), args.out)
    for name in ("bench_llm.py", "run_gpu.sh", "gpu_vulkan.sh", "sweep_llm.sh", "attention_profile.py"):
        shutil.copy2(os.path.join(HERE, name), args.out)
    os.makedirs(os.path.join(args.out, "models"))
    shutil.copy2(os.path.join(ROOT, "examples", "models", "llama.py"), os.path.join(args.out, "models"))
    open(os.path.join(args.out, "models", "__init__.py"), "w").close()
    pte = os.path.basename(args.pte)
    for path in [args.pte] + args.extra_pte:
        shutil.copy2(path, os.path.join(args.out, os.path.basename(path)))
    shape = dict(llm.CONFIGS[args.config])
    if args.layers:
        shape["layers"] = args.layers
    manifest = {"config": args.config, "shape": shape, "quant": args.quant, "group_size": llm.GROUP_SIZE,
                "max_seq_len": args.max_seq_len, "pte": pte, "pte_bytes": os.path.getsize(args.pte),
                "prompts": args.prompts, "steps": args.steps, "runs": args.runs,
                "made_with": "python benchmarks/make_llm_bundle.py " + " ".join(sys.argv[1:])}
    with open(os.path.join(args.out, "manifest_llm.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    for fn in sorted(os.listdir(args.out)):
        path = os.path.join(args.out, fn)
        if os.path.isfile(path) and os.path.getsize(path) > 2**20:
            with open(path, "rb") as src, lzma.open(path + ".xz", "wb", preset=6) as dst:
                shutil.copyfileobj(src, dst, 16 << 20)
            shutil.copymode(path, path + ".xz")
            os.remove(path)
    size = sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(args.out) for fn in fns)
    print(f"bundle: {args.out}, {size / 2**20:.1f} MiB")
    if size > LIMIT:
        sys.exit(f"the bundle is {size / 2**20:.1f} MiB, over the 64 MiB that travels")
    rel = os.path.relpath(args.out, ROOT)
    print(f'carry: [".gl2", ".gltools", "{rel}"]   command: bash {rel}/run_gpu.sh $OUT llm')


if __name__ == "__main__":
    main()
