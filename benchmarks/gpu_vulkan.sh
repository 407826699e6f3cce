# Sourced by the scripts that run on the GPU machine (run_gpu.sh, sweep_*.sh), from the repository
# root of the copied tree: the Vulkan loader from .gl2 unpacked over /, NVIDIA's driver and EGL
# vendor files, and (optional: leave .gltools out of carry when a large bundle needs the room)
# vulkaninfo and the validation layer from .gltools in a private prefix. benchmarks/fetch_gpu_loader.sh
# fetches both folders.
root=$(pwd)
for f in "$root"/.gl2/*.deb; do dpkg -x "$f" /; done
ldconfig
tools=/tmp/vktools
mkdir -p "$tools"
if [ -d "$root/.gltools" ]; then
  for f in "$root"/.gltools/*.deb; do dpkg -x "$f" "$tools"; done
fi
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export VK_LAYER_PATH=$tools/usr/share/vulkan/explicit_layer.d
export LD_LIBRARY_PATH=$tools/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
