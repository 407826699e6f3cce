#!/usr/bin/env bash
# The float32 tiled matmul, on the GPU machine, from the repository root of the copied tree:
#   bash benchmarks/bundle-fp32mm/sweep_fp32mm.sh OUT [CONFIGS...]
# bench_gpu.py on the bundle (default kernel choice, PyTorch CUDA, max_rel_err), then
# the runner alone on the mm .pte files with each VKDELEGATE_TILED_MM configuration
# (and matmul.glsl, VKDELEGATE_NO_TILED_MM=1), GPU time per run. SWEEP_PTES picks
# the .pte files; SWEEP_PTES=none runs bench_gpu.py alone.
set -uo pipefail
out=${1:?usage: sweep_fp32mm.sh OUT [CONFIGS...]}
shift
configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=(16,16,8:0:8 16,16,8:1:0 16,16,8:1:8 16,16,16:1:8)
source "$(dirname "$0")/gpu_vulkan.sh"  # the loader, driver and layer setup
cd "$(dirname "$0")"
mkdir -p "$out"
python3 bench_gpu.py --out "$out" 2>&1 | grep -v '^|' | tail -n 20
flops() { python3 -c "import sys; print(f'{$1 / ($2 * 1e6):.1f}')"; }
sweep() {  # pte work label env...
  local pte=$1 work=$2 label=$3
  shift 3
  env "$@" ./vkdelegate_runner --model "$pte" --iters 20 --warmup 5 --profile --json /tmp/r.json > /tmp/r.txt 2>&1 \
    || { echo "$pte $label: FAILED $(tail -c 300 /tmp/r.txt)"; return; }
  local us
  us=$(python3 -c "import json; print(json.load(open('/tmp/r.json'))['gpu_us'])")
  echo "$pte $label: $us us, $(flops "$work" "$us") TF/s"
}
for pte in ${SWEEP_PTES:-mm_fp32_4096 mm_fp32_2048 mm_fp32_1024 mm_fp32_4095x1023x4097}; do
  [ -f $pte.pte ] || continue
  case $pte in
    mm_fp32_4096) work=$((2 * 4096 * 4096 * 4096)) ;;
    mm_fp32_2048) work=$((2 * 2048 * 2048 * 2048)) ;;
    mm_fp32_1024) work=$((2 * 1024 * 1024 * 1024)) ;;
    *) work=$((2 * 4095 * 1023 * 4097)) ;;
  esac
  sweep $pte.pte $work matmul.glsl VKDELEGATE_NO_TILED_MM=1
  # each config: x,y,bk[:unroll[:group]] (VKDELEGATE_TILED_MM, _UNROLL, _GROUP)
  for c in "${configs[@]}"; do
    IFS=: read -r xyb unr grp <<< "$c"
    sweep $pte.pte $work "tiled $c" VKDELEGATE_TILED_MM=$xyb VKDELEGATE_TILED_MM_UNROLL=${unr:-1} \
      VKDELEGATE_TILED_MM_GROUP=${grp:-8}
  done
done 2>&1 | tee "$out/sweep.txt"
