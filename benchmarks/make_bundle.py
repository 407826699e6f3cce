#!/usr/bin/env python3
"""Builds the GPU benchmark bundle in benchmarks/bundle/ (git-ignored, < 64 MiB):
the C++ runner, libexecutorch.so and the kernels it links from the executorch
wheel, one .pte per case, the PyTorch comparison script with the plain-torch
model definitions. Prints the command to run on the GPU machine.

    python benchmarks/make_bundle.py                      # micro-benchmarks + default models
    python benchmarks/make_bundle.py --models resnet18    # other models (bundles must stay < 64 MiB)
    python benchmarks/make_bundle.py --fp16-models resnet50  # fp16 rows (force_fp16), as NAME_fp16
    python benchmarks/make_bundle.py --quant linear_8da4w_g32_4096x4096_m1   # other quantized linears
    python benchmarks/make_bundle.py --models resnet50 --round-weights --compress ...
        # more in one bundle: --compress stores every file over 1 MiB xz-compressed
        # (run_gpu.sh unpacks them); --round-weights rounds every model's weights to
        # bfloat16-representable values (low 16 bits zero; the models still compute
        # in fp32 or fp16 at the same cost) on both sides, so their .pte compress to
        # about half. ResNet-50 fp32 (a 102 MB .pte) travels only so.
    python benchmarks/make_bundle.py --full-table         # every bundle of the full table:
        # benchmarks/bundle_table_1..N, sized from estimates made before any export
    python benchmarks/make_bundle.py --full-table --dry-run   # the plan only
    python benchmarks/make_bundle.py --refresh-tools      # runner and scripts anew, .pte kept
"""
import argparse
import json
import lzma
import os
import shutil
import subprocess
import sys

import executorch
import torch
from executorch.exir import to_edge_transform_and_lower

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from cases import (BAR_MODELS, FLOOR, FLOOR_CASE, FULL_TABLE_QUANT, KERNEL_BARS, MICRO, QUANT,  # noqa: E402
                   round_weights_bf16)
from vkdelegate.examples.models import MODELS  # noqa: E402
from vkdelegate.partitioner import VulkanPartitioner  # noqa: E402

LIMIT = 64 * 1024 * 1024  # what the device tool carries in one call: working tree + carried paths
LIBS = ["libexecutorch.so", "libexecutorch_kernels_optimized.so", "libexecutorch_threadpool.so"]


def lower(module, inputs, options=None):
    ep = torch.export.export(module.eval(), tuple(inputs))
    edge = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner(options)])
    gm = edge.exported_program().graph_module
    delegates = sum(1 for n in gm.graph.nodes if getattr(n.target, "__name__", "") == "executorch_call_delegate")
    on_cpu = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"
              and getattr(n.target, "__name__", "") not in ("executorch_call_delegate", "getitem")]
    return edge.to_executorch().buffer, delegates, on_cpu


def _quantized_factory(name):
    """The QUANT case's float module quantized with torchao, as make_bundle lowers it."""
    def factory():
        from vkdelegate.quant.torchao_configs import dynamic_activation_config, quantized, weight_only_config
        make, flow, bits, group_size = QUANT[name]
        module, inputs = make()
        config = (weight_only_config if flow == "weight_only" else dynamic_activation_config)(bits, group_size)
        return quantized(module, config), inputs
    return factory


def write_reference(folder, module, inputs):
    """Writes inputs (input_<i>.bin) and module(*inputs) (expected_<i>.bin), raw and contiguous,
    into folder; returns the folder relative to the bundle and the outputs' shapes and dtypes."""
    os.makedirs(folder, exist_ok=True)
    with torch.no_grad():
        outputs = module(*inputs)
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    for prefix, tensors in (("input", inputs), ("expected", outputs)):
        for i, t in enumerate(tensors):
            with open(os.path.join(folder, f"{prefix}_{i}.bin"), "wb") as f:
                f.write(t.detach().contiguous().numpy().tobytes())
    return {"dir": os.path.relpath(folder, os.path.dirname(os.path.dirname(folder))),
            "outputs": [{"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")} for t in outputs]}


# --- the full table: sizes and run times estimated before anything is exported ---

