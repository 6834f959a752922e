#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, end to end,
# lit) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${QUILL_JOBS:-2}"
