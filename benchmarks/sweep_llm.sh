#!/usr/bin/env bash
# The LLM bundle's runner under kernel choices, on the GPU machine after run_gpu.sh unpacked the bundle:
#   bash benchmarks/BUNDLE/sweep_llm.sh OUT [PROMPT_TOKENS]
# Prefill of PROMPT_TOKENS (default 512) then 32 decode steps, 2 generations after 1 warm-up, once per
# setting ("default" first); prints prefill ms and decode tok/s of each. SWEEP="label:ENV=V+ENV=V ..."
# replaces the built-in list.
set -uo pipefail
out=${1:?usage: sweep_llm.sh OUT [PROMPT_TOKENS]}
tokens=${2:-512}
source "$(dirname "$0")/gpu_vulkan.sh"  # the loader, driver and layer setup
cd "$(dirname "$0")"
mkdir -p "$out"
pte=$(python3 -c "import json; print(json.load(open('manifest_llm.json'))['pte'])")
SWEEP=${SWEEP:-"default:- coop_off:VKDELEGATE_QLINEAR_NO_COOPMAT=1 tile_l64:VKDELEGATE_QLINEAR_COOP_TILE=l64 tile_h:VKDELEGATE_QLINEAR_COOP_TILE=h tile_m:VKDELEGATE_QLINEAR_COOP_TILE=m gemv_off:VKDELEGATE_QLINEAR_NO_GEMV=1"}
for item in $SWEEP; do
  label=${item%%:*} spec=${item#*:} envs=()
  [ "$spec" != "-" ] && IFS=+ read -ra envs <<< "$spec"
  if env "${envs[@]}" ./vkdelegate_runner --model "$pte" --prompt-tokens "$tokens" --generate 32 --warmup 1 --iters 2 \
      --json "$out/sweep_$label.json" > "$out/sweep_$label.txt" 2>&1; then
    echo "$label: $(grep -E '^(prefill|decode):' "$out/sweep_$label.txt" | tr '\n' ' ')"
  else
    echo "$label: FAILED $(tail -c 300 "$out/sweep_$label.txt")"
  fi
done
