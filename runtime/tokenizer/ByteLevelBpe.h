// Byte-level BPE (GPT-2, Llama 3, SmolLM): added tokens are cut out of the
// text, the rest is pre-tokenized into words, and each word's bytes are
// merged pair by pair in merge-rank order.
#pragma once

#include "runtime/support/Error.h"
#include "runtime/tokenizer/SpecialTokens.h"
#include "runtime/tokenizer/TokenizerFormat.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace quill {

/// The printable character GPT-2's vocabularies write for a raw byte: the
/// byte itself for '!'..'~', 0xA1..0xAC and 0xAE..0xFF, else U+0100 + n for
/// the n-th remaining byte in increasing order (so ' ' is U+0120 'Ġ').
uint32_t gpt2CodepointOfByte(uint8_t byte);
/// The raw bytes of a piece in GPT-2's printable form, or nullopt when a
/// character of it stands for no byte.
std::optional<std::string> gpt2PieceToBytes(std::string_view piece);
/// The printable form of raw bytes.
std::string gpt2BytesToPiece(std::string_view bytes);

/// Piece -> id, the lowest id for duplicate pieces.
using PieceIndex = std::unordered_map<std::string, int32_t>;

/// The merge machinery of a byte-level vocabulary. Immutable once built.
class ByteLevelBpe {
public:
  /// Checks and indexes `data` (a ByteLevelBpe kind); `pieces` indexes its
  /// pieces. Fails, naming sourceName, when a merge's result is not in the
  /// vocabulary or a byte has neither a token nor an unk to fall back on.
  static ErrorOr<ByteLevelBpe> create(const TokenizerData &data, const PieceIndex &pieces,
                                      const std::string &sourceName);

  /// Appends the ids of `text` (no BOS/EOS) to `out`.
  void encode(std::string_view text, const PieceIndex &pieces, std::vector<int32_t> &out) const;

private:
  ByteLevelBpe() = default;
  /// BPE over one pre-tokenized word.
  void encodeWord(std::string_view word, const PieceIndex &pieces, std::vector<int32_t> &out) const;

  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t pairKey(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  }

  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byteIds_{};
  /// Added (control and user-defined) tokens.
  SpecialTokens added_;
  std::vector<PreTokenizeStep> steps_;
  bool addPrefixSpace_ = false;
  bool ignoreMerges_ = false;
};

} // namespace quill
