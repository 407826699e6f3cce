#!/usr/bin/env bash
# The runtime for 64-bit ARM Linux, built here and run here under qemu:
#   bash scripts/cross_arm64.sh build        libvkdelegate_backend.so and vkdelegate_runner for aarch64
#                                            in build/arm64/out, beside the aarch64 wheel's libexecutorch*.so
#   bash scripts/cross_arm64.sh run ARGS...  that runner under qemu-aarch64 on ARM64 lavapipe, e.g.
#                                            run --model mlp.pte --iters 3
# What it uses (nothing of the machine's own package setup changes but the two cross packages):
#   - Debian 12's g++-aarch64-linux-gnu and qemu-user (apt-get install, as scripts/setup.sh does);
#   - a sysroot under .cross/arm64/sysroot: Debian 12 arm64 packages (libc, libstdc++, lavapipe and what
#     it links, the Vulkan loader, zlib and the Vulkan/flatbuffers headers), fetched with a private apt
#     list and unpacked with dpkg -x;
#   - the aarch64 executorch wheel of the installed version (pip download), for its libexecutorch.so,
#     headers and CMake config.
# The shaders are compiled by the host's glslc: SPIR-V is the same on every CPU. The runner finds its
# libraries beside itself ($ORIGIN); qemu's -L makes the guest's /usr/... paths (the dynamic loader,
# the ICD file and the driver it names) resolve inside the sysroot.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
ROOT="$PWD/.cross/arm64"
SYSROOT="$ROOT/sysroot"
BUILD_DIR=$(realpath -m "${VKDELEGATE_ARM64_BUILD_DIR:-build/arm64}")
OUT="$BUILD_DIR/out"
# Debian 12 arm64: the runtime's libraries (lavapipe and its dependencies, the validation layer the
# tests turn on) and the build's headers.
PACKAGES="libc6 libstdc++6 libgcc-s1 zlib1g zlib1g-dev libvulkan1 libvulkan-dev libflatbuffers-dev
  vulkan-validationlayers mesa-vulkan-drivers libllvm15 libdrm2 libdrm-amdgpu1 libelf1 libexpat1 libffi8 libwayland-client0
  libx11-6 libx11-xcb1 libxau6 libxcb-dri3-0 libxcb-present0 libxcb-randr0 libxcb-shm0 libxcb-sync1
  libxcb-xfixes0 libxcb1 libxdmcp6 libxml2 libxshmfence1 libz3-4 libzstd1 libedit2 libtinfo6 libbsd0
  libmd0 libicu72 liblzma5"

need_tools() {
  local missing="" sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  for p in g++-aarch64-linux-gnu qemu-user; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    echo "[arm64] installing Debian packages:$missing"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
}

fetch_sysroot() {
  [ "$(cat "$SYSROOT/.complete" 2>/dev/null)" = "$(echo $PACKAGES)" ] && return
  local apt="$ROOT/apt" mirror
  mirror="$(grep -hoE '^URIs: *\S+/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | awk '{print $2}')"
  mirror="${mirror:-http://deb.debian.org/debian}"
  rm -rf "$apt" "$SYSROOT"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$SYSROOT"
  echo "deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm main" \
    >"$apt/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Dir::State::status=/dev/null
              -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o APT::Sandbox::User=root)
  echo "[arm64] fetching the arm64 sysroot (Debian 12 packages)"
  apt-get "${opts[@]}" update -qq
  # shellcheck disable=SC2086
  (cd "$apt/debs" && apt-get "${opts[@]}" download $PACKAGES >/dev/null)
  for deb in "$apt"/debs/*.deb; do dpkg -x "$deb" "$SYSROOT"; done
  rm -rf "$apt"
  echo $PACKAGES >"$SYSROOT/.complete"
}

fetch_executorch() {
  [ -f "$ROOT/executorch/.complete" ] && return
  local version
  version=$("$PYTHON" -c "import executorch.version as v; print(v.__version__.split('+')[0])")
  echo "[arm64] fetching the aarch64 executorch $version wheel"
  rm -rf "$ROOT/wheel" "$ROOT/executorch"
  "$PYTHON" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_28_aarch64 --python-version 3.11 "executorch==$version" -d "$ROOT/wheel"
  "$PYTHON" - "$ROOT" <<'PY'
import glob, sys, zipfile
root = sys.argv[1]
with zipfile.ZipFile(glob.glob(f"{root}/wheel/*.whl")[0]) as wheel:
    for name in wheel.namelist():
        if name.startswith(("executorch/lib/", "executorch/include/", "executorch/share/")):
            wheel.extract(name, root)
PY
  rm -rf "$ROOT/wheel"
  touch "$ROOT/executorch/.complete"
}

build() {
  need_tools
  fetch_sysroot
  fetch_executorch
  local cmake_bin flatbuffers_dir glslc=${VKDELEGATE_GLSLC:-}
  cmake_bin=$("$PYTHON" -c "import cmake, os; print(os.path.join(cmake.CMAKE_BIN_DIR, 'cmake'))")
  # The host's flatbuffers config: its flatc runs here (the headers come from the sysroot, same version).
  flatbuffers_dir=$(dirname "$(find /usr/lib -name FlatBuffersConfig.cmake -path '*x86_64*' | head -1)")
  if [ -z "$glslc" ] && [ -x .glslc/glslc ]; then glslc="$PWD/.glslc/glslc"; fi
  "$cmake_bin" -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" -DVKDELEGATE_SYSROOT="$SYSROOT" \
    -DVKDELEGATE_PYTHON=OFF -Dexecutorch_DIR="$ROOT/executorch/share/cmake" \
    -DFlatBuffers_DIR="$flatbuffers_dir" -DPython3_EXECUTABLE="$(command -v "$PYTHON")" \
    -DVKDELEGATE_OUTPUT_DIR="$OUT" ${glslc:+-DVKDELEGATE_GLSLC="$glslc"} >/dev/null
  "$cmake_bin" --build "$BUILD_DIR" -j "$(nproc)"
  cp "$ROOT"/executorch/lib/libexecutorch.so "$ROOT"/executorch/lib/libexecutorch_kernels_optimized.so \
    "$ROOT"/executorch/lib/libexecutorch_threadpool.so "$OUT/"
  file "$OUT/vkdelegate_runner" "$OUT/libvkdelegate_backend.so" | sed 's/, BuildID.*//'
}

run() {
  [ -x "$OUT/vkdelegate_runner" ] || { echo "no $OUT/vkdelegate_runner: run '$0 build' first" >&2; exit 1; }
  VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.aarch64.json exec qemu-aarch64 -L "$SYSROOT" "$OUT/vkdelegate_runner" "$@"
}

case "${1:-}" in
  build) build ;;
  run) shift; run "$@" ;;
  *) echo "usage: bash scripts/cross_arm64.sh build | run RUNNER_ARGS..." >&2; exit 2 ;;
esac
