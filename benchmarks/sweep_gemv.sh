#!/usr/bin/env bash
# The one-row quantized linear (qlinear_gemv.glsl), on the GPU machine, from the repository root of
# the copied tree, after run_gpu.sh (which unpacks the bundle):
#   bash benchmarks/BUNDLE/sweep_gemv.sh OUT
# Bundle: make_bundle.py --micro --quant linear_int4_g32_4096x4096_m1 linear_int4_g32_4096x11008_m1
#   linear_int4_g32_11008x4096_m1 linear_int4_g32_8192x28672_m1 --models --fp16-models --compress
# The runner alone on each linear_*_m1 .pte of the bundle under kernel choices: the default
# (qlinear_gemv.glsl), the rows kernel (VKDELEGATE_QLINEAR_NO_GEMV=1: the kernel before it) and
# each shape of qlinear_gemv.glsl (VKDELEGATE_QLINEAR_GEMV_SHAPE) at local sizes 64, 128 and 256
# (VKDELEGATE_QLINEAR_WG). GPU time: the median of 21 profiled executes, warm and
# with the L2 flushed (a 256 MiB fill before each, outside the timing); GB/s of the bytes the
# linear stores on the GPU (packed weights and scales: the runner's constant_bytes).
# SWEEP="pte:label:ENV=V+ENV=V ..." replaces the built-in list. The driver's internal
# representations of the 8192x28672 product's kernels land in OUT/gemv_ir.
#
#   bash benchmarks/BUNDLE/sweep_gemv.sh OUT decode
# in an LLM bundle (make_llm_bundle.py): the decode step under each setting of DECODE_SWEEP
# ("label:ENV=V+ENV=V ..."; "default:-" first): 32 decode steps after a 128-token prompt,
# 2 generations after 1 warm-up (tok/s of the unprofiled steps), then one profiled step: the
# fused GEMVs' dispatch times (median over the layers of [rms_norm + q/k/v], [wo + residual],
# [rms_norm + w1/w3 + silu*mul], [w2 + residual]; each dispatch's time holds the barrier before it).
set -uo pipefail
out=${1:?usage: sweep_gemv.sh OUT [decode]}
source "$(dirname "$0")/gpu_vulkan.sh"  # the loader, driver and layer setup
cd "$(dirname "$0")"
mkdir -p "$out"
if [ "${2:-}" = decode ]; then
  pte=$(python3 -c "import json; print(json.load(open('manifest_llm.json'))['pte'])")
  for item in ${DECODE_SWEEP:-default:-}; do
    label=${item%%:*} spec=${item#*:} envs=()
    [ "$spec" != "-" ] && IFS=+ read -ra envs <<< "$spec"
    if ! env "${envs[@]}" ./vkdelegate_runner --model "$pte" --prompt-tokens 128 --generate 32 --warmup 1 --iters 2 \
        --profile --json "$out/decode_$label.json" > "$out/decode_$label.txt" 2>&1; then
      echo "$label: FAILED $(tail -c 300 "$out/decode_$label.txt")"
      continue
    fi
    python3 - "$out/decode_$label.json" "$label" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
# The fused linears' kernels: an op's first dispatch (its other nodes, the many-row path, are
# recorded with no workgroups: a timestamp each). In graph order: 4 per layer, then the head.
first = {}
for d in r["decode_dispatches"]:
    if "vkd_linear_qw_fused" in d["op"] and (d["delegate"], d["op"]) not in first:
        first[(d["delegate"], d["op"])] = d["us"]
times = list(first.values())
layers = len(times) // 4
names = ["qkv", "wo", "w1w3", "w2"]
parts = [f"{n} {statistics.median(times[i:4 * layers:4]):.2f}" for i, n in enumerate(names)] if layers else []
gemv = sum(times[:4 * layers])
print(f"{sys.argv[2]}: decode {r['decode_tok_s']:.1f} tok/s (step {r['decode_step_ms_median']:.3f} ms); "
      f"profiled step {r['decode_gpu_us']:.0f} us, fused GEMVs {gemv:.0f} us ({layers} layers; median us: "
      + ", ".join(parts) + f"); last tokens {r.get('tokens', [])[-6:]}")
PY
  done 2>&1 | tee "$out/sweep_decode.txt"
  exit 0
fi
one() {  # pte label env-list (+-separated, or "-")
  local pte=$1 label=$2 envs=()
  [ -f "$pte.pte" ] || return
  [ "$3" != "-" ] && IFS=+ read -ra envs <<< "$3"
  env "${envs[@]}" ./vkdelegate_runner --model "$pte.pte" --iters 3 --warmup 3 --profile --gpu-runs 21 \
    --flush-l2 256 --pipeline-stats --json /tmp/g.json > /tmp/g.txt 2>&1 || { echo "$pte $label: FAILED $(tail -c 300 /tmp/g.txt)"; return; }
  python3 - "$pte" "$label" <<'PY'
import json, sys
r = json.load(open("/tmp/g.json"))
pte, label = sys.argv[1], sys.argv[2]
mb = r["constant_bytes"] / 1e6
warm, cold = r["gpu_us"], r["gpu_us_flushed"]
# The quantized linear's kernels (the program records the one-row, rows and tiled kernels; the
# one-row product dispatches one) with the driver's statistics (registers, shared memory).
kernels = "; ".join(f"{p['shader']} [{p['local_size']}] " + ", ".join(p["statistics"][:4])
                    for p in r.get("pipelines", []) if p["shader"].startswith(("qlinear_gemv", "qlinear_rows")))
# Per dispatch (the last warm execute; empty ones, the kernels not chosen, only a timestamp).
each = " + ".join(f"{d['us']:.1f}" for d in r.get("dispatches", []))
print(f"{pte} {label}: {mb:.1f} MB, warm {warm:.1f} us {mb / warm * 1e3:.0f} GB/s ({each}), "
      f"L2 flushed {cold:.1f} us {mb / cold * 1e3:.0f} GB/s | {kernels}")
PY
}
N=VKDELEGATE_QLINEAR_NO_GEMV W=VKDELEGATE_QLINEAR_WG S=VKDELEGATE_QLINEAR_GEMV_SHAPE
default_list=""
for pte in $(ls linear_*_m1.pte 2>/dev/null | sed 's/\.pte$//'); do
  default_list+=" $pte:gemv:- $pte:rows(before):$N=1"
  for shape in c4u1 c2u1 c4u2 c8u1; do
    for wg in 64 128 256; do default_list+=" $pte:$shape-wg$wg:$S=$shape+$W=$wg"; done
  done
done
for item in ${SWEEP:-$default_list}; do
  IFS=: read -r pte label envs <<< "$item"
  one "$pte" "$label" "$envs"
done 2>&1 | tee "$out/sweep_gemv.txt"
if [ -f linear_int4_g32_8192x28672_m1.pte ]; then
  ./vkdelegate_runner --model linear_int4_g32_8192x28672_m1.pte --iters 1 --warmup 0 --pipeline-ir "$out/gemv_ir" \
    > /dev/null 2>&1 || echo "pipeline IR: FAILED"
fi
