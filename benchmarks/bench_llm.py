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
    with torch.device("cuda"):
        model = Llama(**shape, max_seq_len=max_seq_len, kv_cache=True).half().eval()
    dev = "cuda"
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
            torch.cuda.synchronize()
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
                torch.cuda.synchronize()
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
    out["gpu_memory_bytes"] = torch.cuda.max_memory_allocated()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--torch-mode", help="internal: run one PyTorch mode and print its JSON")
    ap.add_argument("--compile-timeout", type=int, default=150)
    args = ap.parse_args()
    with open(os.path.join(HERE, "manifest_llm.json")) as f:
        manifest = json.load(f)
    shape, max_seq_len = manifest["shape"], manifest["max_seq_len"]
    prompts, steps, runs = manifest["prompts"], manifest["steps"], manifest["runs"]
    if args.torch_mode:
        print("RESULT " + json.dumps(torch_side(shape, max_seq_len, prompts, steps, runs, args.torch_mode)))
        return
    os.makedirs(args.out, exist_ok=True)
    results = {"manifest": manifest, "ours": {}, "torch": {}}
    pte = os.path.join(HERE, manifest["pte"])
    for i, prompt in enumerate(prompts):
        results["ours"][prompt] = run_runner(pte, prompt, steps, runs, profile=(i == len(prompts) - 1))
    for mode in ("eager", "graph", "compile"):
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
    print("wrote", os.path.join(args.out, "llm_results.json"))


if __name__ == "__main__":
    main()
