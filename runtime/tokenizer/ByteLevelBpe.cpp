// GPT-2's byte <-> printable-character map and byte-level BPE encoding.
#include "runtime/tokenizer/ByteLevelBpe.h"

#include "runtime/tokenizer/PairMerge.h"
#include "runtime/tokenizer/PreTokenizer.h"
#include "runtime/tokenizer/Unicode.h"

#include <algorithm>
#include <functional>

namespace quill {

namespace {

/// Bytes GPT-2 prints as themselves.
bool isPrintableByte(uint32_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/// codepoint -> byte for the 256 stand-ins (all below U+0144), else -1.
const std::array<int16_t, 0x144> &byteOfCodepointTable() {
  static const std::array<int16_t, 0x144> table = [] {
    std::array<int16_t, 0x144> t;
    t.fill(-1);
    for (int b = 0; b < 256; ++b)
      t[gpt2CodepointOfByte(uint8_t(b))] = int16_t(b);
    return t;
  }();
  return table;
}

} // namespace

uint32_t gpt2CodepointOfByte(uint8_t byte) {
  if (isPrintableByte(byte))
    return byte;
  // The n-th non-printable byte (0x00..0x20, 0x7F..0xA0, 0xAD) maps to
  // U+0100 + n.
  uint32_t n = 0;
  for (uint32_t b = 0; b < byte; ++b)
    n += !isPrintableByte(b);
  return 0x100 + n;
}

std::optional<std::string> gpt2PieceToBytes(std::string_view piece) {
  const auto &table = byteOfCodepointTable();
  std::string out;
  out.reserve(piece.size());
  while (!piece.empty()) {
    Utf8Char c = decodeUtf8(piece);
    if (c.codepoint >= table.size() || table[c.codepoint] < 0)
      return std::nullopt;
    out += char(table[c.codepoint]);
    piece.remove_prefix(c.length);
  }
  return out;
}

std::string gpt2BytesToPiece(std::string_view bytes) {
  std::string out;
  for (char b : bytes)
    appendUtf8(gpt2CodepointOfByte(uint8_t(b)), out);
  return out;
}

ErrorOr<ByteLevelBpe> ByteLevelBpe::create(const TokenizerData &data, const PieceIndex &pieces,
                                           const std::string &sourceName) {
  const std::string where = sourceName + ": ";
  ByteLevelBpe bpe;
  bpe.steps_ = data.preTokenizer;
  bpe.addPrefixSpace_ = data.flags & kAddPrefixSpace;
  bpe.ignoreMerges_ = data.flags & kIgnoreMerges;
  for (int b = 0; b < 256; ++b) {
    auto it = pieces.find(std::string(1, char(b)));
    bpe.byteIds_[b] = it != pieces.end() ? it->second : data.unkId;
    if (bpe.byteIds_[b] < 0)
      return Status::error(where + "byte " + std::to_string(b) +
                           " has no token and the vocabulary no unk token");
  }
  bpe.merges_.reserve(data.merges.size());
  std::string merged;
  for (size_t rank = 0; rank < data.merges.size(); ++rank) {
    auto [left, right] = data.merges[rank];
    merged = data.pieces[left] + data.pieces[right];
    auto it = pieces.find(merged);
    if (it == pieces.end())
      return Status::error(where + "merge " + std::to_string(rank) +
                           " makes a piece that is not in the vocabulary");
    // The first (highest-priority) rank of a repeated pair wins.
    bpe.merges_.emplace(pairKey(left, right), Merge{int32_t(rank), it->second});
  }
  bpe.added_ = SpecialTokens(data);
  return bpe;
}

void ByteLevelBpe::encode(std::string_view text, const PieceIndex &pieces,
                          std::vector<int32_t> &out) const {
  std::string prefixed;
  if (addPrefixSpace_ && !text.empty() && text[0] != ' ') {
    prefixed = " " + std::string(text);
    text = prefixed;
  }
  // Added tokens first, leftmost then longest; the text between them goes
  // through the pre-tokenizer and BPE.
  added_.split(
      text,
      [&](std::string_view segment) {
        for (std::string_view word : preTokenize(segment, steps_))
          encodeWord(word, pieces, out);
      },
      [&](int32_t id) { out.push_back(id); });
}

void ByteLevelBpe::encodeWord(std::string_view word, const PieceIndex &pieces,
                              std::vector<int32_t> &out) const {
  if (ignoreMerges_) {
    auto it = pieces.find(std::string(word));
    if (it != pieces.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int32_t> tokens;
  tokens.reserve(word.size());
  for (char b : word)
    tokens.push_back(byteIds_[uint8_t(b)]);
  // The lowest-ranked adjacent pair merges first, the leftmost on ties, as
  // Hugging Face's BPE does.
  mergeAdjacentPairs<int32_t>(
      tokens,
      [&](int32_t left, int32_t right) -> std::optional<PairMerge<int32_t>> {
        auto it = merges_.find(pairKey(left, right));
        if (it == merges_.end())
          return std::nullopt;
        return PairMerge<int32_t>{it->second.rank, it->second.result};
      },
      std::less<int32_t>());
  out.insert(out.end(), tokens.begin(), tokens.end());
}

} // namespace quill
