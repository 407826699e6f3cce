#!/usr/bin/env bash
# Prints the path of a glslc that compiles GL_KHR_cooperative_matrix and
# GL_EXT_integer_dot_product shaders. Debian 12's glslc (shaderc 2023.2) cannot;
# Debian 13's (2025.2) can, and runs here through its own dynamic loader. We take
# it from the trixie suite with a private apt source list (the machine's own
# sources are left alone) and unpack it under .glslc/ in this checkout.
# Prints nothing and exits 1 when neither works (the build then leaves those
# shaders out and the runtime takes its fallbacks).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD/.glslc"
WRAPPER="$ROOT/glslc"

probe() {
  local glslc="$1" dir
  dir="$(mktemp -d)"
  cat >"$dir/probe.comp" <<'GLSL'
#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_integer_dot_product : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(binding = 0) buffer B { int x[]; };
void main() {
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
  x[0] = dotEXT(ivec4(1), ivec4(2));
}
GLSL
  "$glslc" --target-env=vulkan1.3 -o "$dir/probe.spv" "$dir/probe.comp" >/dev/null 2>&1
  local rc=$?
  rm -rf "$dir"
  return $rc
}

for candidate in "${VKDELEGATE_GLSLC:-}" "$(command -v glslc || true)" "$WRAPPER"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] && probe "$candidate"; then
    echo "$candidate"
    exit 0
  fi
done

# The machine's Debian mirror, from its deb822 or one-line sources.
mirror="$(grep -hoE '^URIs: *\S+/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | awk '{print $2}')"
if [ -z "$mirror" ]; then
  mirror="$(grep -hoE '^deb +(\[[^]]*\] +)?\S+/debian/? ' /etc/apt/sources.list 2>/dev/null | head -1 | awk '{print $NF}')"
fi
mirror="${mirror:-http://deb.debian.org/debian}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" >"$work/sources.list"
APT_OPTS=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
          -o APT::Sandbox::User=root)
{
  apt-get "${APT_OPTS[@]}" update -qq &&
    (cd "$work/debs" && apt-get "${APT_OPTS[@]}" download glslc libshaderc1 libc6 libstdc++6 libgcc-s1)
} >&2 || { echo "[fetch_glslc] could not download trixie's glslc" >&2; exit 1; }

rm -rf "$ROOT"
mkdir -p "$ROOT/root"
for deb in "$work"/debs/*.deb; do dpkg -x "$deb" "$ROOT/root"; done
cat >"$WRAPPER" <<SH
#!/bin/sh
# Debian 13's glslc with its own libc, from scripts/fetch_glslc.sh.
L="$ROOT/root/usr/lib/x86_64-linux-gnu"
exec "\$L/ld-linux-x86-64.so.2" --library-path "\$L" "$ROOT/root/usr/bin/glslc" "\$@"
SH
chmod +x "$WRAPPER"
if probe "$WRAPPER"; then
  echo "$WRAPPER"
  exit 0
fi
echo "[fetch_glslc] trixie's glslc did not pass the probe compile" >&2
exit 1
