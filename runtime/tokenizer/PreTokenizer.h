// Pre-tokenizers of byte-level BPE vocabularies: the text is cut into words
// (pre-tokens) before BPE merges run inside each word, as Hugging Face
// tokenizers and llama.cpp do with a regex. Quill uses hand-written scanners
// that match exactly what those regexes match (see PreTokenizer.cpp).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace quill {

/// One splitting step; a tokenizer applies its steps in order, each to every
/// piece the previous steps produced. The numbers are serialized.
enum class PreTokenizeStep : uint32_t {
  /// Every \p{N} character becomes a piece of its own (Hugging Face's
  /// `Digits` with individual_digits, as SmolLM uses).
  SplitDigits = 1,
  /// GPT-2's pattern:
  ///   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
  ///   ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Gpt2 = 2,
  /// Llama 3's pattern:
  ///   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  ///    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Llama3 = 3,
  /// Llama 3's pattern with \p{N} instead of \p{N}{1,3} (Qwen 2's).
  Llama3SingleDigits = 4,
};

/// True for the step numbers above (for the tokenizer loader).
bool isKnownPreTokenizeStep(uint32_t value);
/// A short name for --info and error messages: "digits", "gpt2", "llama3".
const char *preTokenizeStepName(PreTokenizeStep step);

/// Cuts `text` into consecutive, non-empty pieces that cover it exactly.
/// Text that is not valid UTF-8 is cut too: each invalid byte counts as a
/// character that is neither letter, number nor white space.
std::vector<std::string_view> preTokenize(std::string_view text,
                                          const std::vector<PreTokenizeStep> &steps);

} // namespace quill