# xz-compressed .pte bytes per byte of float weights, measured on this repo's bundles with
# --round-weights (2026-11-25: mlp 0.36, linear_fp32_768x3072_768 0.35, mobilenet_v2 0.53,
# resnet50 0.48, mobilenet_v2_fp16 0.79, resnet50_fp16 0.83, llama_fp16 0.69, conv3x3_fp16_512c_7_b1 0.69).
# Folded batch norms scale the rounded weights, so models with them compress less.
COMPRESSION = {("fp32", False): 0.38, ("fp32", True): 0.53, ("fp16", False): 0.72, ("fp16", True): 0.84}
QUANT_PERIOD = 96  # cases.PeriodicLinear: the .pte compresses to about one period of rows
# Seconds on the H100 machine (16 cores), estimated (issue 19's brief: torch.compile of a ResNet-50
# ~40-60 s; llama's 41 s compile of bench_llm.py), each model fp32 or fp16: our runner's load,
# eager, CUDA graph and our 200 executes; then the torch.compile child (a cold Python, torch
# import, compile, record, 200 calls). results.json records row_s and compile_wall_s to check them.
MODEL_S = {"mlp": 5, "transformer_block": 6, "llama": 10, "mobilenet_v2": 10, "resnet18": 8, "resnet50": 15,
           "vit_tiny": 10, "unet": 8}
COMPILE_S = {"mlp": 20, "transformer_block": 30, "llama": 50, "mobilenet_v2": 55, "resnet18": 40, "resnet50": 70,
             "vit_tiny": 45, "unet": 45}
KERNEL_S = 7        # a micro or quantized case: runner start, load, profiled runs, PyTorch's graphs
FLOOR_S = 30        # 2000 executes a side, and its torch.compile child
BUNDLE_S = 45       # per run: run_gpu.sh's dpkg and xz unpacking, torch import, CUDA start
RUN_LIMIT_S = 480   # a bundle's estimated run time: the device tool stops a command at 600 s
MARGIN = 1.05       # sizes are planned 5% above the estimate


def full_table_cases():
    """(kind, name, options) of every row of the full table."""
    cases = [("micro", n, None) for n in sorted(MICRO)] + [("quant", n, None) for n in FULL_TABLE_QUANT]
    cases += [("model", n, None) for n in BAR_MODELS] + [("model", n + "_fp16", {"force_fp16": True}) for n in BAR_MODELS]
    return cases + [("floor", FLOOR_CASE, None)]


def _factory(kind, name):
    if kind == "micro":
        return MICRO[name][0]
    if kind == "quant":
        return _quantized_factory(name)
    if kind == "floor":
        return FLOOR[name]
    return MODELS[name[: -len("_fp16")] if name.endswith("_fp16") else name]


def estimate_case(kind, name, options):
    """(compressed bytes, run seconds) of one case, from its float module's parameters (no export)."""
    fp16 = bool(options and options.get("force_fp16"))
    if kind == "quant":
        module, _ = QUANT[name][0]()
        weight = module.linear.weight
        n, k = weight.shape
        stored = n * k // 2 + n * (k // 32) * 4  # 4-bit values and a float32 scale per group of 32
        return int(stored * min(1.0, QUANT_PERIOD / n)) + 100_000, KERNEL_S
    module, _ = _factory(kind, name)()
    tensors = [t for t in list(module.parameters()) + list(module.buffers()) if t.is_floating_point()]
    size = 0
    for t in tensors:
        half = fp16 or t.dtype == torch.float16
        batch_norm = any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in module.modules())
        size += t.numel() * (2 if half else 4) * COMPRESSION[("fp16" if half else "fp32", batch_norm)]
    size = int(size) + 1000  # the program: ops, tensor metadata (larger models' is in MARGIN)
    if kind == "model":
        base = name[: -len("_fp16")] if fp16 else name
        return size, MODEL_S[base] + COMPILE_S[base]
    return size, FLOOR_S if kind == "floor" else KERNEL_S


def fixed_bundle_bytes():
    """The runner and libraries (files over 1 MiB xz-compressed: about a fifth, measured), scripts and
    model code of every bundle."""
    libdir = os.path.join(list(executorch.__path__)[0], "lib")
    binaries = [os.path.join(ROOT, "runtime", "vkdelegate_runner")] + [os.path.join(libdir, lib) for lib in LIBS]
    sizes = [os.path.getsize(path) for path in binaries]
    code = sum(os.path.getsize(os.path.join(dp, fn)) for d in (HERE, os.path.join(ROOT, "examples", "models"))
               for dp, _, fns in os.walk(d) if "bundle" not in dp for fn in fns if fn.endswith((".py", ".sh")))
    return int(sum(0.2 * n if n > 2**20 else n for n in sizes)) + code


