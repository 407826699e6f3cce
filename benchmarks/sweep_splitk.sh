#!/usr/bin/env bash
# Split-K float32 matmul, on the GPU machine, from the repository root of the copied tree, after
# run_gpu.sh (which unpacks the bundle and sets nothing that lasts):
#   bash benchmarks/BUNDLE/sweep_splitk.sh OUT
# The runner alone on each float32 product .pte of the bundle under kernel choices:
# the default, matmul.glsl (VKDELEGATE_NO_TILED_MM=1), split-K off (VKDELEGATE_MM_SPLITK=1)
# and forced slice counts and tile configurations. GPU time per run (profiled: a
# barrier after every dispatch, so split-K's two dispatches are counted serialized).
# SWEEP="pte:label:ENV=V+ENV=V ..." replaces the built-in list.
set -uo pipefail
out=${1:?usage: sweep_splitk.sh OUT}
source "$(dirname "$0")/gpu_vulkan.sh"  # the loader, driver and layer setup
cd "$(dirname "$0")"
mkdir -p "$out"
work() {
  case $1 in
    mm_fp32_4096) echo $((2 * 4096 * 4096 * 4096)) ;;
    mm_fp32_2048) echo $((2 * 2048 * 2048 * 2048)) ;;
    mm_fp32_1024) echo $((2 * 1024 * 1024 * 1024)) ;;
    linear_fp32_768x768_3072 | linear_fp32_768x3072_768) echo $((2 * 768 * 768 * 3072)) ;;
    linear_fp32_77x1024_1024) echo $((2 * 77 * 1024 * 1024)) ;;
    *) echo 0 ;;
  esac
}
one() {  # pte label env-list (+-separated, or "-")
  local pte=$1 label=$2 envs=() w
  [ -f "$pte.pte" ] || return
  [ "$3" != "-" ] && IFS=+ read -ra envs <<< "$3"
  w=$(work "$pte")
  env "${envs[@]}" ./vkdelegate_runner --model "$pte.pte" --iters 30 --warmup 5 --profile --json /tmp/r.json \
    > /tmp/r.txt 2>&1 || { echo "$pte $label: FAILED $(tail -c 300 /tmp/r.txt)"; return; }
  python3 - "$pte" "$label" "$w" <<'PY'
import json, sys
r = json.load(open("/tmp/r.json"))
pte, label, work = sys.argv[1], sys.argv[2], int(sys.argv[3])
us = r["gpu_us"]
kernels = " + ".join(f"{d['us']:.1f}" for d in r.get("dispatches", []))
print(f"{pte} {label}: {us:.1f} us ({kernels}), {work / (us * 1e6):.1f} TF/s, wall median {r.get('median_ms', 0):.3f} ms")
PY
}
D=VKDELEGATE_MM_SPLITK T=VKDELEGATE_TILED_MM
default_list="
mm_fp32_1024:default:-
mm_fp32_1024:matmul.glsl:VKDELEGATE_NO_TILED_MM=1
mm_fp32_1024:sk2:$D=2 mm_fp32_1024:sk3:$D=3 mm_fp32_1024:sk4:$D=4 mm_fp32_1024:sk6:$D=6 mm_fp32_1024:sk8:$D=8
mm_fp32_1024:64x64:$T=8,8,8+$D=1 mm_fp32_1024:64x64-sk2:$T=8,8,8+$D=2 mm_fp32_1024:64x64-sk4:$T=8,8,8+$D=4
mm_fp32_1024:64x128-sk2:$T=16,8,8+$D=2 mm_fp32_1024:128x64-sk2:$T=8,16,8+$D=2
mm_fp32_2048:default:- mm_fp32_2048:matmul.glsl:VKDELEGATE_NO_TILED_MM=1 mm_fp32_2048:sk2:$D=2
mm_fp32_2048:64x128:$T=16,8,8+$D=1 mm_fp32_2048:64x64:$T=8,8,8+$D=1
mm_fp32_4096:default:-
linear_fp32_768x768_3072:default:- linear_fp32_768x768_3072:matmul.glsl:VKDELEGATE_NO_TILED_MM=1
linear_fp32_768x768_3072:tiled-sk1:$T=16,16,8+$D=1 linear_fp32_768x768_3072:sk3:$D=3
linear_fp32_768x768_3072:64x128:$T=16,8,8+$D=1 linear_fp32_768x768_3072:64x64:$T=8,8,8+$D=1
linear_fp32_768x3072_768:default:- linear_fp32_768x3072_768:matmul.glsl:VKDELEGATE_NO_TILED_MM=1
linear_fp32_768x3072_768:sk4:$D=4 linear_fp32_768x3072_768:sk6:$D=6
linear_fp32_768x3072_768:64x64:$T=8,8,8+$D=1 linear_fp32_768x3072_768:64x64-sk2:$T=8,8,8+$D=2
linear_fp32_77x1024_1024:default:- linear_fp32_77x1024_1024:sk2:$D=2 linear_fp32_77x1024_1024:sk4:$D=4
linear_fp32_77x1024_1024:sk8:$D=8 linear_fp32_77x1024_1024:64x64-sk2:$T=8,8,8+$D=2
linear_fp32_77x1024_1024:64x64-sk4:$T=8,8,8+$D=4
"
for item in ${SWEEP:-$default_list}; do
  IFS=: read -r pte label envs <<< "$item"
  one "$pte" "$label" "$envs"
done 2>&1 | tee "$out/sweep_splitk.txt"
