#!/usr/bin/env python3
"""Exports a model, lowers it to vkdelegate, writes a .pte, runs it on the
Vulkan device through the ExecuTorch runtime and compares its output and its
latency with eager PyTorch's on this machine's CPU.

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


def median_latency_ms(call, iters: int) -> float:
    """Whole-call wall time, after one warm-up call: the same measure for both sides."""
    call()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


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
    out = method.execute(list(inputs))[0]
    with torch.no_grad():
        ref = model(*inputs)
        eager_ms = median_latency_ms(lambda: model(*inputs), args.iters)
    ours_ms = median_latency_ms(lambda: method.execute(list(inputs)), args.iters)
    max_abs = (out - ref).abs().max().item()
    rel = ((out - ref).norm() / ref.norm()).item()
    print(f"median latency over {args.iters} runs: vkdelegate {ours_ms:.3f} ms, "
          f"eager PyTorch (CPU, {torch.get_num_threads()} threads) {eager_ms:.3f} ms")
    print(f"error vs eager PyTorch: max abs {max_abs:.3e}, relative {rel:.3e}")


if __name__ == "__main__":
    main()
