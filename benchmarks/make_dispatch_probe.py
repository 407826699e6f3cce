#!/usr/bin/env python3
"""Programs that measure what one dispatch costs (benchmarks/bundle_probe/, git-ignored): a one-op
program (add of two 16-element tensors: the per-execute floor, host copies included) and chains of
160 dependent adds (16 and 2048 elements), whose time over 160 is the cost of a dependent dispatch
(a barrier and a launch). Run with a bundle's runner, e.g. benchmarks/bundle_decode's, on the GPU
machine (carry .gl2, .gltools, benchmarks/bundle_decode, benchmarks/bundle_probe):

    source benchmarks/bundle_decode/gpu_vulkan.sh; cd benchmarks/bundle_decode   # after run_gpu.sh unpacked it
    for m in add16 chain160_16 chain160_2k; do ./vkdelegate_runner --model ../bundle_probe/$m.pte --iters 2000 --warmup 50; done
    VKDELEGATE_NO_BARRIERS=1 ./vkdelegate_runner --model ../bundle_probe/chain160_2k.pte --iters 2000   # wrong results: barriers' cost only
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from helpers import lower  # noqa: E402


class Add(torch.nn.Module):
    def forward(self, a, b):
        return a + b


class AddChain(torch.nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.n = n

    def forward(self, x, y):
        for _ in range(self.n):
            x = x + y  # each add reads the previous one's output: a barrier between them
        return x


def main():
    out = os.path.join(HERE, "bundle_probe")
    os.makedirs(out, exist_ok=True)
    for name, module, n in (("add16", Add(), 16), ("chain160_16", AddChain(160), 16),
                            ("chain160_2k", AddChain(160), 2048)):
        path = os.path.join(out, name + ".pte")
        with open(path, "wb") as f:
            f.write(lower(module, (torch.randn(n), torch.randn(n))).to_executorch().buffer)
        print(path)


if __name__ == "__main__":
    main()
