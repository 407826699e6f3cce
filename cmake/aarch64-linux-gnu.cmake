# Cross build for 64-bit ARM Linux with Debian's cross compilers (g++-aarch64-linux-gnu):
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DVKDELEGATE_SYSROOT=<arm64 debs unpacked> ...
# scripts/cross_arm64.sh fetches the sysroot (Debian 12 arm64 packages) and the aarch64 executorch wheel
# and runs this. Programs (glslc, flatc, python) are the host's: SPIR-V is the same on every CPU.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Headers and libraries of the target (zlib, Vulkan and flatbuffers headers) from the sysroot;
# packages (executorch's config) wherever -D..._DIR points.
set(CMAKE_FIND_ROOT_PATH "${VKDELEGATE_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES VKDELEGATE_SYSROOT)
