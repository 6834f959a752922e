// The tokenizer stored in a GGUF file's metadata, converted to the form the
// runtime reads.
#pragma once

#include "runtime/support/Error.h"
#include "runtime/tokenizer/TokenizerFormat.h"

namespace quill {

class GgufFile;

/// Converts tokenizer.ggml.*: model "llama" (tokens, scores, token_type; the
/// SentencePiece-style vocabulary with <0xNN> byte fallback) or "gpt2"
/// (tokens, merges "left right", token_type, and tokenizer.ggml.pre naming
/// the pre-tokenizer), with the BOS, EOS and unk ids. Errors name the file.
ErrorOr<TokenizerData> tokenizerFromGguf(const GgufFile &file);

} // namespace quill