def travelling_bytes(root=ROOT):
    """What travels in every device call beside the bundle: the working tree (tracked and untracked,
    not ignored files) and .gl2, the Vulkan loader that every run carries."""
    try:
        files = subprocess.run(["git", "-C", root, "ls-files", "-z", "-co", "--exclude-standard"],
                               capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        files = []
    tree = sum(os.path.getsize(os.path.join(root, f)) for f in files if f and os.path.isfile(os.path.join(root, f)))
    gl2 = os.path.join(root, ".gl2")
    loader = sum(os.path.getsize(os.path.join(gl2, f)) for f in os.listdir(gl2)) if os.path.isdir(gl2) else 0
    return tree + loader


def plan_bundles(cases, budget_bytes, fixed_bytes, limit_s=RUN_LIMIT_S, bundle_s=BUNDLE_S, first=()):
    """Packs cases [(kind, name, options, est_bytes, est_s)] into the fewest bundles, each under
    budget_bytes (fixed_bytes and the cases' sizes times MARGIN) and limit_s (bundle_s and the cases'
    seconds), with run times balanced where the count allows: largest first, each case into the
    bundle with the least estimated time that has room (else the fullest that has room). Then the
    cases named in `first` move, where they fit, into one bundle that goes first (the run to make if
    only one can be). Returns lists of cases in the order given; raises ValueError for a case that
    fits no bundle."""
    for _, name, _, size, secs in cases:
        if fixed_bytes + size * MARGIN > budget_bytes or bundle_s + secs > limit_s:
            raise ValueError(f"{name} alone (~{size * MARGIN / 2**20:.1f} MiB, ~{secs:.0f} s) does not fit a bundle "
                             f"of {(budget_bytes - fixed_bytes) / 2**20:.1f} MiB and {limit_s - bundle_s:.0f} s")
    order = sorted(range(len(cases)), key=lambda i: -cases[i][3])

    def totals(b):
        return fixed_bytes + sum(cases[i][3] for i in b) * MARGIN, bundle_s + sum(cases[i][4] for i in b)

    def pack(n, balance):
        bins = [[] for _ in range(n)]  # case indices
        for i in order:
            size, secs = cases[i][3] * MARGIN, cases[i][4]
            room = [b for b in bins if totals(b)[0] + size <= budget_bytes and totals(b)[1] + secs <= limit_s]
            if not room:
                return None
            b = min(room, key=lambda b: totals(b)[1]) if balance else max(room, key=lambda b: totals(b)[0])
            b.append(i)
        return [b for b in bins if b]

    bins = None
    for n in range(1, len(cases) + 1):
        bins = pack(n, True) or pack(n, False)
        if bins:
            break
    if first:
        wanted = [i for i, c in enumerate(cases) if c[1] in first]

        def takes_all(b):  # room for the wanted cases it lacks
            size, secs = totals(b + [i for i in wanted if i not in b])
            return size <= budget_bytes and secs <= limit_s

        target = max(bins, key=lambda b: (takes_all(b), sum(i in wanted for i in b), -totals(b)[1]))
        for i in wanted:
            if i not in target:
                source = next(b for b in bins if i in b)
                size, secs = totals(target)
                if size + cases[i][3] * MARGIN <= budget_bytes and secs + cases[i][4] <= limit_s:
                    source.remove(i)
                    target.append(i)
        bins = [target] + [b for b in bins if b is not target and b]
    return [[cases[i] for i in sorted(b)] for b in bins]


def export_case(kind, name, options, out, round_weights):
    """Lowers one case into out/NAME.pte; returns its manifest entry, or None (printed why) if it
    does not lower to one delegate with nothing on the CPU."""
    module, inputs = _factory(kind, name)()
    if kind in ("model", "micro", "floor") and round_weights:
        round_weights_bf16(module)
    try:
        pte, delegates, on_cpu = lower(module, inputs, options)
    except Exception as e:
        print(f"skip {name}: lowering failed: {e}")
        return None
    if delegates != 1 or on_cpu:
        print(f"skip {name}: {delegates} delegates, on CPU: {on_cpu}")
        return None
    with open(os.path.join(out, name + ".pte"), "wb") as f:
        f.write(pte)
    entry = {"name": name, "kind": kind, "pte": name + ".pte"}
    if kind == "quant":
        # The error check's reference: torchao's eager output, PyTorch on the same dequantized
        # weights (float32, CPU); bench_gpu.py feeds the runner the same inputs.
        entry["reference"] = write_reference(os.path.join(out, "refs", name), module, inputs)
    if kind in ("model", "micro", "floor") and round_weights and (
            any(t.is_floating_point() for t in list(module.parameters()) + list(module.buffers()))):
        entry["weights"] = "bf16_rounded"  # bench_gpu.py rounds PyTorch's weights the same way
    if options and options.get("force_fp16"):
        entry.update(model=name[: -len("_fp16")], fp16=True)
    print(f"{name}: {len(pte) / 1e6:.1f} MB", flush=True)
    return entry


def copy_tools(out):
    """The runner, executorch's libraries, the scripts and the plain-torch model code."""
    shutil.copy2(os.path.join(ROOT, "runtime", "vkdelegate_runner"), out)
    libdir = os.path.join(list(executorch.__path__)[0], "lib")
    for lib in LIBS:
        shutil.copy2(os.path.join(libdir, lib), out)
    sweeps = tuple(sorted(n for n in os.listdir(HERE) if n.startswith("sweep_") and n.endswith(".sh")))
    for name in ("bench_gpu.py", "bench_checks.py", "cases.py", "run_gpu.sh", "gpu_vulkan.sh", "soak.py") + sweeps:
        shutil.copy2(os.path.join(HERE, name), out)
    shutil.rmtree(os.path.join(out, "models"), ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "examples", "models"), os.path.join(out, "models"),
                    ignore=shutil.ignore_patterns("__pycache__"))


