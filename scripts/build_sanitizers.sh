#!/usr/bin/env bash
# Builds the sanitizer targets in build/sanitize (scripts/setup.sh --tests runs it):
# the runtime with AddressSanitizer + UndefinedBehaviorSanitizer (the Python module and
# vkdelegate_runner) and the libFuzzer target vkdelegate_fuzz_blob, with clang-14
# (Debian 12: clang-14 libclang-rt-14-dev). tests/sanitizers.py runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
BUILD_DIR=$(realpath -m "${VKDELEGATE_SANITIZE_BUILD_DIR:-build/sanitize}")

# The same inputs setup.py gives CMake: the executorch wheel's and pybind11's CMake dirs,
# PyPI's cmake (Debian 12's is too old), the glslc setup picked.
read -r et_dir pybind_dir cmake_bin < <("$PYTHON" - <<'PY'
import importlib.util, os, pybind11, cmake
spec = importlib.util.find_spec("executorch")
print(os.path.join(list(spec.submodule_search_locations)[0], "share", "cmake"),
      pybind11.get_cmake_dir(), os.path.join(cmake.CMAKE_BIN_DIR, "cmake"))
PY
)
glslc=${VKDELEGATE_GLSLC:-}
if [ -z "$glslc" ] && [ -x .glslc/glslc ]; then glslc="$PWD/.glslc/glslc"; fi

"$cmake_bin" -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-14 -DVKDELEGATE_SANITIZE=ON \
  -Dexecutorch_DIR="$et_dir" -Dpybind11_DIR="$pybind_dir" -DPython3_EXECUTABLE="$(command -v "$PYTHON")" \
  -DVKDELEGATE_OUTPUT_DIR="$BUILD_DIR/out" ${glslc:+-DVKDELEGATE_GLSLC="$glslc"} >/dev/null
"$cmake_bin" --build "$BUILD_DIR" -j "$(nproc)" "$@"
