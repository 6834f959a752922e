#!/usr/bin/env bash
# Installs every Debian package Quill needs that is not yet present.
set -euo pipefail
packages=(cmake ninja-build g++ llvm-22-dev libmlir-22-dev mlir-22-tools clang-22 lld-22
          libtbb-dev googletest libgtest-dev libgmock-dev libbenchmark-dev python3
          clang-format-22 python3-jinja2 nlohmann-json3-dev libcpp-httplib-dev
          nginx nodejs ccache curl xz-utils graphviz chromium zlib1g-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The server tests' client: the `openai` npm package pinned in tests/serve.
serve="$(dirname "$0")/../tests/serve"
if [ ! -d "$serve/node_modules" ] || [ "$serve/package-lock.json" -nt "$serve/node_modules" ]; then
  echo "setup: npm ci in tests/serve"
  npm ci --prefix "$serve" --no-audit --no-fund >/dev/null
fi
