#!/usr/bin/env bash
# gpu-sph in a web page (docs/web.md).
#   scripts/web.sh build DIR     writes the static page into DIR (index.html, the wasm and its glue)
#   scripts/web.sh serve [PORT]  builds into target/web and serves it on http://127.0.0.1:PORT (8000)
# Installs what it needs from the package registries: the wasm32 target (rustup) and
# wasm-bindgen-cli at the version Cargo.lock pins for the wasm-bindgen crate (cargo install).
set -euo pipefail
cd "$(dirname "$0")/.."

build() {
  local out="$1"
  rustup target list --installed | grep -qx wasm32-unknown-unknown ||
    rustup target add wasm32-unknown-unknown
  # The CLI must be the version of the crate the wasm was built with: wasm-bindgen refuses
  # another one.
  local want
  want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
  if [ "$(wasm-bindgen --version 2>/dev/null | cut -d' ' -f2)" != "$want" ]; then
    echo "web.sh: installing wasm-bindgen-cli $want" >&2
    cargo install --quiet wasm-bindgen-cli --version "$want"
  fi
  cargo build --quiet --release -p gpu-sph-web --target wasm32-unknown-unknown
  mkdir -p "$out"
  wasm-bindgen --target web --no-typescript --out-dir "$out" \
    target/wasm32-unknown-unknown/release/gpu_sph_web.wasm
  cp web/index.html "$out/"
  echo "web.sh: the page is in $out" >&2
}

case "${1:-}" in
  build)
    [ $# -eq 2 ] || { echo "usage: scripts/web.sh build DIR" >&2; exit 2; }
    build "$2"
    ;;
  serve)
    port="${2:-8000}"
    build target/web
    echo "web.sh: serving http://127.0.0.1:$port/ (Ctrl-C stops)" >&2
    exec python3 -m http.server --bind 127.0.0.1 --directory target/web "$port"
    ;;
  *)
    echo "usage: scripts/web.sh build DIR | scripts/web.sh serve [PORT]" >&2
    exit 2
    ;;
esac
