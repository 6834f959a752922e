// Hand-written scanners for the GPT-2 and Llama 3 pre-tokenizer regexes.
//
// Each scanner walks the text once, and at every position tries the regex's
// alternatives in their order, as a backtracking regex engine does; the
// comments name the alternative each branch implements. Character classes
// are Unicode's (Unicode.h): \p{L} letters, \p{N} numbers, \s White_Space.
//
// The case-insensitive contractions of Llama 3 fold case as the regex engines
// do (Unicode simple case folding): of the letters involved only 's' has a
// non-ASCII fold, U+017F LONG S. The tables are Unicode 14.0. Checked
// against Python's `regex` module on 20,000 random strings of letters,
// digits, marks, quotes, Unicode spaces and newlines: identical splits.
#include "runtime/tokenizer/PreTokenizer.h"

#include "runtime/tokenizer/Unicode.h"

namespace quill {

namespace {

/// The characters of one piece, with the byte offset of each (and of the
/// end, at index size()).
class Characters {
public:
  explicit Characters(std::string_view text) : text_(text) {
    for (size_t at = 0; at < text.size();) {
      Utf8Char c = decodeUtf8(text.substr(at));
      codepoints_.push_back(c.codepoint);
      offsets_.push_back(at);
      at += c.length;
    }
    offsets_.push_back(text.size());
  }
  size_t size() const { return codepoints_.size(); }
  uint32_t operator[](size_t i) const { return codepoints_[i]; }
  /// The bytes of characters [begin, end).
  std::string_view slice(size_t begin, size_t end) const {
    return text_.substr(offsets_[begin], offsets_[end] - offsets_[begin]);
  }

private:
  std::string_view text_;
  std::vector<uint32_t> codepoints_;
  std::vector<size_t> offsets_;
};

bool isLetter(uint32_t c) { return isUnicodeLetter(c); }
bool isNumber(uint32_t c) { return isUnicodeNumber(c); }
bool isSpace(uint32_t c) { return isUnicodeWhiteSpace(c); }
/// [^\s\p{L}\p{N}]
bool isOther(uint32_t c) { return !isSpace(c) && !isLetter(c) && !isNumber(c); }
bool isNewline(uint32_t c) { return c == '\r' || c == '\n'; }

/// Simple case folding, for the letters of the contractions.
uint32_t foldCase(uint32_t c) {
  if (c >= 'A' && c <= 'Z')
    return c + ('a' - 'A');
  return c == 0x17F ? uint32_t('s') : c; // LONG S folds to 's'.
}

/// The length of a contraction 's 't 're 've 'm 'll 'd at i, or 0.
size_t contractionAt(const Characters &s, size_t i, bool ignoreCase) {
  if (s[i] != '\'' || i + 1 >= s.size())
    return 0;
  auto at = [&](size_t k) { return ignoreCase ? foldCase(s[k]) : s[k]; };
  uint32_t a = at(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return 2;
  if (i + 2 >= s.size())
    return 0;
  uint32_t b = at(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
    return 3;
  return 0;
}

/// The end of the run of characters from `i` that satisfy `inClass`.
template <typename Pred>
size_t runEnd(const Characters &s, size_t i, Pred inClass, size_t limit = 0) {
  size_t end = i;
  while (end < s.size() && inClass(s[end]) && (limit == 0 || end - i < limit))
    ++end;
  return end;
}

/// `\s+(?!\S)|\s+` at white space i: the whole run at the end of the text;
/// otherwise all of it but the last character (which then prefixes the next
/// word), or the single character when the run is one long.
size_t trailingSpaceEnd(const Characters &s, size_t i) {
  size_t end = runEnd(s, i, isSpace);
  if (end == s.size() || end - i == 1)
    return end;
  return end - 1;
}

/// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|
///        \s+(?!\S)|\s+
size_t gpt2MatchEnd(const Characters &s, size_t i) {
  if (size_t n = contractionAt(s, i, /*ignoreCase=*/false))
    return i + n;
  // " ?X+" for each class X, in the regex's order.
  bool spaceFirst = s[i] == ' ' && i + 1 < s.size();
  for (bool (*inClass)(uint32_t) : {isLetter, isNumber, isOther}) {
    if (inClass(s[i]))
      return runEnd(s, i, inClass);
    if (spaceFirst && inClass(s[i + 1]))
      return runEnd(s, i + 1, inClass);
  }
  return trailingSpaceEnd(s, i); // s[i] is white space.
}

/// Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|
///          \p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|
///          \s+(?!\S)|\s+
size_t llama3MatchEnd(const Characters &s, size_t i, size_t maxDigits) {
  if (size_t n = contractionAt(s, i, /*ignoreCase=*/true))
    return i + n;
  const uint32_t c = s[i];
  const bool hasNext = i + 1 < s.size();
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (isLetter(c))
    return runEnd(s, i, isLetter);
  if (!isNewline(c) && !isNumber(c) && hasNext && isLetter(s[i + 1]))
    return runEnd(s, i + 1, isLetter);
  // \p{N}{1,maxDigits}
  if (isNumber(c))
    return runEnd(s, i, isNumber, maxDigits);
  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  if (isOther(c) || (c == ' ' && hasNext && isOther(s[i + 1]))) {
    size_t end = runEnd(s, c == ' ' ? i + 1 : i, isOther);
    return runEnd(s, end, isNewline);
  }
  // \s*[\r\n]+ : the greedy \s* gives back characters until a newline
  // follows it, so the match ends after the run's last newline.
  size_t runStop = runEnd(s, i, isSpace);
  for (size_t k = runStop; k > i; --k)
    if (isNewline(s[k - 1]))
      return k;
  return trailingSpaceEnd(s, i);
}

void splitWith(std::string_view text, PreTokenizeStep step, std::vector<std::string_view> &out) {
  Characters s(text);
  for (size_t i = 0; i < s.size();) {
    size_t end;
    switch (step) {
    case PreTokenizeStep::SplitDigits:
      end = isNumber(s[i]) ? i + 1 : runEnd(s, i, [](uint32_t c) { return !isNumber(c); });
      break;
    case PreTokenizeStep::Gpt2:
      end = gpt2MatchEnd(s, i);
      break;
    case PreTokenizeStep::Llama3:
      end = llama3MatchEnd(s, i, 3);
      break;
    case PreTokenizeStep::Llama3SingleDigits:
      end = llama3MatchEnd(s, i, 1);
      break;
    default:
      end = s.size();
      break;
    }
    out.push_back(s.slice(i, end));
    i = end;
  }
}

} // namespace

bool isKnownPreTokenizeStep(uint32_t value) { return value >= 1 && value <= 4; }

const char *preTokenizeStepName(PreTokenizeStep step) {
  switch (step) {
  case PreTokenizeStep::SplitDigits:
    return "digits";
  case PreTokenizeStep::Gpt2:
    return "gpt2";
  case PreTokenizeStep::Llama3:
    return "llama3";
  case PreTokenizeStep::Llama3SingleDigits:
    return "llama3-single-digits";
  }
  return "unknown";
}

std::vector<std::string_view> preTokenize(std::string_view text,
                                          const std::vector<PreTokenizeStep> &steps) {
  std::vector<std::string_view> pieces;
  if (!text.empty())
    pieces.push_back(text);
  std::vector<std::string_view> next;
  for (PreTokenizeStep step : steps) {
    next.clear();
    for (std::string_view piece : pieces)
      splitWith(piece, step, next);
    pieces.swap(next);
  }
  return pieces;
}

} // namespace quill
