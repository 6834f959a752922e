// The hand-written GPT-2 and Llama 3 pre-tokenizer scanners against
// hand-worked splits of their regexes, and the Unicode classes under them.
#include "runtime/tokenizer/PreTokenizer.h"
#include "runtime/tokenizer/Unicode.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace quill;

namespace {

using Pieces = std::vector<std::string>;

Pieces split(const std::string &text, std::vector<PreTokenizeStep> steps) {
  Pieces out;
  for (std::string_view piece : preTokenize(text, steps))
    out.emplace_back(piece);
  return out;
}

Pieces gpt2(const std::string &text) { return split(text, {PreTokenizeStep::Gpt2}); }
Pieces llama3(const std::string &text) { return split(text, {PreTokenizeStep::Llama3}); }

} // namespace

TEST(Unicode, Classes) {
  EXPECT_TRUE(isUnicodeLetter('a'));
  EXPECT_TRUE(isUnicodeLetter('Z'));
  EXPECT_FALSE(isUnicodeLetter('@'));
  EXPECT_FALSE(isUnicodeLetter('['));
  EXPECT_TRUE(isUnicodeLetter(0xE9));     // é
  EXPECT_FALSE(isUnicodeLetter(0xD7));    // ×
  EXPECT_TRUE(isUnicodeLetter(0x4E2D));   // 中
  EXPECT_TRUE(isUnicodeLetter(0x3B1));    // α
  EXPECT_FALSE(isUnicodeLetter(0x1F642)); // 🙂
  EXPECT_TRUE(isUnicodeNumber('7'));
  EXPECT_TRUE(isUnicodeNumber(0x0663)); // Arabic-Indic three
  EXPECT_TRUE(isUnicodeNumber(0x00BD)); // ½ (No)
  EXPECT_TRUE(isUnicodeNumber(0x2167)); // Ⅷ (Nl)
  EXPECT_FALSE(isUnicodeNumber('x'));
  EXPECT_TRUE(isUnicodeWhiteSpace(' '));
  EXPECT_TRUE(isUnicodeWhiteSpace('\n'));
  EXPECT_TRUE(isUnicodeWhiteSpace(0x3000));
  EXPECT_TRUE(isUnicodeWhiteSpace(0xA0));
  EXPECT_FALSE(isUnicodeWhiteSpace(0x200B)); // zero-width space is not
  EXPECT_FALSE(isUnicodeLetter(kInvalidCodepointBase + 0xFF));
}

TEST(Unicode, DecodeUtf8) {
  EXPECT_EQ(decodeUtf8("a").codepoint, uint32_t('a'));
  Utf8Char e = decodeUtf8("\xC3\xA9x");
  EXPECT_EQ(e.codepoint, 0xE9u);
  EXPECT_EQ(e.length, 2u);
  Utf8Char smile = decodeUtf8("\xF0\x9F\x99\x82");
  EXPECT_EQ(smile.codepoint, 0x1F642u);
  EXPECT_EQ(smile.length, 4u);
  // Truncated, overlong, surrogate and stray continuation bytes: one byte.
  for (const char *bad : {"\xC3", "\xC0\x80", "\xED\xA0\x80", "\x80", "\xFF"}) {
    Utf8Char c = decodeUtf8(bad);
    EXPECT_EQ(c.length, 1u) << bad;
    EXPECT_GE(c.codepoint, kInvalidCodepointBase);
  }
  std::string out;
  appendUtf8(0x1F642, out);
  EXPECT_EQ(out, "\xF0\x9F\x99\x82");
}

TEST(PreTokenizer, Gpt2Words) {
  EXPECT_EQ(gpt2("Hello world"), Pieces({"Hello", " world"}));
  EXPECT_EQ(gpt2("h\xC3\xA9llo w\xC3\xB6rld"), Pieces({"h\xC3\xA9llo", " w\xC3\xB6rld"}));
  EXPECT_EQ(gpt2("3.14 apples"), Pieces({"3", ".", "14", " apples"}));
  EXPECT_EQ(gpt2("it's 2024!!"), Pieces({"it", "'s", " 2024", "!!"}));
  EXPECT_EQ(gpt2("a ,b"), Pieces({"a", " ,", "b"}));
}

