#!/usr/bin/env bash
# The LLM bundle's runner under kernel choices, on the GPU machine after run_gpu.sh unpacked the bundle:
#   bash benchmarks/BUNDLE/sweep_llm.sh OUT [PROMPT_TOKENS ...]
# Per prompt length (default 512): prefill of PROMPT_TOKENS then 32 decode steps, 2 generations after 1
# warm-up, once per setting ("default" first); prints prefill ms and decode tok/s of each.
# SWEEP="label:ENV=V+ENV=V ..." replaces the built-in list; RUNNER=FILE in a label's list runs another
# runner binary (one the bundle carries: the same kernels before a change, say), PTE=FILE another program
# (make_llm_bundle.py --extra-pte: the same model exported another way). PROFILE=1 adds the
# runner's --profile (one profiled decode step after the timed ones, a barrier after every dispatch;
# attention_profile.py reads the JSON files). Writes OUT/sweep_LABEL_PROMPT.{json,txt}.
set -uo pipefail
out=${1:?usage: sweep_llm.sh OUT [PROMPT_TOKENS ...]}
shift
prompts=("${@:-512}")
source "$(dirname "$0")/gpu_vulkan.sh"  # the loader, driver and layer setup
cd "$(dirname "$0")"
mkdir -p "$out"
pte=$(python3 -c "import json; print(json.load(open('manifest_llm.json'))['pte'])")
SWEEP=${SWEEP:-"default:- coop_off:VKDELEGATE_QLINEAR_NO_COOPMAT=1 tile_l64:VKDELEGATE_QLINEAR_COOP_TILE=l64 tile_h:VKDELEGATE_QLINEAR_COOP_TILE=h tile_m:VKDELEGATE_QLINEAR_COOP_TILE=m gemv_off:VKDELEGATE_QLINEAR_NO_GEMV=1"}
profile=()
[ "${PROFILE:-0}" = 1 ] && profile=(--profile)
for tokens in "${prompts[@]}"; do
  for item in $SWEEP; do
    label=${item%%:*} spec=${item#*:} envs=() runner=./vkdelegate_runner model=$pte
    [ "$spec" != "-" ] && IFS=+ read -ra envs <<< "$spec"
    settings=()
    for e in "${envs[@]}"; do
      if [[ $e == RUNNER=* ]]; then runner=./${e#RUNNER=}
      elif [[ $e == PTE=* ]]; then model=${e#PTE=}
      else settings+=("$e"); fi
    done
    name="${label}_${tokens}"
    if env "${settings[@]}" "$runner" --model "$model" --prompt-tokens "$tokens" --generate 32 --warmup 1 --iters 2 \
        "${profile[@]}" --json "$out/sweep_$name.json" > "$out/sweep_$name.txt" 2>&1; then
      echo "$name: $(grep -E '^(prefill|decode):' "$out/sweep_$name.txt" | tr '\n' ' ')"
    else
      echo "$name: FAILED $(tail -c 300 "$out/sweep_$name.txt")"
    fi
  done
done
