#!/usr/bin/env bash
# Builds the libFuzzer targets of the parsers (tests/fuzz) with clang-22,
# ASan and UBSan in build-fuzz/, seeds them from stories260K, and runs each
# for SECONDS (default 60). Crashes are kept under
# tests/fuzz/regressions/<target>/; exits 1 if any target crashed.
# The artifact seed needs quill-compile (QUILL_COMPILE, default build/bin/).
# `scripts/fuzz.sh --smoke` (what scripts/test.sh runs): a fixed number of
# inputs from a fixed seed per target, so that the smoke is the same run
# every time, and a crash it finds is found again. Target names after the
# first argument run only those (`scripts/fuzz.sh 600 gguf json`).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-max_total_time="${1:-60}")
if [ "${1:-}" = "--smoke" ]; then
  limit=(-runs="${QUILL_FUZZ_SMOKE_RUNS:-20000}" -seed=1)
fi
root=$PWD
models=$root/../shared/models

packages=(clang-22 libfuzzer-22-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

targets=(gguf llama2c safetensors hf-tokenizer tokenizer-bin artifact json chat-template
         completion-request tokenizer-codec run-options batch-file)
all_targets=("${targets[@]}")
if [ $# -gt 1 ]; then
  for t in "${@:2}"; do
    [[ " ${targets[*]} " == *" $t "* ]] || { echo "fuzz: no target $t (${targets[*]})"; exit 2; }
  done
  targets=("${@:2}")
fi
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR="$root"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 -DQUILL_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
  "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j "${QUILL_FUZZ_JOBS:-2}" --target "${targets[@]/#/quill-fuzz-}"

# Seeds: the shared stories260K files, and the tests' own regressions.
seeds=build-fuzz/seeds
rm -rf "$seeds"
# Every target's seed folder exists, so that a subset run writes all seeds.
for t in "${all_targets[@]}"; do mkdir -p "$seeds/$t" "tests/fuzz/regressions/$t"; done
seed() { [ -f "$2" ] && cp "$2" "$seeds/$1/"; return 0; }
seed gguf "$models/stories260K/stories260K.gguf"
seed llama2c "$models/stories260K/stories260K.bin"
seed llama2c "$models/stories260K/stories260K.v1.bin"
seed safetensors "$models/stories260K-hf/model.safetensors"
seed hf-tokenizer "$models/stories260K-hf/tokenizer.json"
seed tokenizer-bin "$models/stories260K/tok512.bin"
for f in config.json tokenizer.json tokenizer_config.json; do
  seed json "$models/stories260K-hf/$f"
done
for f in "$root"/../shared/templates/*.jinja; do seed chat-template "$f"; done
seed chat-template tests/chat/conversations.json
# Request bodies: the first byte picks the endpoint ('0' completions, '1' chat).
printf '0{"prompt":"hello","max_tokens":4,"temperature":0.5,"top_p":0.9,"stop":["a"],"logprobs":2}' \
  >"$seeds/completion-request/completion.json"
printf '1{"messages":[{"role":"user","content":"hi"}],"n":2,"stream":true,"logit_bias":{"3":-1}}' \
  >"$seeds/completion-request/chat.json"
printf '0{"prompt":[[1,4,5],[1,6]],"seed":7,"top_k":3,"min_p":0.1,"presence_penalty":1}' \
  >"$seeds/completion-request/token-prompts.json"
# Tokenizer codec: the first byte picks the tokenizer (and text or ids).
for pick in 0 1 2 3 4 5 7; do
  { printf "\\x$(printf %02x "$pick")"
    printf 'Once upon a time, caf\xc3\xa9 <|end|> 12345!\n\n  hello world'; } \
    >"$seeds/tokenizer-codec/pick-$pick.txt"
done
if [ -f "$models/stories260K/expected-greedy-200.txt" ]; then
  { printf '\x00'; cat "$models/stories260K/expected-greedy-200.txt"; } \
    >"$seeds/tokenizer-codec/story.txt"
fi
# quill-run's argv after the program name, NUL-separated.
printf '%s\0' m.qm --temp 0.7 --top-k 40 --top-p 0.9 --min-p 0.05 --seed 3 \
  >"$seeds/run-options/sampling.txt"
printf '%s\0' m.qm --repeat-penalty 1.1 --logit-bias 3=-inf --samplers 'top-k;temp' \
  --logprobs 2 --json >"$seeds/run-options/penalties.txt"
printf '%s\0' m.qm --beams 4 --length-penalty 0.5 --num-return 2 --batch 1,4 \
  >"$seeds/run-options/beams.txt"
printf 'Once upon a time\r\n\nhello\nworld\n' >"$seeds/batch-file/prompts.txt"
compile=${QUILL_COMPILE:-build/bin/quill-compile}
if [ -x "$compile" ] && [ -f "$models/stories260K/stories260K.bin" ]; then
  "$compile" "$models/stories260K/stories260K.bin" \
    --tokenizer="$models/stories260K/tok512.bin" -o "$seeds/artifact/stories260K.qart" \
    >/dev/null 2>&1 || echo "fuzz: no artifact seed (quill-compile failed)"
fi

failed=()
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus"
  log=build-fuzz/fuzz-$t.log
  if UBSAN_OPTIONS=print_stacktrace=1 build-fuzz/bin/quill-fuzz-$t "$corpus" "$seeds/$t" \
      "tests/fuzz/regressions/$t" "${limit[@]}" -rss_limit_mb=2048 \
      -artifact_prefix="tests/fuzz/regressions/$t/" >"$log" 2>&1; then
    echo "fuzz: $t: $(grep -E '^(#[0-9]+|Done)' "$log" | tail -1)"
  else
    echo "fuzz: $t CRASHED, see $log and tests/fuzz/regressions/$t/"
    failed+=("$t")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: crashes in ${failed[*]}"; exit 1; }