TEST(PreTokenizer, Gpt2ContractionsAreCaseSensitive) {
  EXPECT_EQ(gpt2("I'm we'll they're"), Pieces({"I", "'m", " we", "'ll", " they", "'re"}));
  EXPECT_EQ(gpt2("HE'S"), Pieces({"HE", "'", "S"}));
  EXPECT_EQ(gpt2("'st"), Pieces({"'s", "t"}));
}

TEST(PreTokenizer, Gpt2WhiteSpace) {
  // \s+(?!\S) leaves the last space of a run to the next word.
  EXPECT_EQ(gpt2("a  b"), Pieces({"a", " ", " b"}));
  EXPECT_EQ(gpt2("a   b"), Pieces({"a", "  ", " b"}));
  EXPECT_EQ(gpt2("end   "), Pieces({"end", "   "}));
  // Only ' ' joins a word; a newline run splits as white space.
  EXPECT_EQ(gpt2("x\n\ny"), Pieces({"x", "\n", "\n", "y"}));
  EXPECT_EQ(gpt2(" \tz"), Pieces({" ", "\t", "z"}));
}

TEST(PreTokenizer, Llama3Words) {
  EXPECT_EQ(llama3("Hello world"), Pieces({"Hello", " world"}));
  // Any one non-letter, non-digit, non-newline character prefixes a word.
  EXPECT_EQ(llama3("(hello) \tword"), Pieces({"(hello", ")", " ", "\tword"}));
  EXPECT_EQ(llama3("HE'S I'M"), Pieces({"HE", "'S", " I", "'M"}));
}

TEST(PreTokenizer, Llama3NumbersInGroupsOfThree) {
  EXPECT_EQ(llama3("12345"), Pieces({"123", "45"}));
  EXPECT_EQ(llama3("x 1234567"), Pieces({"x", " ", "123", "456", "7"}));
  EXPECT_EQ(split("12345", {PreTokenizeStep::Llama3SingleDigits}),
            Pieces({"1", "2", "3", "4", "5"}));
}

TEST(PreTokenizer, Llama3NewlinesAndPunctuation) {
  // \s*[\r\n]+ ends after the run's last newline.
  EXPECT_EQ(llama3("x\n\ny"), Pieces({"x", "\n\n", "y"}));
  EXPECT_EQ(llama3("x \n y"), Pieces({"x", " \n", " y"}));
  // Punctuation takes the newlines after it.
  EXPECT_EQ(llama3("...\n\nok"), Pieces({"...\n\n", "ok"}));
  EXPECT_EQ(llama3("a ?!b"), Pieces({"a", " ?!", "b"}));
  EXPECT_EQ(llama3("end  "), Pieces({"end", "  "}));
}

TEST(PreTokenizer, DigitsThenGpt2AsSmolLM) {
  EXPECT_EQ(split("abc123 d", {PreTokenizeStep::SplitDigits, PreTokenizeStep::Gpt2}),
            Pieces({"abc", "1", "2", "3", " d"}));
  EXPECT_EQ(split("a 12", {PreTokenizeStep::SplitDigits, PreTokenizeStep::Gpt2}),
            Pieces({"a", " ", "1", "2"}));
}

TEST(PreTokenizer, PiecesAlwaysCoverTheTextExactly) {
  std::mt19937 rng(77);
  const std::string alphabet[] = {"a",
                                  "Z",
                                  "1",
                                  " ",
                                  "\n",
                                  "\r",
                                  "'",
                                  "s",
                                  "!",
                                  "\xC3\xA9",
                                  "\xE4\xB8\xAD",
                                  "\xFF",
                                  "\x80",
                                  "\t",
                                  "\xF0\x9F\x99\x82"};
  for (int round = 0; round < 300; ++round) {
    std::string text;
    for (int i = int(rng() % 24); i > 0; --i)
      text += alphabet[rng() % std::size(alphabet)];
    for (auto steps : {std::vector<PreTokenizeStep>{PreTokenizeStep::Gpt2},
                       {PreTokenizeStep::Llama3},
                       {PreTokenizeStep::SplitDigits, PreTokenizeStep::Gpt2}}) {
      std::string joined;
      for (std::string_view piece : preTokenize(text, steps)) {
        ASSERT_FALSE(piece.empty());
        joined += piece;
      }
      ASSERT_EQ(joined, text);
    }
  }
}
