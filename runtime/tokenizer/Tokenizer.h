// The runtime's tokenizer: llama2.c's SentencePiece-style BPE (encoding text
// the way run.c's encode() does, decoding like its decode()), or byte-level
// BPE, loaded from the bytes an artifact carries (TokenizerFormat.h).
#pragma once

#include "runtime/support/Error.h"
#include "runtime/tokenizer/TokenizerFormat.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace quill {

class ByteLevelBpe;
class SpecialTokens;

/// A tokenizer of one of two kinds (TokenizerKind):
///  * SentencePiece-style BPE, as llama2.c's tokenizer.bin holds it:
///    int32 max_token_length, then per token: float32 score, int32 len, len
///    bytes of the piece (no NUL). The vocabulary size is not stored; the
///    model's config supplies it. Pieces use ' ' where SentencePiece uses
///    U+2581. The versioned format can hold such a vocabulary with other
///    special ids.
///  * Byte-level BPE (GPT-2, Llama 3), in the versioned format only.
///
/// Immutable after loading, so one instance may be shared by many threads.
class Tokenizer {
public:
  /// Parses tokenizer bytes (e.g. embedded in an artifact): llama2.c's
  /// tokenizer.bin, or the versioned format (told apart by its magic).
  /// sourceName names the input in error messages. Bytes after the last
  /// token of a tokenizer.bin are ignored (real files are sometimes padded).
  static ErrorOr<Tokenizer> fromBytes(const uint8_t *data, size_t size, int32_t vocabSize,
                                      const std::string &sourceName);
  /// Reads and parses a tokenizer file.
  static ErrorOr<Tokenizer> fromFile(const std::string &path, int32_t vocabSize);
  /// Builds a tokenizer from parsed or converted data.
  static ErrorOr<Tokenizer> fromData(TokenizerData data, const std::string &sourceName);

  /// SentencePiece kind: encodes text exactly as llama2.c run.c's encode():
  /// optional BOS, a " " dummy prefix when text is non-empty, one token per
  /// UTF-8 codepoint (falling back to <0xNN> byte tokens), then repeated
  /// merging of the adjacent pair whose concatenation is the highest-scoring
  /// vocab piece (leftmost pair on ties), and an optional EOS.
  ///
  /// Deliberate differences, only reachable on inputs where run.c has
  /// undefined behaviour: text is taken as bytes (an embedded NUL is encoded
  /// as <0x00> rather than ending the text), and a token that would fall
  /// outside the vocabulary (a missing " " piece, a byte token in a vocab
  /// smaller than 259) is replaced so that every id returned is valid.
  ///
  /// Byte-level kind: optional BOS, added tokens cut out of the text, the
  /// rest pre-tokenized and merged by rank (ByteLevelBpe), optional EOS.
  ///
  /// BOS and EOS are added only when the vocabulary has them.
  std::vector<int32_t> encode(std::string_view text, bool addBos, bool addEos) const;

  /// Encodes a rendered chat prompt, as Hugging Face's apply_chat_template
  /// does (add_special_tokens=False) and llama.cpp with parse_special: the
  /// control and user-defined pieces in the text (<s>, [INST],
  /// <|im_start|>, ...) become their single ids, leftmost first, then
  /// longest; no BOS or EOS is added (the template writes them). The text
  /// between them is encoded as encode() does, each run on its own: for the
  /// SentencePiece kind every run gets the dummy-prefix space (as llama.cpp
  /// and HF's legacy Llama tokenizers give it), and no merge crosses a
  /// special token. The byte-level kind cuts added tokens out of every text
  /// anyway, so this is encode() without BOS or EOS there.
  std::vector<int32_t> encodeChat(std::string_view text) const;

  /// SentencePiece kind: decodes token as run.c's decode(prevToken, token):
  /// a piece following BOS loses its leading space, and a piece "<0xNN>"
  /// becomes that raw byte. Byte-level kind: the token's bytes (which may
  /// end inside a UTF-8 character the next token completes).
  /// An out-of-range token decodes to "".
  std::string decode(int32_t prevToken, int32_t token) const;

  TokenizerKind kind() const { return kind_; }

  int32_t vocabSize() const { return static_cast<int32_t>(pieces_.size()); }
  /// The piece of id, or "" when id is out of range.
  const std::string &piece(int32_t id) const;
  /// The merge score of id, or 0 when id is out of range.
  float score(int32_t id) const;
  /// The id of an exact piece, or -1.
  int32_t lookup(std::string_view piece) const;
  /// The max_token_length the file declares (informational only).
  int32_t maxTokenLength() const { return maxTokenLength_; }

  /// The special ids; -1 when the vocabulary has none (never for a
  /// tokenizer.bin, whose ids are always 0, 1 and 2).
  int32_t unkId() const { return unkId_; }
  int32_t bosId() const { return bosId_; }
  int32_t eosId() const { return eosId_; }

private:
  Tokenizer() = default;

  /// The byte-fallback token of byte: for a tokenizer.bin id byte + 3 as
  /// run.c has it, else the <0xNN> piece; unk when there is no such token.
  int32_t byteToken(uint8_t byte) const { return byteIds_[byte]; }
  /// Appends run.c's tokens of text to `tokens` (which holds BOS or
  /// nothing) and merges them all.
  void encodeSentencePiece(std::string_view text, std::vector<int32_t> &tokens) const;
  /// Applies run.c's merge loop to tokens in place.
  void mergePairs(std::vector<int32_t> &tokens) const;

  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  /// Piece -> id; on duplicate pieces the lowest id wins.
  std::unordered_map<std::string, int32_t> idOfPiece_;
  int32_t maxTokenLength_ = 0;
  TokenizerKind kind_ = TokenizerKind::SentencePieceBpe;
  int32_t unkId_ = 0, bosId_ = 1, eosId_ = 2;
  bool addDummyPrefix_ = true;
  std::array<int32_t, 256> byteIds_{};
  /// The byte-level merge machinery; null for the SentencePiece kind.
  /// Shared so that copies of a tokenizer stay cheap.
  std::shared_ptr<const ByteLevelBpe> byteLevel_;
  /// SentencePiece kind: the control and user-defined pieces encodeChat
  /// matches (byte-level BPE keeps its own).
  std::shared_ptr<const SpecialTokens> special_;
};

} // namespace quill
