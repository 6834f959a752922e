#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, end to end,
# lit) through ctest, then a fixed-seed fuzz smoke of the parsers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${QUILL_JOBS:-2}"
# The parsers' fuzz targets, a fixed smoke run each (ASan + UBSan).
cd ..
bash scripts/fuzz.sh --smoke
