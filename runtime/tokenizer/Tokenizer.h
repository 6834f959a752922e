// The llama2.c BPE tokenizer: loads tokenizer.bin bytes, encodes text the way
// run.c's encode() does and decodes one token at a time like its decode().
#pragma once

#include "runtime/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace quill {

/// A SentencePiece-style BPE vocabulary in llama2.c's tokenizer.bin layout:
///   int32 max_token_length, then per token: float32 score, int32 len, len
///   bytes of the piece (no NUL). The vocabulary size is not stored; the
///   model's config supplies it. Pieces use ' ' where SentencePiece uses
///   U+2581.
///
/// Immutable after loading, so one instance may be shared by many threads.
class Tokenizer {
public:
  /// Parses llama2.c tokenizer bytes (e.g. embedded in an artifact).
  /// sourceName names the input in error messages. Bytes after the last
  /// token are ignored (real files are sometimes padded).
  static ErrorOr<Tokenizer> fromBytes(const uint8_t *data, size_t size,
                                      int32_t vocabSize,
                                      const std::string &sourceName);
  /// Reads and parses a tokenizer.bin file.
  static ErrorOr<Tokenizer> fromFile(const std::string &path,
                                     int32_t vocabSize);

  /// Encodes text exactly as llama2.c run.c's encode(): optional BOS, a " "
  /// dummy prefix when text is non-empty, one token per UTF-8 codepoint
  /// (falling back to <0xNN> byte tokens), then repeated merging of the
  /// adjacent pair whose concatenation is the highest-scoring vocab piece
  /// (leftmost pair on ties), and an optional EOS.
  ///
  /// Deliberate differences, only reachable on inputs where run.c has
  /// undefined behaviour: text is taken as bytes (an embedded NUL is encoded
  /// as <0x00> rather than ending the text), and a token that would fall
  /// outside the vocabulary (a missing " " piece, a byte token in a vocab
  /// smaller than 259) is replaced so that every id returned is valid.
  std::vector<int32_t> encode(std::string_view text, bool addBos,
                              bool addEos) const;

  /// Decodes token as run.c's decode(prevToken, token): a piece following
  /// BOS loses its leading space, and a piece "<0xNN>" becomes that raw byte.
  /// An out-of-range token decodes to "".
  std::string decode(int32_t prevToken, int32_t token) const;

  int32_t vocabSize() const { return static_cast<int32_t>(pieces_.size()); }
  /// The piece of id, or "" when id is out of range.
  const std::string &piece(int32_t id) const;
  /// The merge score of id, or 0 when id is out of range.
  float score(int32_t id) const;
  /// The id of an exact piece, or -1.
  int32_t lookup(std::string_view piece) const;
  /// The max_token_length the file declares (informational only).
  int32_t maxTokenLength() const { return maxTokenLength_; }

  int32_t unkId() const { return 0; }
  int32_t bosId() const { return 1; }
  int32_t eosId() const { return 2; }

private:
  Tokenizer() = default;

  /// The token run.c's byte fallback gives byte (byte + 3), or unk when the
  /// vocabulary is too small to hold byte tokens.
  int32_t byteToken(uint8_t byte) const;
  /// Applies run.c's merge loop to tokens in place.
  void mergePairs(std::vector<int32_t> &tokens) const;

  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  /// Piece -> id; on duplicate pieces the lowest id wins.
  std::unordered_map<std::string, int32_t> idOfPiece_;
  int32_t maxTokenLength_ = 0;
};

} // namespace quill
