#!/usr/bin/env bash
# The float32 tiled convolution, on the GPU machine, from the repository root of the copied tree:
#   bash benchmarks/bundle_conv32/sweep_conv32.sh OUT [CONFIGS...]
# bench_gpu.py on the bundle (default kernel choice, PyTorch CUDA, max_rel_err), then
# the runner alone on the float32 conv .pte files with the other kernels
# (VKDELEGATE_NO_TILED_CONV=1) and each forced conv2d_tiled variant (VKDELEGATE_TILED_CONV),
# GPU time per run. SWEEP_PTES picks the .pte files.
set -uo pipefail
out=${1:?usage: sweep_conv32.sh OUT [CONFIGS...]}
shift
configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=(c32 c64 c128)
source "$(dirname "$0")/gpu_vulkan.sh"  # the loader, driver and layer setup
cd "$(dirname "$0")"
python3 - <<'PY'
import glob, lzma, os, shutil
for path in glob.glob("*.xz"):
    with lzma.open(path) as src, open(path[:-3], "wb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.copymode(path, path[:-3])
    os.remove(path)
PY
mkdir -p "$out"
python3 bench_gpu.py --out "$out" 2>&1 | grep -v '^|' | tail -n 30
sweep() {  # pte work label env...
  local pte=$1 work=$2 label=$3
  shift 3
  env "$@" ./vkdelegate_runner --model "$pte" --iters 20 --warmup 5 --profile --json /tmp/r.json > /tmp/r.txt 2>&1 \
    || { echo "$pte $label: FAILED $(tail -c 300 /tmp/r.txt)"; return; }
  python3 -c "import json; us = json.load(open('/tmp/r.json'))['gpu_us']; print(f'$pte $label: {us:.1f} us, {$work / (us * 1e6):.2f} TF/s')"
}
for pte in ${SWEEP_PTES:-conv3x3_64c_56_b32 conv3x3_64c_56_b1 conv3x3_128c_28_b32 conv3x3_128c_28_b8 conv3x3_256c_14_b32 conv3x3_fp32_odd_s2_b64}; do
  [ -f $pte.pte ] || continue
  work=$(python3 -c "from cases import MICRO; print(MICRO['$pte'][2])")
  sweep $pte.pte $work "other kernels" VKDELEGATE_NO_TILED_CONV=1
  for c in "${configs[@]}"; do sweep $pte.pte $work "tiled $c" VKDELEGATE_TILED_CONV=$c; done
done 2>&1 | tee "$out/sweep.txt"
