#!/usr/bin/env bash
# On a GPU machine, from the repository root, with .gpu-carry/ from
# scripts/gpu/prepare.sh: the CUDA path's correctness tests (stories260K's
# golden text, the logits of 64 steps against the CPU, quantized weights too)
# and the speed of the 110m and 1b shapes (110m in Q8_0 and Q4_K_M, 1b in
# Q4_K_M too) (quill-run --bench --device cuda; 110m-thread-rows is
# 110m with --no-warp-reductions, for the A/B; 110m also runs with
# --no-cuda-graphs), and the time per kernel (--profile) of 110m and 1b. Everything it
# prints also goes to $OUT (or ./gpu-out) for the device tool to bring back.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
carry=$PWD/.gpu-carry
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The GPU tests fail, rather than skip, where the driver or GPU is missing.
export QUILL_BIN_DIR=$carry/bin QUILL_GPU_ARTIFACTS=$carry/artifacts QUILL_REQUIRE_GPU=1
log=$out/check.log
say() { echo "$@" | tee -a "$log"; }

: > "$log"
say "== $(date -u +%FT%TZ) $(uname -m)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee -a "$log"
status=0

say "== correctness (CudaOnGpu.*, CudaQuantizedOnGpu.*)"
"$carry/bin/quill-e2e-tests" --gtest_filter='CudaOnGpu.*:*CudaQuantizedOnGpu.*' 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

for shape in 110m 110m-thread-rows 110m-q8_0 110m-q4_k_m 1b 1b-q4_k_m; do
  say "== $shape"
  artifact=/tmp/$shape-cuda.qm
  python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(lzma.open(sys.argv[1])), open(sys.argv[2], 'wb'), 1 << 24)" \
    "$carry/artifacts/$shape-cuda.qm.xz.xz" "$artifact" || { status=1; continue; }
  "$carry/bin/quill-run" "$artifact" --device cuda -n 16 --temp 0 --verbose 2>&1 | tail -n 6 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  "$carry/bin/quill-run" "$artifact" --device cuda --bench 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  "$carry/bin/quill-run" "$artifact" --device cuda --bench --json > "$out/bench-$shape.json" 2>> "$log" ||
    status=1
  if [ "$shape" = 110m ] || [ "$shape" = 1b ] || [ "$shape" = 110m-q4_k_m ]; then
    say "== $shape, time per kernel (--profile: launched one by one, each between events)"
    "$carry/bin/quill-run" "$artifact" --device cuda --profile -n 64 --temp 0 2>&1 >/dev/null |
      tee -a "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  fi
  if [ "$shape" = 110m ]; then
    say "== $shape, kernels launched one by one (--no-cuda-graphs)"
    "$carry/bin/quill-run" "$artifact" --device cuda --bench --no-cuda-graphs 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  fi
  rm -f "$artifact"
done
say "== status $status"
exit $status
