#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root of the copied tree:
#   bash benchmarks/bundle/run_gpu.sh "$OUT"
#   bash benchmarks/bundle/run_gpu.sh "$OUT" soak [soak.py's options]   (the memory soak instead)
#   bash benchmarks/bundle_decode/run_gpu.sh "$OUT" llm   (LLM decode: make_llm_bundle.py's bundle)
# Sets up Vulkan (gpu_vulkan.sh: the loader from .gl2, tools and validation layer from .gltools),
# then times vkdelegate (the C++ runner) and PyTorch CUDA on the same GPU.
set -euo pipefail
export PYTHONUNBUFFERED=1  # progress shows in the device tool's output tail
out=${1:?usage: run_gpu.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)  # the scripts below run in the bundle's folder
source "$(dirname "$0")/gpu_vulkan.sh"  # the loader, driver and layer setup
cd "$(dirname "$0")"
# make_bundle.py --compress: unpack what travelled xz-compressed.
python3 - <<'PY'
import glob, lzma, os, shutil
for path in glob.glob("*.xz"):
    with lzma.open(path) as src, open(path[:-3], "wb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.copymode(path, path[:-3])
    os.remove(path)
PY
if [ "${2:-}" = soak ]; then
  python3 soak.py --out "$out" "${@:3}"
elif [ "${2:-}" = llm ]; then
  python3 bench_llm.py --out "$out" "${@:3}"
else
  # The device as Vulkan sees it, beside the results (vulkaninfo travels in .gltools, optional).
  if command -v vulkaninfo >/dev/null; then vulkaninfo --summary > "$out/vulkaninfo.txt" 2>&1 || true; fi
  python3 bench_gpu.py --out "$out" "${@:2}"
fi
