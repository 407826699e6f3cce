#!/usr/bin/env python3
"""Lowers a transformer block once with a dynamic sequence length (upper bound
--max-seq), runs it at several lengths in one loaded program, compares each with
eager PyTorch and prints the delegate's memory report.

    python examples/dynamic_shapes.py --max-seq 128 --output transformer_dyn.pte
"""
import argparse

import torch
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

import vkdelegate.runtime as vk_runtime  # registers VkDelegateBackend
from vkdelegate.examples.models import TransformerBlock
from vkdelegate.partitioner import VulkanPartitioner


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-seq", type=int, default=128)
    ap.add_argument("--output", default="transformer_dyn.pte")
    args = ap.parse_args()
    if not vk_runtime.is_available():
        raise SystemExit(f"no Vulkan device: {vk_runtime.unavailable_reason()}")

    model = TransformerBlock().eval()
    (example,) = TransformerBlock.example_inputs()
    seq = torch.export.Dim("seq", min=1, max=args.max_seq)
    exported = torch.export.export(model, (example,), dynamic_shapes=({1: seq},))
    # Only ops that can resize: the whole block must follow the input's length.
    program = to_edge_transform_and_lower(exported, partitioner=[VulkanPartitioner({"require_dynamic_shapes": True})])
    with open(args.output, "wb") as f:
        program.to_executorch().write_to_file(f)
    print(f"written to {args.output} (sequence length 1..{args.max_seq})")

    method = Runtime.get().load_program(args.output).load_method("forward")
    batch, _, dim = example.shape
    for length in sorted({1, 7, args.max_seq // 2, args.max_seq}):
        x = torch.randn(batch, length, dim)
        out = method.execute([x])[0]
        with torch.no_grad():
            ref = model(x)
        print(f"seq {length:4d}: output {list(out.shape)}, max abs error {(out - ref).abs().max().item():.2e}")
    for i, report in enumerate(vk_runtime.loaded_memory_reports()):
        print(f"delegate {i} memory report:")
        for key, value in report.items():
            print(f"  {key:20s} {value}")


if __name__ == "__main__":
    main()
