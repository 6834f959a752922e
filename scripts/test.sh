#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, end to end,
# lit) through ctest; then the sanitizer job (the runtime's tests again under
# ASan + UBSan and under TSan) and a fixed-seed fuzz smoke of the parsers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${QUILL_JOBS:-2}"
cd ..
bash scripts/sanitize.sh
# The parsers' fuzz targets, a fixed smoke run each (ASan + UBSan).
bash scripts/fuzz.sh --smoke
