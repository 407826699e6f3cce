# Sourced by the scripts that run on the GPU machine (run_gpu.sh, sweep_*.sh), from any directory:
# the Vulkan loader from .gl2 unpacked over /, NVIDIA's driver and EGL vendor files, and (optional:
# leave .gltools out of carry when a large bundle needs the room) vulkaninfo and the validation layer
# from .gltools in a private prefix. benchmarks/fetch_gpu_loader.sh fetches both folders; they sit at
# the root of the copied tree, found upwards from this file (benchmarks/ or a bundle in it).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
while [ "$root" != / ] && [ ! -d "$root/.gl2" ]; do root=$(dirname "$root"); done
if [ ! -d "$root/.gl2" ]; then
  echo "gpu_vulkan.sh: no .gl2 folder above $(dirname "${BASH_SOURCE[0]}") (carry .gl2: benchmarks/fetch_gpu_loader.sh)" >&2
  return 1 2>/dev/null || exit 1
fi
for f in "$root"/.gl2/*.deb; do dpkg -x "$f" /; done
ldconfig
tools=/tmp/vktools
mkdir -p "$tools"
if [ -d "$root/.gltools" ]; then
  for f in "$root"/.gltools/*.deb; do dpkg -x "$f" "$tools"; done
  # vulkaninfo links libraries the GPU machine lacks (libwayland-client.so.0, X11's): Debian 12's,
  # seen by vulkaninfo alone through a wrapper, so that Python and torch keep the system's.
  if [ -d "$root/.gltools/vulkaninfo_libs" ]; then
    for f in "$root"/.gltools/vulkaninfo_libs/*.deb; do dpkg -x "$f" "$tools/vulkaninfo_libs"; done
  fi
  mkdir -p "$tools/bin"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s:${LD_LIBRARY_PATH:-} exec %s "$@"\n' \
    "$tools/vulkaninfo_libs/usr/lib/x86_64-linux-gnu" "$tools/usr/bin/vulkaninfo" > "$tools/bin/vulkaninfo"
  chmod +x "$tools/bin/vulkaninfo"
  export PATH=$tools/bin:$PATH
fi
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export VK_LAYER_PATH=$tools/usr/share/vulkan/explicit_layer.d
export LD_LIBRARY_PATH=$tools/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
