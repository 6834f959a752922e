#!/usr/bin/env bash
# Quill beside llama.cpp on the same GGUF files, in one run, interleaved.
#
#   scripts/bench-vs-llamacpp.sh LLAMA_BIN_DIR [SHAPE...]   (default: 110m)
#
# LLAMA_BIN_DIR holds llama.cpp's llama-bench and llama-quantize (build them
# from a llama.cpp checkout:
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
#     -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF \
#     -DBUILD_SHARED_LIBS=OFF
#   ninja -C build llama-bench llama-quantize).
# For each shape: quill-synth writes an F32 GGUF (separate classifier) with
# the Llama 2 tokenizer's vocabulary, llama-quantize writes F16, Q8_0, Q4_0
# and Q4_K_M from it,
# quill-compile compiles every file. Then ROUNDS rounds (default 3) run, per
# type, llama-bench (pp PROMPT, tg DECODE) and quill-run --bench with the
# same lengths and THREADS threads (default 2), one after the other, so both
# see the same machine; quill-run's own read-bandwidth probe is reported
# beside it. Prints a Markdown table of medians (with ranges).
# Environment: WORK (default /tmp/quill-vs-llamacpp), ROUNDS, THREADS,
# PROMPT (128), DECODE (64), TYPES ("f32 F16 Q8_0 Q4_0 Q4_K_M"),
# QUILL_FLAGS (more quill-compile flags, e.g. "--kv-type f16", the cache
# type llama.cpp takes by default; artifacts are kept in WORK by name, so
# give each set of flags its own WORK).
set -euo pipefail

if [[ $# -lt 1 || ! -x "$1/llama-bench" ]]; then
  echo "usage: $0 LLAMA_BIN_DIR [SHAPE...] (LLAMA_BIN_DIR must hold llama-bench)" >&2
  exit 2
fi
LLAMA=$(cd "$1" && pwd)
shift
SHAPES=("${@:-110m}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
QUILL=$ROOT/build/bin
WORK=${WORK:-/tmp/quill-vs-llamacpp}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-2}
PROMPT=${PROMPT:-128}
DECODE=${DECODE:-64}
TYPES=(${TYPES:-f32 F16 Q8_0 Q4_0 Q4_K_M})
TOKENIZER=${TOKENIZER:-$ROOT/../shared/models/llama2-tokenizer/tokenizer.bin}
mkdir -p "$WORK"
RESULTS=$WORK/results.jsonl
: >"$RESULTS"

for shape in "${SHAPES[@]}"; do
  base=$WORK/$shape
  [[ -f $base-f32.gguf ]] ||
    "$QUILL/quill-synth" --shape "$shape" --separate-classifier --format gguf \
      --vocab-from "$TOKENIZER" -o "$base-f32.gguf" >&2
  for type in "${TYPES[@]}"; do
    [[ $type == f32 || -f $base-$type.gguf ]] ||
      "$LLAMA/llama-quantize" "$base-f32.gguf" "$base-$type.gguf" "$type" >"$base-$type-quantize.log" 2>&1
    [[ -f $base-$type.qm ]] || "$QUILL/quill-compile" "$base-$type.gguf" -o "$base-$type.qm" ${QUILL_FLAGS:-}
  done
done

for round in $(seq "$ROUNDS"); do
  for shape in "${SHAPES[@]}"; do
    for type in "${TYPES[@]}"; do
      base=$WORK/$shape-$type
      echo "round $round: $shape $type" >&2
      "$LLAMA/llama-bench" -m "$base.gguf" -t "$THREADS" -p "$PROMPT" -n "$DECODE" -r 1 -o jsonl 2>/dev/null |
        python3 -c 'import json,sys
for line in sys.stdin:
    r = json.loads(line)
    kind = "prefill" if r["n_gen"] == 0 else "decode"
    print(json.dumps({"engine": "llama.cpp", "shape": sys.argv[1], "type": sys.argv[2], kind: r["avg_ts"]}))' \
          "$shape" "$type" >>"$RESULTS"
      "$QUILL/quill-run" "$base.qm" --bench --json --threads "$THREADS" --bench-prompt "$PROMPT" \
        --bench-decode "$DECODE" |
        python3 -c 'import json,sys
r = json.load(sys.stdin)
print(json.dumps({"engine": "quill", "shape": sys.argv[1], "type": sys.argv[2],
                  "prefill": r["prefill_tokens_per_s"], "decode": r["decode_tokens_per_s"],
                  "probe": r["bandwidth_gb_s"], "stream": r["weight_bytes_per_token"] * r["decode_tokens_per_s"] / 1e9}))' \
          "$shape" "$type" >>"$RESULTS"
    done
  done
done

python3 - "$RESULTS" "${SHAPES[*]}" "${TYPES[*]}" "$THREADS" "$PROMPT" "$DECODE" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
shapes, types = sys.argv[2].split(), sys.argv[3].split()
threads, prompt, decode = sys.argv[4:7]
def figures(shape, type_, engine, key):
    return [r[key] for r in rows if r['shape'] == shape and r['type'] == type_ and
            r['engine'] == engine and key in r]
def cell(values, digits=1):
    if not values:
        return '-'
    m = statistics.median(values)
    return f'{m:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})' if len(values) > 1 else f'{m:.{digits}f}'
def ratio(a, b):
    return f'{statistics.median(a) / statistics.median(b):.2f}x' if a and b else '-'
print(f'{threads} threads, pp{prompt} / tg{decode}; medians (ranges) of the rounds, tokens/s')
print()
print('| shape | type | Quill decode | llama.cpp decode | ratio | Quill decode GB/s (read probe) | Quill prefill | llama.cpp prefill | ratio |')
print('|---|---|---|---|---|---|---|---|---|')
for s in shapes:
    for t in types:
        qd, ld = figures(s, t, 'quill', 'decode'), figures(s, t, 'llama.cpp', 'decode')
        qp, lp = figures(s, t, 'quill', 'prefill'), figures(s, t, 'llama.cpp', 'prefill')
        stream, probe = figures(s, t, 'quill', 'stream'), figures(s, t, 'quill', 'probe')
        print(f'| {s} | {t} | {cell(qd)} | {cell(ld)} | {ratio(qd, ld)} | '
              f'{cell(stream)} ({cell(probe)}) | {cell(qp, 0)} | {cell(lp, 0)} | {ratio(qp, lp)} |')
EOF
