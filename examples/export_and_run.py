#!/usr/bin/env python3
"""Exports a model, lowers it to vkdelegate, writes a .pte, runs it on the
Vulkan device through the ExecuTorch runtime and compares with eager PyTorch.

    python examples/export_and_run.py --model transformer_block --iters 50
"""
import argparse
import statistics
import time

import torch

# vkdelegate before executorch: importing vkdelegate filters the messages that executorch's
# import of torchao prints (vkdelegate/third_party_noise.py says which).
import vkdelegate.runtime as vk_runtime  # registers VkDelegateBackend
from vkdelegate.examples.models import MODELS
from vkdelegate.partitioner import VulkanPartitioner

from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="transformer_block", choices=sorted(MODELS))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--output", default=None, help="where to write the .pte (default: <model>.pte)")
    args = ap.parse_args()

    if not vk_runtime.is_available():
        raise SystemExit(f"no Vulkan device: {vk_runtime.unavailable_reason()}")
    info = vk_runtime.device_info()
    print(f"device: {info['name']} ({info['type']}, Vulkan {info['api_version']})")

    model, inputs = MODELS[args.model]()
    program = to_edge_transform_and_lower(torch.export.export(model, inputs),
                                          partitioner=[VulkanPartitioner()])
    gm = program.exported_program().graph_module
    partitions = sum(1 for n in gm.graph.nodes
                     if getattr(n.target, "__name__", "") == "executorch_call_delegate")
    path = args.output or f"{args.model}.pte"
    with open(path, "wb") as f:
        program.to_executorch().write_to_file(f)
    print(f"model: {args.model}, {partitions} delegated partition(s), written to {path}")

    method = Runtime.get().load_program(path).load_method("forward")
    out = method.execute(list(inputs))[0]  # warm-up
    times = []
    for _ in range(args.iters):
        t0 = time.perf_counter()
        out = method.execute(list(inputs))[0]
        times.append((time.perf_counter() - t0) * 1e3)
    with torch.no_grad():
        ref = model(*inputs)
    max_abs = (out - ref).abs().max().item()
    rel = ((out - ref).norm() / ref.norm()).item()
    print(f"latency over {args.iters} runs: min {min(times):.3f} ms, median {statistics.median(times):.3f} ms")
    print(f"error vs eager PyTorch: max abs {max_abs:.3e}, relative {rel:.3e}")


if __name__ == "__main__":
    main()
