#!/usr/bin/env bash
# Downloads (here, once) the Debian packages the GPU machine lacks for Vulkan:
#   .gl2/    the Vulkan loader and glvnd/EGL libraries, unpacked over / there
#   .gltools/ vulkaninfo and the Khronos validation layer, unpacked into a private prefix
# Both folders are git-ignored and travel with `carry`.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
lists=/tmp/amd64-lists
mkdir -p .gl2 .gltools "$lists/partial"
o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$lists"
apt-get $o update >/dev/null
(cd .gl2 && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null 2>&1)
(cd .gltools && apt-get $o download vulkan-tools vulkan-validationlayers >/dev/null 2>&1)
ls .gl2 .gltools
