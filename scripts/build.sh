#!/usr/bin/env bash
# Configures (once) and builds Quill in build/ as a Release build; tools land in build/bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# ccache keys on paths relative to the checkout, so a fresh clone elsewhere
# (CI's) reuses what an earlier build compiled.
export CCACHE_BASEDIR="$PWD"
if [ ! -f build/build.ninja ]; then
  # ccache (installed by setup.sh) makes a rebuild after a fresh clone cheap.
  launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
fi
cmake --build build -j "${QUILL_JOBS:-2}"