def compress_large_files(out):
    for fn in sorted(os.listdir(out)):
        path = os.path.join(out, fn)
        if os.path.isfile(path) and os.path.getsize(path) > 2**20 and not fn.endswith(".xz"):
            with open(path, "rb") as src, lzma.open(path + ".xz", "wb", preset=6) as dst:
                shutil.copyfileobj(src, dst)
            shutil.copymode(path, path + ".xz")  # the runner stays executable
            os.remove(path)


def folder_bytes(folder):
    return sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(folder) for fn in fns)


def build_bundle(out, cases, round_weights, compress, made_with, command, extra_manifest=None):
    """Writes one bundle: tools, one .pte per case, manifest.json; returns its size in bytes."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    copy_tools(out)
    entries = [e for e in (export_case(kind, name, options, out, round_weights) for kind, name, options in cases) if e]
    if compress:
        compress_large_files(out)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(dict({"cases": entries, "command": command, "made_with": made_with}, **(extra_manifest or {})),
                  f, indent=1)
    return folder_bytes(out)


def full_table(dry_run):
    """make_bundle.py --full-table: plans every bundle of the full table from estimates, refuses up
    front what cannot fit, then builds benchmarks/bundle_table_1..N."""
    fixed, travelling = fixed_bundle_bytes(), travelling_bytes()
    budget = LIMIT - travelling - 2**20  # a MiB to spare
    cases = [(kind, name, options) + estimate_case(kind, name, options) for kind, name, options in full_table_cases()]
    try:
        # First: the bars' kernel cases and the floor, so that one call alone measures them.
        bundles = plan_bundles(cases, budget, fixed, first=[name for name, _, _ in KERNEL_BARS] + [FLOOR_CASE])
    except ValueError as e:
        sys.exit(f"make_bundle.py --full-table: {e}; nothing exported")
    made_with = "python benchmarks/make_bundle.py --full-table"
    print(f"each call carries {travelling / 2**20:.1f} MiB besides its bundle (working tree, .gl2): "
          f"bundles of at most {budget / 2**20:.1f} MiB")
    for k, bundle in enumerate(bundles, 1):
        size = fixed + sum(c[3] for c in bundle)
        secs = BUNDLE_S + sum(c[4] for c in bundle)
        print(f"bundle_table_{k}: ~{size / 2**20:.1f} MiB, ~{secs / 60:.1f} min on the GPU: "
              + " ".join(c[1] for c in bundle))
    if dry_run:
        return
    for stale in os.listdir(HERE):  # an earlier plan's extra bundles
        if stale.startswith("bundle_table_") and stale[len("bundle_table_"):].isdigit() and \
                int(stale[len("bundle_table_"):]) > len(bundles):
            shutil.rmtree(os.path.join(HERE, stale))
    commands = []
    for k, bundle in enumerate(bundles, 1):
        out = os.path.join(HERE, f"bundle_table_{k}")
        command = f"bash benchmarks/bundle_table_{k}/run_gpu.sh $OUT/{k}"
        estimate = {"bytes": fixed + sum(c[3] for c in bundle), "seconds": BUNDLE_S + sum(c[4] for c in bundle)}
        size = build_bundle(out, [c[:3] for c in bundle], True, True, made_with, command,
                            {"bundle": k, "bundles": len(bundles), "estimate": estimate})
        print(f"bundle_table_{k}: {size / 2**20:.1f} MiB (estimated {estimate['bytes'] / 2**20:.1f})", flush=True)
        if size > budget:
            sys.exit(f"bundle_table_{k} is {size / 2**20:.1f} MiB, over the {budget / 2**20:.1f} MiB that travel "
                     "beside the working tree and .gl2: raise make_bundle.COMPRESSION's factors and rerun")
        commands.append(command)
    print("\nOn the GPU machine (the device tool), one call per bundle:")
    for k, command in enumerate(commands, 1):
        print(f"  carry: [\".gl2\", \"benchmarks/bundle_table_{k}\"]   command: {command}")
    print("Then, here, with each run's results.json as the device tool returned it (RUN_k: its files_at folder):")
    print("  python benchmarks/combine_results.py " + " ".join(f"RUN_{k}/{k}/results.json" for k in range(1, len(bundles) + 1))
          + " && python benchmarks/update_readme.py")


def refresh_tools():
    """make_bundle.py --refresh-tools: the runner, libraries, scripts and model code of every
    benchmarks/bundle_table_K again, .pte files kept (after a runtime-only change: the .pte files
    hold the AOT side's output, which a runtime change leaves as it was)."""
    bundles = sorted(d for d in os.listdir(HERE) if d.startswith("bundle_table_") and d[13:].isdigit())
    if not bundles:
        sys.exit("no benchmarks/bundle_table_K: make them with --full-table")
    budget = LIMIT - travelling_bytes() - 2**20
    for d in bundles:
        out = os.path.join(HERE, d)
        copy_tools(out)
        compress_large_files(out)
        size = folder_bytes(out)
        print(f"{d}: {size / 2**20:.1f} MiB" + ("" if size <= budget else f", OVER the {budget / 2**20:.1f} MiB"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--micro", nargs="*", default=sorted(MICRO))
    ap.add_argument("--quant", nargs="*", default=["linear_int4_g32_4096x4096_m1"])  # quantized linear
    ap.add_argument("--models", nargs="*", default=["mlp", "transformer_block", "mobilenet_v2"])
    # fp16 rows: lowered with force_fp16, compared with PyTorch CUDA running model.half().
    ap.add_argument("--fp16-models", nargs="*", default=["mobilenet_v2", "resnet18"])
    ap.add_argument("--floor", action="store_true", help="the per-execute floor row (add of two 16-element tensors)")
    ap.add_argument("--round-weights", action="store_true",
                    help="bf16-representable weights of the models and micro cases (both sides)")
    ap.add_argument("--compress", action="store_true", help="xz every file over 1 MiB")
    ap.add_argument("--out", default=os.path.join(HERE, "bundle"))
    ap.add_argument("--full-table", action="store_true",
                    help="every bundle of the full table (benchmarks/bundle_table_K; the options above do not apply)")
    ap.add_argument("--dry-run", action="store_true", help="with --full-table: print the plan, export nothing")
    ap.add_argument("--refresh-tools", action="store_true",
                    help="new runner, libraries and scripts in the bundle_table_K folders, their .pte kept")
    args = ap.parse_args()
    if args.refresh_tools:
        return refresh_tools()
    if args.full_table:
        return full_table(args.dry_run)

    cases = [("micro", name, None) for name in args.micro]
    cases += [("quant", name, None) for name in args.quant]  # torchao-quantized linears
    for name in args.models:
        if name not in MODELS:
            print(f"skip model {name}: not in examples/models yet")
            continue
        cases.append(("model", name, None))
    for name in args.fp16_models:
        if name not in MODELS:
            print(f"skip fp16 model {name}: not in examples/models")
            continue
        cases.append(("model", name + "_fp16", {"force_fp16": True}))
    if args.floor:
        cases.append(("floor", FLOOR_CASE, None))
    rel = os.path.relpath(args.out, ROOT)
    command = f"bash {rel}/run_gpu.sh $OUT"
    made_with = ("python benchmarks/make_bundle.py " + " ".join(sys.argv[1:])).strip()
    size = build_bundle(args.out, cases, args.round_weights, args.compress, made_with, command)
    print(f"bundle: {args.out}, {size / 2**20:.1f} MiB")
    budget = LIMIT - travelling_bytes()
    if size > budget:
        sys.exit(f"the bundle is {size / 2**20:.1f} MiB, over the {budget / 2**20:.1f} MiB that travel beside the "
                 "working tree and .gl2: bundle fewer models, or use --full-table")
    print("Run on the GPU machine (the device tool), carrying .gl2, .gltools and the bundle "
          "(fetch the first two once with benchmarks/fetch_gpu_loader.sh):")
    print(f"  carry: [\".gl2\", \".gltools\", \"{rel}\"]   command: {command}")


if __name__ == "__main__":
    main()
