// The special tokens matched whole in text: control and user-defined
// tokens, looked for before any BPE (chat prompts, byte-level added tokens).
#pragma once

#include "runtime/tokenizer/TokenizerFormat.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace quill {

/// The control and user-defined pieces of a vocabulary, indexed for
/// matching at a position of a text. Immutable once built.
class SpecialTokens {
public:
  SpecialTokens() = default;
  /// Indexes every non-empty piece of `data` whose type is Control or
  /// UserDefined.
  explicit SpecialTokens(const TokenizerData &data);

  bool empty() const { return count_ == 0; }
  /// The longest special piece at the front of `text`, or -1; `length`
  /// receives its length.
  int32_t at(std::string_view text, size_t &length) const;

  /// Splits `text` into the runs between special pieces (leftmost first,
  /// then longest) and the special ids: onText(run) for each non-empty run,
  /// onSpecial(id) for each special piece, in text order.
  template <typename OnText, typename OnSpecial>
  void split(std::string_view text, OnText &&onText, OnSpecial &&onSpecial) const {
    size_t runStart = 0;
    for (size_t i = 0; i < text.size();) {
      size_t length = 0;
      int32_t id = at(text.substr(i), length);
      if (id < 0) {
        ++i;
        continue;
      }
      if (i > runStart)
        onText(text.substr(runStart, i - runStart));
      onSpecial(id);
      i += length;
      runStart = i;
    }
    if (runStart < text.size())
      onText(text.substr(runStart));
  }

private:
  /// By first byte, longest first: the piece and its id.
  std::array<std::vector<std::pair<std::string, int32_t>>, 256> byFirstByte_;
  size_t count_ = 0;
};

} // namespace quill
