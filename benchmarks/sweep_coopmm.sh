#!/usr/bin/env bash
# The cooperative-matrix matmul, on the GPU machine, from the repository root of the copied tree:
#   bash benchmarks/bundle-coopmm/sweep_coopmm.sh OUT [CONFIGS...]
# bench_gpu.py on the bundle (default kernel choice, PyTorch CUDA, max_rel_err), then
# the runner alone on the fp16 mm .pte files with each VKDELEGATE_COOPMM_TILE variant
# (CONFIG tile[:group], group = VKDELEGATE_COOPMM_GROUP) and matmul.glsl
# (VKDELEGATE_NO_COOPMAT=1), GPU time per run, and the driver's statistics of the
# kernel that ran (registers, shared memory). SWEEP_PTES picks the .pte files;
# SWEEP_PTES=none runs bench_gpu.py alone, SWEEP_BENCH=0 the sweep alone; SWEEP_IR=DIR
# also writes the kernels' internal representations where the driver gives them;
# SWEEP_RUNNER=PATH runs another build's runner (to compare two builds in one run).
set -uo pipefail
out=${1:?usage: sweep_coopmm.sh OUT [CONFIGS...]}
shift
configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=(w:8 w2:8 l64:8 h:8 m:8 mk2:8 mk4:8 mk4b:8 mk4d:8)
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
[ "${SWEEP_BENCH:-1}" = 1 ] && python3 bench_gpu.py --out "$out" 2>&1 | grep -v '^|' | tail -n 20
flops() { python3 -c "import sys; print(f'{$1 / ($2 * 1e6):.1f}')"; }
sweep() {  # pte work label env...
  local pte=$1 work=$2 label=$3
  shift 3
  local ir=()
  [ -n "${SWEEP_IR:-}" ] && ir=(--pipeline-ir "$SWEEP_IR/${pte%.pte}.$(echo "$label" | tr -c 'A-Za-z0-9.\n' _)")
  env "$@" "${SWEEP_RUNNER:-./vkdelegate_runner}" --model "$pte" --iters 20 --warmup 5 --profile --pipeline-stats "${ir[@]}" \
    --json /tmp/r.json > /tmp/r.txt 2>&1 || { echo "$pte $label: FAILED $(tail -c 300 /tmp/r.txt)"; return; }
  local us
  us=$(python3 -c "import json; print(json.load(open('/tmp/r.json'))['gpu_us'])")
  echo "$pte $label: $us us, $(flops "$work" "$us") TF/s"
  grep '^kernel matmul' /tmp/r.txt | sed 's/^/    /'
}
for pte in ${SWEEP_PTES:-mm_fp16_4096 mm_fp16_1000x777x1500 bmm_fp16_3x1000x1024x1032 linear_fp16_3x77x1000_1234}; do
  [ -f $pte.pte ] || continue
  case $pte in
    mm_fp16_4096) work=$((2 * 4096 * 4096 * 4096)) ;;
    mm_fp16_1000x777x1500) work=$((2 * 1000 * 777 * 1500)) ;;
    linear_fp16_3x77x1000_1234) work=$((2 * 3 * 77 * 1000 * 1234)) ;;
    bmm_fp16_3x1000x1024x1032) work=$((2 * 3 * 1000 * 1024 * 1032)) ;;
    *) work=$((2 * 3 * 129 * 65 * 257)) ;;
  esac
  sweep $pte.pte $work matmul.glsl VKDELEGATE_NO_COOPMAT=1
  for c in "${configs[@]}"; do
    IFS=: read -r tile grp <<< "$c"
    sweep $pte.pte $work "coop $c" VKDELEGATE_COOPMM_TILE=$tile VKDELEGATE_COOPMM_GROUP=${grp:-8}
  done
done 2>&1 | tee "$out/sweep.txt"
