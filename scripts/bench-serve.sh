#!/usr/bin/env bash
# Load benchmark of quill-serve (prints figures, fails only on errors or
# leaked KV blocks): 64 streaming clients for DURATION seconds (default 60)
# on stories260K, then 16 on the 110m shape (quill-synth, the Llama 2
# tokenizer). Needs a build (scripts/build.sh) and ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-60}
bin=build/bin
work=build/bench-serve
mkdir -p "$work"
shared=../shared/models
if [ ! -f "$work/stories.qm" ]; then
  "$bin/quill-compile" "$shared/stories260K/stories260K.bin" \
    --tokenizer "$shared/stories260K/tok512.bin" -o "$work/stories.qm"
fi
if [ ! -f "$work/110m.qm" ]; then
  "$bin/quill-synth" --shape 110m -o "$work/110m.bin"
  "$bin/quill-compile" "$work/110m.bin" --tokenizer "$shared/llama2-tokenizer/tokenizer.bin" \
    --batch-rows 16 -o "$work/110m.qm"
  rm -f "$work/110m.bin"
fi
run() { # ARTIFACT CLIENTS MAX_TOKENS
  local log="$work/serve.log"
  "$bin/quill-serve" "$1" --port 0 --max-queue 256 2> "$log" &
  local pid=$!
  local url=""
  for _ in $(seq 600); do
    url=$(grep -o 'http://[0-9.]*:[0-9]*' "$log" || true)
    if [ -n "$url" ] && curl -sf "$url/health" >/dev/null; then break; fi
    sleep 0.1
  done
  echo "== $(basename "$1"): $2 clients, $duration s, $3 tokens per request"
  local status=0
  node tests/serve/load.mjs "$url" "$2" "$duration" "$3" || status=$?
  kill -TERM "$pid"; wait "$pid" || true
  return $status
}
run "$work/stories.qm" 64 128
run "$work/110m.qm" 16 64
