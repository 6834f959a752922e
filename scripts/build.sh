#!/usr/bin/env bash
# Configures (once) and builds Quill in build/ as a Release build; tools land in build/bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build -j "${QUILL_JOBS:-2}"
