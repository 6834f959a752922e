// Choosing and converting the tokenizer an artifact carries: the model's
// own (GGUF metadata, tokenizer.json) or the --tokenizer file, checked by
// loading it with the runtime's Tokenizer.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/support/Error.h"
#include "runtime/tokenizer/TokenizerFormat.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace quill {

class ModelSource;

/// Vocabularies larger than this are refused (the largest real ones hold
/// about 260k tokens); it bounds what a corrupt id can make us allocate.
constexpr int64_t kMaxImportedVocab = 1 << 22;

/// A SentencePiece piece with U+2581 (the "metaspace") replaced by ' ', the
/// way llama2.c's tokenizer.bin spells pieces.
std::string metaspaceToSpace(std::string_view piece);

/// One line for --info: "SentencePiece BPE (scores, byte fallback), 512
/// tokens, bos 1, eos 2" or "byte-level BPE, ... merges, pre-tokenizer ...".
std::string describeTokenizer(const TokenizerData &data);

/// Pads `data` with empty unused tokens up to `vocabSize` (embeddings are
/// often padded past the tokenizer); an error when it has more tokens.
Status fitTokenizerToVocab(TokenizerData &data, int32_t vocabSize, const std::string &sourceName);

/// Reads a tokenizer file of any kind Quill knows, told apart by content: a
/// GGUF file (its metadata), a tokenizer.json, a Quill tokenizer or a
/// llama2.c tokenizer.bin. `config` gives the vocabulary size and the BOS and
/// EOS ids a tokenizer.json does not carry.
ErrorOr<TokenizerData> loadTokenizerFile(const std::string &path, const ModelConfig &config);

/// The tokenizer bytes for the artifact: `overridePath`'s when given (a
/// llama2.c tokenizer.bin is embedded byte for byte), else the model's own
/// converted. Loaded once with the runtime Tokenizer, so an artifact never
/// carries a tokenizer the runtime rejects.
ErrorOr<std::vector<uint8_t>> artifactTokenizerBytes(const ModelSource &model,
                                                     const std::string &overridePath);

} // namespace quill
