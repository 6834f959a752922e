// Hugging Face tokenizer.json files converted to the form the runtime reads.
#pragma once

#include "runtime/support/Error.h"
#include "runtime/tokenizer/TokenizerFormat.h"

#include <string>

namespace quill {

class JsonValue;

/// Converts a tokenizer.json whose model is BPE:
///  * with byte_fallback and the metaspace normalizer or pre-tokenizer (as
///    Llama 2 ships it): a SentencePiece-style vocabulary whose scores follow
///    the merge ranks (see HfTokenizer.cpp);
///  * with a ByteLevel pre-tokenizer (GPT-2, Llama 3, SmolLM): byte-level
///    BPE with its merges and pre-tokenizer steps.
/// BOS and EOS come from the model's config; anything else (Unigram,
/// WordPiece, normalizers Quill does not implement, unknown split regexes)
/// is an error naming `path` and the part it cannot handle.
ErrorOr<TokenizerData> tokenizerFromHfJson(const JsonValue &json, const std::string &path,
                                           int32_t bosId, int32_t eosId);

} // namespace quill
