#!/usr/bin/env python3
"""LLM decode and prefill on the GPU machine: vkdelegate through the C++ runner's generation
loop (`vkdelegate_runner --generate`) and PyTorch CUDA fp16 on the same Llama shape with the
same cache semantics (examples/models/llama.py: a static cache of max_seq_len positions written
with index_copy_, attention over the whole cache with a mask from the positions), timed the same
way: whole-step latency from the host (the step's inputs in, the next token's id back on the
host), prefill as one call of the whole prompt.

    bash benchmarks/bundle_decode/run_gpu.sh $OUT llm     # make_llm_bundle.py builds the bundle

PyTorch runs eager, as a CUDA graph of one decode step (positions are data, so one capture
replays at every position) and, if it compiles within --compile-timeout seconds, torch.compile
(mode "reduce-overhead") of the same step.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "vkdelegate_runner")
sys.path.insert(0, HERE)


def run_runner(pte, prompt, steps, runs, profile):
    path = os.path.join("/tmp", f"llm_{prompt}_{steps}.json")
    args = [RUNNER, "--model", pte, "--prompt-tokens", str(prompt), "--generate", str(steps),
            "--warmup", "2", "--iters", str(runs), "--json", path] + (["--profile"] if profile else [])
    r = subprocess.run(args, capture_output=True, text=True, timeout=400)
    print(r.stdout[-6000:])
    if r.returncode != 0:
        raise RuntimeError(f"runner failed: {r.stderr.strip()[-2000:]}")
    with open(path) as f:
        result = json.load(f)
    result["stdout"] = r.stdout
    return result


def torch_side(shape, max_seq_len, prompts, steps, runs, mode):
    """PyTorch CUDA fp16: {prompt: {prefill_ms, decode_step_ms}} for mode eager | graph | compile."""
    import torch
    from models.llama import Llama

    torch.backends.cuda.matmul.allow_tf32 = False
    dev = os.environ.get("BENCH_LLM_DEVICE", "cuda")  # cpu: a smoke test of this code off the GPU machine
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    with torch.device(dev):
        model = Llama(**shape, max_seq_len=max_seq_len, kv_cache=True).eval()
    model = model.half() if dev == "cuda" else model
    step_fn = model
    if mode == "compile":
        step_fn = torch.compile(model, mode="reduce-overhead", fullgraph=True, dynamic=False)
    tok1 = torch.zeros(1, 1, dtype=torch.long, device=dev)
    pos1 = torch.zeros(1, dtype=torch.long, device=dev)
    graph = None
    out = {}
    with torch.no_grad():
        if mode == "graph":
            for _ in range(3):  # warm-up on a side stream, as CUDA graph capture wants
                model(tok1, pos1)
            sync()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                logits1 = model(tok1, pos1)

        def decode(token, position):
            if graph is not None:
                tok1.fill_(token)
                pos1.fill_(position)
                graph.replay()
                return int(logits1[0, -1].argmax())
            tok1.fill_(token)
            pos1.fill_(position)
            return int(step_fn(tok1, pos1)[0, -1].argmax())

        for prompt in prompts:
            ids = torch.tensor([[3 + (i * 37) % 61 for i in range(prompt)]], device=dev)
            positions = torch.arange(prompt, device=dev)
            prefills, step_ms = [], []
            for r in range(2 + runs):  # two warm-up generations (compile's too)
                sync()
                t0 = time.perf_counter()
                token = int(model(ids, positions)[0, -1].argmax())  # prefill: eager in every mode
                prefill = (time.perf_counter() - t0) * 1e3
                times = []
                for s in range(steps if r >= 2 else 3):
                    t0 = time.perf_counter()
                    token = decode(token, prompt + s)
                    times.append((time.perf_counter() - t0) * 1e3)
                if r >= 2:
                    prefills.append(prefill)
                    step_ms += times
            prefills.sort()
            out[prompt] = {"prefill_ms": prefills[len(prefills) // 2], "decode_step_ms": step_ms,
                           "decode_tok_s": 1e3 * len(step_ms) / sum(step_ms)}
    out["weight_bytes"] = sum(p.numel() * p.element_size() for n, p in model.named_parameters()
                              if "tok_embeddings" not in n)
    out["gpu_memory_bytes"] = torch.cuda.max_memory_allocated() if dev == "cuda" else 0
    return out


def summarize(results):
    """The results as a markdown table (issue 16's "Fast" figures) and the decode profile."""
    m = results["manifest"]
    shape = m["shape"]
    # The token embedding's bytes (decode reads one row of it): a float32 table, or GGUF Q4_0's blocks
    # repacked onto the int4 layout (20 bytes per 32 values: backends/gguf_repack.py).
    embedding = shape["vocab"] * shape["dim"] * (20 / 32 if m["quant"] == "q4_0" else 4)
    lines = [f"Llama shape {shape}, {m['quant']} group {m['group_size']} (periodic random weights), "
             f"max_seq_len {m['max_seq_len']}, {m['steps']} decode steps x {m['runs']} generations per prompt.", "",
             "| figure | vkdelegate | " + " | ".join(f"PyTorch fp16 {k}" for k in results["torch"]) + " |",
             "|---|---|" + "---|" * len(results["torch"])]
    ours = results["ours"]

    def torch_cell(mode, prompt, key):
        r = results["torch"][mode]
        if "error" in r:
            return "did not run"
        v = r[str(prompt)][key] if str(prompt) in r else r[prompt][key]
        return f"{v:.0f}" if key == "decode_tok_s" else f"{1e3 * prompt / v:.0f}"

    for prompt in m["prompts"]:
        r = ours[str(prompt)] if str(prompt) in ours else ours[prompt]
        lines.append(f"| decode tok/s, context {prompt + 1}..{prompt + m['steps']} | {r['decode_tok_s']:.0f} "
                     f"(median step {r['decode_step_ms_median']:.3f} ms) | "
                     + " | ".join(torch_cell(k, prompt, "decode_tok_s") for k in results["torch"]) + " |")
    for prompt in m["prompts"]:
        r = ours[str(prompt)] if str(prompt) in ours else ours[prompt]
        lines.append(f"| prefill tok/s, {prompt}-token prompt | {r['prefill_tok_s']:.0f} ({r['prefill_ms']:.2f} ms) | "
                     + " | ".join(torch_cell(k, prompt, "prefill_ms") if k == "eager" else "(eager prefill)"
                                  for k in results["torch"]) + " |")
    last = ours[str(m["prompts"][-1])] if str(m["prompts"][-1]) in ours else ours[m["prompts"][-1]]
    mem = last["memory"]
    weights = mem["constant_bytes"] - embedding
    bw = []
    for k, r in results["torch"].items():
        if "error" in r:
            bw.append("did not run")
        else:
            t = r[str(m["prompts"][-1])] if str(m["prompts"][-1]) in r else r[m["prompts"][-1]]
            bw.append(f"{r['weight_bytes'] * t['decode_tok_s'] / 1e9:.0f} GB/s ({r['weight_bytes'] / 1e6:.0f} MB fp16)")
    lines.append(f"| effective weight bandwidth of decode (context {m['prompts'][-1]}) | "
                 f"{weights * last['decode_tok_s'] / 1e9:.0f} GB/s ({weights / 1e6:.0f} MB per token) | "
                 + " | ".join(bw) + " |")
    gib = 2**20
    lines.append(f"| GPU memory of the loaded program | {(mem['constant_bytes'] + mem['intermediate_bytes'] + mem['staging_bytes']) / gib:.0f} MiB "
                 f"(constants {mem['constant_bytes'] / gib:.0f}, KV cache {mem['state_bytes'] / gib:.0f}, other "
                 f"intermediates {(mem['intermediate_bytes'] - mem['state_bytes']) / gib:.0f}, staging "
                 f"{mem['staging_bytes'] / gib:.1f}; allocator blocks {mem['block_bytes'] / gib:.0f}) | "
                 + " | ".join("" if "error" in r else f"peak allocated {r['gpu_memory_bytes'] / gib:.0f} MiB"
                              for r in results["torch"].values()) + " |")
    lines += ["", f"Decode step GPU time by op (one profiled step at context {m['prompts'][-1] + m['steps'] + 1}, "
              f"a barrier after every dispatch: {last.get('decode_gpu_us', 0):.0f} us in all; "
              f"unprofiled step {last['decode_step_ms_median'] * 1e3:.0f} us):", "",
              "| op | dispatches | us | share |", "|---|---|---|---|"]
    for r in last.get("decode_by_op", []):
        lines.append(f"| {r['op']} | {r['count']} | {r['us']:.1f} | {100 * r['us'] / last['decode_gpu_us']:.1f}% |")
    if "prefill_by_op" in last:
        lines += ["", f"Prefill GPU time by op ({m['prompts'][-1]}-token prompt, profiled the same way: "
                  f"{last['prefill_gpu_us']:.0f} us in all; unprofiled {last['prefill_ms'] * 1e3:.0f} us with the "
                  "inputs in and the logits out):", "", "| op | dispatches | us | share |", "|---|---|---|---|"]
        for r in last["prefill_by_op"]:
            lines.append(f"| {r['op']} | {r['count']} | {r['us']:.1f} | {100 * r['us'] / last['prefill_gpu_us']:.1f}% |")
    for k, r in results["torch"].items():
        if "error" in r:
            lines += ["", f"PyTorch {k}: {r['error'][-400:]}"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="where llm_results.json and .md go (required unless --summarize)")
    ap.add_argument("--torch-mode", help="internal: run one PyTorch mode and print its JSON")
    ap.add_argument("--compile-timeout", type=int, default=120)
    ap.add_argument("--summarize", help="print the table of an llm_results.json")
    ap.add_argument("--ours-only", action="store_true",
                    help="leave PyTorch's side out (it does not depend on our .pte: a second bundle of one run)")
    ap.add_argument("--pte", help="another program of the bundle (make_llm_bundle.py --extra-pte) instead of the "
                    "manifest's: the same model quantized another way, say")
    ap.add_argument("--quant", help="with --pte: its quantization, for the table")
    args = ap.parse_args()
    if args.summarize:
        with open(args.summarize) as f:
            print(summarize(json.load(f)))
        return
    with open(os.path.join(HERE, "manifest_llm.json")) as f:
        manifest = json.load(f)
    shape, max_seq_len = manifest["shape"], manifest["max_seq_len"]
    prompts, steps, runs = manifest["prompts"], manifest["steps"], manifest["runs"]
    if args.torch_mode:
        print("RESULT " + json.dumps(torch_side(shape, max_seq_len, prompts, steps, runs, args.torch_mode)))
        return
    os.makedirs(args.out, exist_ok=True)
    if args.pte:
        manifest = dict(manifest, pte=os.path.basename(args.pte), quant=args.quant or f"{manifest['quant']}?")
    results = {"manifest": manifest, "ours": {}, "torch": {}}
    pte = os.path.join(HERE, manifest["pte"])
    for prompt in prompts:
        results["ours"][prompt] = run_runner(pte, prompt, steps, runs, profile=True)
    for mode in () if args.ours_only else ("eager", "graph", "compile"):
        t0 = time.perf_counter()
        try:
            r = subprocess.run([sys.executable, __file__, "--out", args.out, "--torch-mode", mode],
                               capture_output=True, text=True,
                               timeout=args.compile_timeout if mode == "compile" else 300)
            line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
            results["torch"][mode] = (json.loads(line[-1][7:]) if line
                                      else {"error": r.stderr.strip()[-1500:]})
        except subprocess.TimeoutExpired:
            results["torch"][mode] = {"error": f"did not finish within {args.compile_timeout} s"}
        results["torch"][mode]["wall_s"] = time.perf_counter() - t0
        print(mode, {k: v for k, v in results["torch"][mode].items() if k != "error"} if "error" not in
              results["torch"][mode] else results["torch"][mode]["error"][-500:])
    with open(os.path.join(args.out, "llm_results.json"), "w") as f:
        json.dump(results, f, indent=1)
    table = summarize(results)
    with open(os.path.join(args.out, "llm_results.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
