"""docs/android.md's build path, checked as far as these machines can (no NDK, no phone): our
CMakeLists configures against an ExecuTorch built from source and installed (its config exports bare
target names: executorch, executorch_core, optimized_native_cpu_ops_lib, as an Android build of
ExecuTorch does) under a stand-in for the NDK's toolchain file (ANDROID, ANDROID_ABI=arm64-v8a, an
aarch64 compiler: Debian's cross g++ where the NDK's clang would be), and reaches our targets:
the shared and static backend libraries, the whole-archive link target and the runner."""
import os
import shutil
import subprocess

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STUB_TOOLCHAIN = """
set(ANDROID TRUE)
set(ANDROID_ABI arm64-v8a)
set(ANDROID_PLATFORM android-26)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
"""

# What ExecuTorch's install (tools/cmake/executorch-config.cmake) gives: static libraries, bare names.
STUB_EXECUTORCH = """
foreach(lib executorch_core executorch optimized_native_cpu_ops_lib)
  add_library(${lib} STATIC IMPORTED)
  set_target_properties(${lib} PROPERTIES IMPORTED_LOCATION "${CMAKE_CURRENT_LIST_DIR}/lib${lib}.a")
endforeach()
set(executorch_FOUND TRUE)
"""


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-g++") is None,
                    reason="no aarch64 cross compiler (scripts/cross_arm64.sh installs g++-aarch64-linux-gnu)")
def test_android_configure_reaches_our_targets(tmp_path):
    import cmake

    (tmp_path / "toolchain.cmake").write_text(STUB_TOOLCHAIN)
    (tmp_path / "et").mkdir()
    (tmp_path / "et" / "executorch-config.cmake").write_text(STUB_EXECUTORCH)
    build = tmp_path / "build"
    # Host-side inputs, as docs/android.md gives them: flatc and its headers (the same on every CPU), the
    # NDK's zlib (here a stand-in path: nothing is linked).
    flatbuffers = subprocess.run(["find", "/usr/lib", "-name", "FlatBuffersConfig.cmake", "-path", "*x86_64*"],
                                 capture_output=True, text=True).stdout.split()
    assert flatbuffers, "libflatbuffers-dev (scripts/setup.sh installs it)"
    r = subprocess.run([os.path.join(cmake.CMAKE_BIN_DIR, "cmake"), "-S", REPO_ROOT, "-B", str(build), "-G", "Ninja",
                        f"-DCMAKE_TOOLCHAIN_FILE={tmp_path / 'toolchain.cmake'}", "-DVKDELEGATE_PYTHON=OFF",
                        f"-Dexecutorch_DIR={tmp_path / 'et'}", "-DVULKAN_HEADERS=/usr/include",
                        f"-DFlatBuffers_DIR={os.path.dirname(flatbuffers[0])}",
                        f"-DZLIB_LIBRARY={tmp_path / 'libz.so'}", "-DZLIB_INCLUDE_DIR=/usr/include"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    ninja = (build / "build.ninja").read_text()
    for target in ("libvkdelegate_backend.so", "libvkdelegate_backend_static.a", "vkdelegate_runner"):
        assert f"out/{target}" in ninja, target
    assert "aarch64-linux-gnu-g++" in (build / "CMakeFiles" / "rules.ninja").read_text()
    # The runner links the source build's runtime and kernels; the backend its core.
    assert "libexecutorch_core.a" in ninja and "liboptimized_native_cpu_ops_lib.a" in ninja
    assert "_vkdelegate.cpython" not in ninja  # no Python module in this build
