// The tokenizer an artifact carries, as bytes: llama2.c's tokenizer.bin when
// it can say everything, else Quill's versioned tokenizer format.
//
// Versioned format (all integers little-endian):
//   "QUILLTOK"            8-byte magic; a tokenizer.bin starts with its int32
//                         max_token_length, which is never this large
//   u32 version           kTokenizerFormatVersion
//   u32 kind              TokenizerKind
//   i32 count             tokens; equals the model's vocabulary size
//   i32 bos, eos, unk     ids, -1 when the vocabulary has none
//   u32 flags             TokenizerFlags
//   count x { u8 type, f32 score, u32 length, length bytes of the piece }
//   u32 merges            then merges x { i32 left, i32 right } by rank
//   u32 steps             then steps x u32 PreTokenizeStep
// Pieces are the bytes a token stands for: SentencePiece's U+2581 is ' ',
// byte-level BPE pieces are raw bytes (not GPT-2's printable remapping).
#pragma once

#include "runtime/support/Error.h"
#include "runtime/tokenizer/PreTokenizer.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace quill {

constexpr char kTokenizerMagic[8] = {'Q', 'U', 'I', 'L', 'L', 'T', 'O', 'K'};
constexpr uint32_t kTokenizerFormatVersion = 1;

enum class TokenizerKind : uint32_t {
  /// SentencePiece-style BPE by piece scores with byte fallback: llama2.c's
  /// tokenizer, Llama 2's, GGUF's "llama".
  SentencePieceBpe = 1,
  /// Byte-level BPE by merge ranks over pre-tokenized words: GPT-2's,
  /// Llama 3's, SmolLM's, GGUF's "gpt2".
  ByteLevelBpe = 2,
};

/// GGUF's token types (tokenizer.ggml.token_type), which Quill keeps as is.
enum class TokenType : uint8_t {
  Normal = 1,
  Unknown = 2,
  Control = 3,     ///< BOS, EOS and other special tokens.
  UserDefined = 4, ///< Added tokens matched verbatim in the text.
  Unused = 5,
  Byte = 6, ///< <0xNN> byte-fallback tokens.
};

enum TokenizerFlags : uint32_t {
  /// SentencePiece: prefix the text with a space (add_dummy_prefix).
  kAddDummyPrefix = 1u << 0,
  /// Byte-level: prefix the text with a space (ByteLevel add_prefix_space).
  kAddPrefixSpace = 1u << 1,
  /// Byte-level: a pre-token that is itself in the vocabulary becomes that
  /// token without merging (Hugging Face's ignore_merges, as Llama 3 sets).
  kIgnoreMerges = 1u << 2,
};
constexpr uint32_t kKnownTokenizerFlags = 7;

/// Everything a tokenizer is, in memory.
struct TokenizerData {
  TokenizerKind kind = TokenizerKind::SentencePieceBpe;
  std::vector<std::string> pieces;
  std::vector<float> scores;    ///< One per piece (0 for byte-level).
  std::vector<TokenType> types; ///< One per piece.
  int32_t bosId = -1, eosId = -1, unkId = -1;
  uint32_t flags = 0;
  /// Byte-level only: (left, right) token ids, highest priority first; the
  /// merged token is the one whose piece is left's piece + right's.
  std::vector<std::pair<int32_t, int32_t>> merges;
  std::vector<PreTokenizeStep> preTokenizer; ///< Byte-level only.
  /// Set on data read from a llama2.c tokenizer.bin: byte fallback is then
  /// id 3 + byte whatever the pieces say, exactly as run.c does.
  bool llama2cLayout = false;
  /// A tokenizer.bin's max_token_length (informational; 0 otherwise).
  int32_t maxTokenLength = 0;
};

/// True when llama2.c's tokenizer.bin can carry `data` without loss: a
/// SentencePiece vocabulary with unk 0, BOS 1, EOS 2, the byte tokens
/// <0x00>..<0xFF> at 3..258, and the dummy prefix.
bool fitsLlama2cLayout(const TokenizerData &data);

/// Serializes as llama2.c's tokenizer.bin when fitsLlama2cLayout (with BOS
/// and EOS spelled "\n<s>\n" and "\n</s>\n" as llama2.c's exporter writes
/// them), else in the versioned format.
std::vector<uint8_t> serializeTokenizer(const TokenizerData &data);
/// Always the versioned format.
std::vector<uint8_t> serializeVersionedTokenizer(const TokenizerData &data);

/// Parses either form. `vocabSize` is the model's: a tokenizer.bin stores no
/// count, and a versioned tokenizer must hold exactly that many tokens. Every
/// failure is one line starting with sourceName.
ErrorOr<TokenizerData> parseTokenizer(const uint8_t *data, size_t size, int32_t vocabSize,
                                      const std::string &sourceName);

} // namespace quill
