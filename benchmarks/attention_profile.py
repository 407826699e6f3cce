"""Attention over the KV cache in profiled decode steps: reads sweep_llm.sh's JSON files (PROFILE=1) and
prints, per file, the decode step, the profiled position and the mean GPU time per layer of each
dispatch of et_vk.vkd_sdpa_rope_kv or vkd_sdpa_kv_cache (in recorded order: the split, the reduce, the
prefill kernels' zero-group nodes; before them vkd_rope_kv_update's dispatch where the program has it),
with a barrier after every dispatch as the runner's --profile times them.

    python3 benchmarks/attention_profile.py OUT/sweep_*.json
"""
import json
import sys
from collections import defaultdict


def attention_nodes(dispatches, names=("sdpa_kv_cache", "sdpa_rope_kv")):
    """The mean us of each node of the op over its calls (layers), and the number of calls."""
    per_call = defaultdict(list)
    for d in dispatches:
        if any(name in d["op"] for name in names):
            per_call[d["op"]].append(d["us"])
    calls = list(per_call.values())
    if not calls:
        return [], 0
    nodes = max(len(c) for c in calls)
    means = [sum(c[k] for c in calls if k < len(c)) / sum(1 for c in calls if k < len(c)) for k in range(nodes)]
    return means, len(calls)


def main(paths):
    print(f"{'run':32} {'step ms':>8} {'tok/s':>7} {'prompt':>8} {'layers':>6}  attention us per layer (nodes)")
    for path in paths:
        with open(path) as f:
            r = json.load(f)
        if "decode_dispatches" not in r:
            print(f"{path}: no profiled decode step")
            continue
        means, calls = attention_nodes(r["decode_dispatches"])
        # Programs exported with fuse_rope_attention=False: the rope + cache-write dispatch before it.
        rope, _ = attention_nodes(r["decode_dispatches"], ("rope_kv_update",))
        means = rope[:1] + means
        position = r.get("prompt_tokens", 0)
        nodes = " + ".join(f"{m:.1f}" for m in means)
        name = path.rsplit("/", 1)[-1].removeprefix("sweep_").removesuffix(".json")
        print(f"{name:32} {r['decode_step_ms_median']:8.3f} {r['decode_tok_s']:7.1f} {position!s:>8} {calls:6d}  "
              f"{sum(means):.1f} ({nodes}); profiled step {r['decode_gpu_us']:.0f} us")


if __name__ == "__main__":
    main(sys.argv[1:])
