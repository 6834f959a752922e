// Indexing and matching special tokens.
#include "runtime/tokenizer/SpecialTokens.h"

#include <algorithm>

namespace quill {

SpecialTokens::SpecialTokens(const TokenizerData &data) {
  for (size_t id = 0; id < data.pieces.size(); ++id) {
    TokenType type = data.types[id];
    const std::string &piece = data.pieces[id];
    if ((type == TokenType::Control || type == TokenType::UserDefined) && !piece.empty()) {
      byFirstByte_[uint8_t(piece[0])].emplace_back(piece, int32_t(id));
      ++count_;
    }
  }
  // Longest first; among equal pieces the lowest id stays first.
  for (auto &list : byFirstByte_)
    std::stable_sort(list.begin(), list.end(),
                     [](const auto &a, const auto &b) { return a.first.size() > b.first.size(); });
}

int32_t SpecialTokens::at(std::string_view text, size_t &length) const {
  if (text.empty())
    return -1;
  for (const auto &[piece, id] : byFirstByte_[uint8_t(text[0])]) {
    if (text.compare(0, piece.size(), piece) == 0) {
      length = piece.size();
      return id;
    }
  }
  return -1;
}

} // namespace quill
