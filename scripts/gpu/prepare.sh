#!/usr/bin/env bash
# Prepares .gpu-carry/ for scripts/gpu/check.sh on a GPU machine that has the
# CUDA driver but no LLVM 22 (so no quill-compile):
#   - the runtime's binaries and libtbb;
#   - stories260K, and a small model of 110m's warp shapes, compiled for CUDA
#     and for any x86-64-v3 (AVX2) CPU (the golden and logit tests);
#   - a model of rows of 256 quantized (q8_0, q4_0, q4_k_m) for CUDA and the
#     CPU (the quantized weights' logit tests);
#   - the 110m and 1b shapes compiled for CUDA (110m also with
#     --no-warp-reductions, and both quantized) from synthetic weights that repeat every 4096
#     values (a step's speed does not depend on the values; such artifacts
#     compress to about 10 MB), xz compressed twice.
# Run after scripts/build.sh; the folder stays under 60 MiB so the device tool
# can carry it (carry: [".gpu-carry"]).
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1
bin=build/bin
carry=.gpu-carry
shared=${QUILL_SHARED_DIR:-../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rm -rf "$carry"
mkdir -p "$carry/bin" "$carry/lib" "$carry/artifacts"
cp "$bin/quill-run" "$bin/quill-e2e-tests" "$carry/bin/"
strip "$carry/bin/"* 2>/dev/null || true
# The shared libraries quill-run needs beyond glibc and libstdc++.
for lib in $(ldd "$bin/quill-run" "$bin/quill-e2e-tests" | awk '/libtbb/ {print $3}' | sort -u); do
  cp -L "$lib" "$carry/lib/"
done

stories=$shared/models/stories260K
"$bin/quill-compile" "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" \
  --target=cuda -o "$carry/artifacts/stories260K-cuda.qm"
"$bin/quill-compile" "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" \
  --cpu x86-64-v3 -o "$carry/artifacts/stories260K-cpu.qm"
cp "$stories/expected-greedy-200.txt" "$carry/artifacts/"

# The warp-shape check (CudaOnGpu.WarpShapesMatchTheCpu): heads of 64, widths
# that are multiples of 128, peaked attention, for CUDA and the CPU.
"$bin/quill-synth" --dim 128 --hidden 384 --layers 2 --heads 2 --kv-heads 1 --vocab 512 \
  --seq-len 256 --separate-classifier --query-key-gain 3 -o "$work/gpu-warp.bin" \
  --tokenizer-out "$work/gpu-warp-tok.bin" > /dev/null
"$bin/quill-compile" "$work/gpu-warp.bin" --tokenizer "$work/gpu-warp-tok.bin" --target=cuda \
  -o "$carry/artifacts/gpu-warp-cuda.qm"
"$bin/quill-compile" "$work/gpu-warp.bin" --tokenizer "$work/gpu-warp-tok.bin" \
  --cpu x86-64-v3 --batch-rows 0 -o "$carry/artifacts/gpu-warp-cpu.qm"

# The quantized weights' check (CudaQuantizedOnGpu.*): rows of 256, each
# scheme for CUDA and the CPU.
"$bin/quill-synth" --dim 256 --hidden 768 --layers 2 --heads 4 --kv-heads 2 --vocab 512 \
  --seq-len 256 --separate-classifier --query-key-gain 3 -o "$work/gpu-quant.bin" \
  --tokenizer-out "$work/gpu-quant-tok.bin" > /dev/null
for scheme in q8_0 q4_0 q4_k_m; do
  "$bin/quill-compile" "$work/gpu-quant.bin" --tokenizer "$work/gpu-quant-tok.bin" --target=cuda \
    --quantize "$scheme" -o "$carry/artifacts/gpu-quant-$scheme-cuda.qm"
  "$bin/quill-compile" "$work/gpu-quant.bin" --tokenizer "$work/gpu-quant-tok.bin" \
    --cpu x86-64-v3 --batch-rows 0 --quantize "$scheme" -o "$carry/artifacts/gpu-quant-$scheme-cpu.qm"
done

# name, shape, extra quill-compile flags: 110m also as a thread per matvec
# row (--no-warp-reductions), for the A/B comparison.
while read -r name shape flags; do
  [ -f "$work/$shape.bin" ] ||
    "$bin/quill-synth" --shape "$shape" --period 4096 -o "$work/$shape.bin" \
      --tokenizer-out "$work/$shape-tok.bin" > /dev/null
  # shellcheck disable=SC2086 # flags are words
  "$bin/quill-compile" "$work/$shape.bin" --tokenizer "$work/$shape-tok.bin" --target=cuda \
    $flags -o "$work/$name-cuda.qm"
  # Twice: LZMA's matches are at most 273 bytes, so the first pass leaves a
  # stream of near-identical match codes that a second pass shrinks ~5x.
  xz -1 -T2 -c "$work/$name-cuda.qm" | xz -9 -T2 -c > "$carry/artifacts/$name-cuda.qm.xz.xz"
  rm "$work/$name-cuda.qm"
done <<'SHAPES'
110m 110m
110m-thread-rows 110m --no-warp-reductions
110m-q8_0 110m --quantize q8_0
110m-q4_k_m 110m --quantize q4_k_m
1b 1b
1b-q4_k_m 1b --quantize q4_k_m
SHAPES

size=$(du -sb "$carry" | cut -f1)
echo "prepare: $carry holds $((size / 1048576)) MiB"
if [ "$size" -gt $((60 * 1048576)) ]; then
  echo "prepare: $carry is over 60 MiB; the device tool carries 64 MiB at most" >&2
  exit 1
fi
