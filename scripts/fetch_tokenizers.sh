#!/usr/bin/env bash
# Puts the C++ sources of pytorch_tokenizers (the tokenizer library ExecuTorch's LLM
# runners use) under .pytorch_tokenizers/ in this checkout, for vkdelegate_runner's
# --tokenizer (CMakeLists.txt builds them when they are there). The executorch wheel
# ships the headers only; PyPI's sdist has the sources. Only what the HF tokenizer
# (tokenizer.json) needs is unpacked: its sources, the headers, the llama.cpp unicode
# tables (byte-level pre-tokenization) and nlohmann/json's single header; RE2 comes
# from Debian (libre2-dev, scripts/setup.sh). The sdist is kept in a cache directory
# (VKDELEGATE_CACHE, default ~/.cache/vkdelegate) and checked against its sha256.
# Exits 1 with a message when it cannot (the runner is then built without --tokenizer).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=1.0.1
URL="https://files.pythonhosted.org/packages/0c/a7/d07ebde1011d704e4ab5c8fcb46fc71cb72fdf2c393f85202f7dfb8fd669/pytorch_tokenizers-$VERSION.tar.gz"
SHA256=19938c0efd5348fb0589610094c1c6bf6e055b20889f6250068d2b552a0b137b
DEST="$PWD/.pytorch_tokenizers"
CACHE="${VKDELEGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vkdelegate}"
ARCHIVE="$CACHE/pytorch_tokenizers-$VERSION.tar.gz"

if [ "$(cat "$DEST/.sha256" 2>/dev/null || true)" = "$SHA256" ]; then
  exit 0
fi
mkdir -p "$CACHE"
if ! echo "$SHA256  $ARCHIVE" | sha256sum -c --status 2>/dev/null; then
  echo "[fetch_tokenizers] downloading pytorch_tokenizers $VERSION (28.5 MB)" >&2
  curl -fsSL --retry 3 -o "$ARCHIVE.part" "$URL" ||
    { rm -f "$ARCHIVE.part"; echo "[fetch_tokenizers] could not download $URL" >&2; exit 1; }
  if ! echo "$SHA256  $ARCHIVE.part" | sha256sum -c --status; then
    rm -f "$ARCHIVE.part"
    echo "[fetch_tokenizers] $URL does not have the expected sha256 $SHA256" >&2
    exit 1
  fi
  mv "$ARCHIVE.part" "$ARCHIVE"
fi

top="pytorch_tokenizers-$VERSION"
members=(LICENSE include)
for f in hf_tokenizer bpe_tokenizer_base pre_tokenizer token_decoder normalizer regex re2_regex; do
  members+=("src/$f.cpp")
done
members+=(third-party/llama.cpp-unicode third-party/json/single_include third-party/json/LICENSE.MIT)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar -xzf "$ARCHIVE" -C "$work" "${members[@]/#/$top/}"
rm -rf "$DEST"
mv "$work/$top" "$DEST"
echo "$SHA256" >"$DEST/.sha256"
echo "[fetch_tokenizers] pytorch_tokenizers $VERSION sources in $DEST" >&2
