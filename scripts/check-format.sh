#!/usr/bin/env bash
# Fails when a tracked C++ file is not formatted as .clang-format says
# (clang-format-22, installed by setup.sh). With --fix, formats them.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=(--dry-run -Werror)
[ "${1:-}" = "--fix" ] && mode=(-i)
git ls-files '*.cpp' '*.h' | xargs clang-format-22 "${mode[@]}"
echo "check-format: $(git ls-files '*.cpp' '*.h' | wc -l) files formatted as .clang-format says"
