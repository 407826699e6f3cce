#!/usr/bin/env bash
# The eager vulkan device on the GPU machine (issue 20's figures), from the repository root of the copied
# tree, carrying .gl2 and benchmarks/bundle_eager (make_eager_bundle.py):
#   bash benchmarks/eager_gpu.sh OUT [--build-only]
# Builds vkdelegate.runtime._vkdelegate and vkdelegate.eager._C against that machine's Python and torch
# (the runtime core comes built in the bundle), then runs benchmarks/eager_latency.py (the eager device
# against PyTorch CUDA eager on the same GPU) and benchmarks/eager_samples.py (every registry sample
# eagerly against the CPU). Writes OUT/eager_latency.{txt,json} and OUT/eager_samples.{txt,json}.
set -euo pipefail
out=${1:?usage: eager_gpu.sh OUT [--build-only]}
build_only=${2:-}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$root/benchmarks/bundle_eager
work=/tmp/vkd_eager
rm -rf "$work" && mkdir -p "$work/pkg"
tar -xJf "$bundle/tree.tar.xz" -C "$work"
tar -xJf "$bundle/lib.tar.xz" -C "$work"
ln -s "$root" "$work/pkg/vkdelegate"
py=python3
ext=$($py -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
pyinc=$($py -c "import sysconfig; print(sysconfig.get_paths()['include'])")
torch_dir=$($py -c "import os, torch; print(os.path.dirname(torch.__file__))")
abi=$($py -c "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))")
inc=(-I"$root/runtime" -I"$work/include/generated" -isystem "$pyinc" -isystem "$work/include/pybind11_root"
     -isystem "$work/include/fb" -isystem "$work/include/et"
     -isystem "$work/include/et/executorch/runtime/core/portable_type/c10")
flags=(-O2 -std=gnu++17 -fPIC -fvisibility=hidden -DC10_USING_CUSTOM_GENERATED_MACROS -DET_EVENT_TRACER_ENABLED
       -DET_USE_THREADPOOL)
start=$SECONDS
c++ "${flags[@]}" "${inc[@]}" -c "$root/runtime/python/module.cpp" -o "$work/module.o" &
c++ "${flags[@]}" "${inc[@]}" -c "$root/eager/csrc/runtime_table.cpp" -o "$work/runtime_table.o" &
c++ -O2 -std=gnu++17 -fPIC -fvisibility=hidden -D_GLIBCXX_USE_CXX11_ABI=$abi -isystem "$torch_dir/include" \
    -isystem "$torch_dir/include/torch/csrc/api/include" -isystem "$pyinc" -isystem "$work/include/pybind11_root" \
    -c "$root/eager/csrc/vulkan_device.cpp" -o "$work/vulkan_device.o" &
wait %1
wait %2
wait %3
cp "$work"/lib/*.so "$root/runtime/"
c++ -shared -o "$root/runtime/_vkdelegate$ext" "$work/module.o" "$work/runtime_table.o" \
    "$root/runtime/libvkdelegate_backend.so" "$root/runtime/libexecutorch.so" "$root/runtime/libexecutorch_threadpool.so" \
    -Wl,-rpath,'$ORIGIN'
c++ -shared -o "$root/eager/_C$ext" "$work/vulkan_device.o" -Wl,-rpath,"$torch_dir/lib" \
    "$torch_dir/lib/libc10.so" "$torch_dir/lib/libtorch_cpu.so"
echo "[eager_gpu] built the two modules for $($py -V) and torch $($py -c 'import torch; print(torch.__version__)')" \
     "in $((SECONDS - start)) s"
# --build-only: the modules alone (then `source benchmarks/gpu_vulkan.sh` and PYTHONPATH=/tmp/vkd_eager/pkg:/tmp/vkd_eager/site
# run anything that imports vkdelegate.runtime or vkdelegate.eager, the tests that need no executorch runtime).
if [ "$build_only" = --build-only ]; then exit 0; fi
# EAGER_GPU_LOCAL=1: this machine's own Vulkan (a dry run of the script off the GPU machine).
[ -n "${EAGER_GPU_LOCAL:-}" ] || source "$root/benchmarks/gpu_vulkan.sh"
export PYTHONPATH=$work/pkg:$work/site${PYTHONPATH:+:$PYTHONPATH}
cd "$root"
timeout 300 $py benchmarks/eager_latency.py --json "$out/eager_latency.json" > "$out/eager_latency.txt" 2>&1 || \
  echo "[eager_gpu] eager_latency.py exited with $?"
grep -v Warning "$out/eager_latency.txt" | tail -12
timeout 200 $py benchmarks/eager_samples.py --json "$out/eager_samples.json" > "$out/eager_samples.txt" 2>&1 || true
tail -5 "$out/eager_samples.txt"
