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
"""
import argparse
import json
import lzma
import os
import shutil
import sys

import executorch
import torch
from executorch.exir import to_edge_transform_and_lower

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from cases import MICRO, QUANT, round_weights_bf16  # noqa: E402
from vkdelegate.examples.models import MODELS  # noqa: E402
from vkdelegate.partitioner import VulkanPartitioner  # noqa: E402

LIMIT = 64 * 1024 * 1024
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--micro", nargs="*", default=sorted(MICRO))
    ap.add_argument("--quant", nargs="*", default=["linear_int4_g32_4096x4096_m1"])  # quantized linear
    ap.add_argument("--models", nargs="*", default=["mlp", "transformer_block", "mobilenet_v2"])
    # fp16 rows: lowered with force_fp16, compared with PyTorch CUDA running model.half().
    ap.add_argument("--fp16-models", nargs="*", default=["mobilenet_v2", "resnet18"])
    ap.add_argument("--round-weights", action="store_true",
                    help="bf16-representable weights of the models and micro cases (both sides)")
    ap.add_argument("--compress", action="store_true", help="xz every file over 1 MiB")
    ap.add_argument("--out", default=os.path.join(HERE, "bundle"))
    args = ap.parse_args()

    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    runner = os.path.join(ROOT, "runtime", "vkdelegate_runner")
    shutil.copy2(runner, args.out)
    libdir = os.path.join(list(executorch.__path__)[0], "lib")
    for lib in LIBS:
        shutil.copy2(os.path.join(libdir, lib), args.out)
    sweeps = tuple(sorted(n for n in os.listdir(HERE) if n.startswith("sweep_") and n.endswith(".sh")))
    for name in ("bench_gpu.py", "bench_checks.py", "cases.py", "run_gpu.sh", "gpu_vulkan.sh", "soak.py") + sweeps:
        shutil.copy2(os.path.join(HERE, name), args.out)
    shutil.copytree(os.path.join(ROOT, "examples", "models"), os.path.join(args.out, "models"),
                    ignore=shutil.ignore_patterns("__pycache__"))

    cases = []
    for name in args.micro:
        factory, _, _ = MICRO[name]
        cases.append(("micro", name, factory, None))
    for name in args.quant:  # Quantized linear: torchao-quantized linears
        cases.append(("quant", name, _quantized_factory(name), None))
    for name in args.models:
        if name not in MODELS:
            print(f"skip model {name}: not in examples/models yet")
            continue
        cases.append(("model", name, MODELS[name], None))
    for name in args.fp16_models:
        if name not in MODELS:
            print(f"skip fp16 model {name}: not in examples/models")
            continue
        cases.append(("model", name + "_fp16", MODELS[name], {"force_fp16": True}))
    entries = []
    for kind, name, factory, options in cases:
        module, inputs = factory()
        if kind in ("model", "micro") and args.round_weights:
            round_weights_bf16(module)
        try:
            pte, delegates, on_cpu = lower(module, inputs, options)
        except Exception as e:
            print(f"skip {name}: lowering failed: {e}")
            continue
        if delegates != 1 or on_cpu:
            print(f"skip {name}: {delegates} delegates, on CPU: {on_cpu}")
            continue
        with open(os.path.join(args.out, name + ".pte"), "wb") as f:
            f.write(pte)
        entry = {"name": name, "kind": kind, "pte": name + ".pte"}
        if kind == "quant":
            # The error check's reference: torchao's eager output, PyTorch on the same dequantized
            # weights (float32, CPU); bench_gpu.py feeds the runner the same inputs.
            entry["reference"] = write_reference(os.path.join(args.out, "refs", name), module, inputs)
        if kind in ("model", "micro") and args.round_weights and (
                any(t.is_floating_point() for t in list(module.parameters()) + list(module.buffers()))):
            entry["weights"] = "bf16_rounded"  # bench_gpu.py rounds PyTorch's weights the same way
        if options and options.get("force_fp16"):
            entry.update(model=name[: -len("_fp16")], fp16=True)
        entries.append(entry)
        print(f"{name}: {len(pte) / 1e6:.1f} MB")

    if args.compress:
        for fn in sorted(os.listdir(args.out)):
            path = os.path.join(args.out, fn)
            if os.path.isfile(path) and os.path.getsize(path) > 2**20:
                with open(path, "rb") as src, lzma.open(path + ".xz", "wb", preset=6) as dst:
                    shutil.copyfileobj(src, dst)
                shutil.copymode(path, path + ".xz")  # the runner stays executable
                os.remove(path)
    rel = os.path.relpath(args.out, ROOT)
    command = f"bash {rel}/run_gpu.sh $OUT"
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        made_with = "python benchmarks/make_bundle.py " + " ".join(sys.argv[1:])
        json.dump({"cases": entries, "command": command, "made_with": made_with.strip()}, f, indent=1)
    size = sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(args.out) for fn in fns)
    print(f"bundle: {args.out}, {size / 2**20:.1f} MiB")
    if size > LIMIT:
        sys.exit(f"the bundle is {size / 2**20:.1f} MiB, over the 64 MiB that travels: bundle fewer models")
    print("Run on the GPU machine (the device tool), carrying .gl2, .gltools and the bundle "
          "(fetch the first two once with benchmarks/fetch_gpu_loader.sh):")
    print(f"  carry: [\".gl2\", \".gltools\", \"{rel}\"]   command: {command}")


if __name__ == "__main__":
    main()
