#!/usr/bin/env bash
# On the GPU machine, after run_gpu.sh has unpacked a bundle, from the repository root:
#   bash benchmarks/sweep_env.sh BUNDLE PTE [LABEL=VAR=VALUE,VAR2=VALUE ...]
# Runs the bundle's runner on PTE (profiled: GPU time from timestamp queries) once per
# setting, "default" first, and prints the GPU time of each and the dispatches that take
# it, so that a kernel choice (VKDELEGATE_* switches) can be compared on the same GPU.
set -uo pipefail
bundle=${1:?usage: sweep_env.sh BUNDLE PTE [LABEL=VAR=VALUE,...]}
pte=${2:?usage: sweep_env.sh BUNDLE PTE [LABEL=VAR=VALUE,...]}
shift 2
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
cd "$bundle"
export LD_LIBRARY_PATH=$(pwd):${LD_LIBRARY_PATH:-}
for setting in default "$@"; do
  label=${setting%%=*}
  envs=()
  [ "$setting" != default ] && IFS=, read -r -a envs <<< "${setting#*=}"
  if ! env "${envs[@]}" ./vkdelegate_runner --model "$pte" --iters 20 --warmup 5 --profile --json /tmp/sweep.json \
      > /tmp/sweep.txt 2>&1; then
    echo "$pte $label: FAILED $(tail -c 300 /tmp/sweep.txt)"
    continue
  fi
  python3 - "$pte" "$label" <<'PY'
import json, sys
d = json.load(open("/tmp/sweep.json"))
top = sorted(d["dispatches"], key=lambda x: -x["us"])[:3]
print(f"{sys.argv[1]} {sys.argv[2]}: {d['gpu_us']:.1f} us GPU, latency median {d['median_ms']:.3f} ms; top: " +
      ", ".join(f"{t['op'].split('(')[-1].rstrip(')')} {t['shape']} {t['us']:.1f}" for t in top))
PY
done
