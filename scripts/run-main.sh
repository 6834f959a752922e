#!/usr/bin/env bash
# The main job: build Quill, compile a model ahead of time, and generate.
#   MODEL=path/to/model.bin [TOKENIZER=path/to/tokenizer.bin] [PROMPT=...]
# Without MODEL: the stories260K model in ../shared/models when present, else
# a small synthetic model that quill-synth writes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
shared="$(cd .. && pwd)/shared/models"
mkdir -p build/models
if [ -n "${MODEL:-}" ]; then
  model="$MODEL"
  tokenizer="${TOKENIZER:-$shared/llama2-tokenizer/tokenizer.bin}"
elif [ -f "$shared/stories260K/stories260K.bin" ]; then
  model="$shared/stories260K/stories260K.bin"
  tokenizer="${TOKENIZER:-$shared/stories260K/tok512.bin}"
else
  echo "run-main: ../shared/models is absent; using a synthetic model" >&2
  model=build/models/synthetic-tiny.bin
  tokenizer=build/models/synthetic-tiny-tokenizer.bin
  build/bin/quill-synth --shape tiny -o "$model" --tokenizer-out "$tokenizer"
fi
artifact="build/models/$(basename "${model%.*}").qm"
echo "+ quill-compile $model --tokenizer $tokenizer -o $artifact" >&2
build/bin/quill-compile "$model" --tokenizer "$tokenizer" -o "$artifact"
echo "+ quill-run $artifact -p \"${PROMPT:-Once upon a time}\" -n 200 --temp 0" >&2
build/bin/quill-run "$artifact" -p "${PROMPT:-Once upon a time}" -n 200 --temp 0 --verbose
