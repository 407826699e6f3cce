#!/usr/bin/env bash
# Downloads (here, once) the Debian packages the GPU machine lacks for Vulkan:
#   .gl2/    the Vulkan loader and glvnd/EGL libraries, unpacked over / there
#   .gltools/ vulkaninfo and the Khronos validation layer, unpacked into a private prefix (the layer
#            Debian 13's, 1.4.309: Debian 12's 1.3.239 knows neither VK_KHR_cooperative_matrix's feature
#            structure nor its SPIR-V capability, so it reported its own age, not our errors);
#   .gltools/vulkaninfo_libs/ the libraries vulkaninfo links that the GPU machine lacks
#            (libwayland-client.so.0 and the X11/xcb ones beside it), seen by vulkaninfo alone
# Both folders are git-ignored and travel with `carry`.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
lists=/tmp/amd64-lists
mkdir -p .gl2 .gltools/vulkaninfo_libs "$lists/partial"
o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$lists"
apt-get $o update >/dev/null
(cd .gl2 && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null 2>&1)
(cd .gltools && rm -f vulkan-validationlayers_*.deb && apt-get $o download vulkan-tools >/dev/null 2>&1)
# The layer from trixie through a private source list (the machine's own sources are left alone; as
# scripts/fetch_glslc.sh does). It needs glibc 2.38 and GLIBCXX 3.4.32 there (the GPU machine has 2.39, 3.4.33).
trixie=/tmp/trixie-lists
mkdir -p "$trixie/lists/partial" "$trixie/cache/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  > "$trixie/sources.list"
t="-oDir::Etc::SourceList=$trixie/sources.list -oDir::Etc::SourceParts=/dev/null -oDir::State::Lists=$trixie/lists
   -oDir::Cache=$trixie/cache -oAPT::Sandbox::User=root -oAPT::Architecture=amd64"
apt-get $t update >/dev/null
(cd .gltools && apt-get $t download vulkan-validationlayers >/dev/null 2>&1)
# vulkan-tools' Depends beyond libc, libstdc++ and the loader, and theirs (ldd vulkaninfo).
(cd .gltools/vulkaninfo_libs && apt-get $o download libwayland-client0 libffi8 libx11-6 libx11-data libxcb1 \
  libxau6 libxdmcp6 libbsd0 libmd0 >/dev/null 2>&1)
# Epoch colons arrive as %3a in the names: plain names travel anywhere.
for f in .gltools/vulkaninfo_libs/*%3a*; do [ -e "$f" ] && mv "$f" "${f//%3a/_}"; done
ls .gl2 .gltools .gltools/vulkaninfo_libs
