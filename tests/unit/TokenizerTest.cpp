// Unit tests for the llama2.c tokenizer: merge rules on a hand-built vocab,
// real vocabularies, byte fallback, decoding, and corrupt input.
#include "runtime/tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <utility>
#include <vector>

using quill::ErrorOr;
using quill::Tokenizer;

namespace {

using Ids = std::vector<int32_t>;

std::string sharedPath(const char *relative) {
#ifdef QUILL_SHARED_DIR
  return std::string(QUILL_SHARED_DIR) + "/" + relative;
#else
  return std::string("/nonexistent/") + relative;
#endif
}

void appendScalar(std::vector<uint8_t> &out, const void *value, size_t n) {
  const uint8_t *bytes = static_cast<const uint8_t *>(value);
  out.insert(out.end(), bytes, bytes + n);
}

/// Serializes pieces in llama2.c's tokenizer.bin layout.
std::vector<uint8_t> serialize(const std::vector<std::pair<std::string, float>> &pieces) {
  std::vector<uint8_t> out;
  int32_t maxLen = 0;
  for (const auto &p : pieces)
    maxLen = std::max<int32_t>(maxLen, static_cast<int32_t>(p.first.size()));
  appendScalar(out, &maxLen, 4);
  for (const auto &p : pieces) {
    int32_t len = static_cast<int32_t>(p.first.size());
    appendScalar(out, &p.second, 4);
    appendScalar(out, &len, 4);
    out.insert(out.end(), p.first.begin(), p.first.end());
  }
  return out;
}

/// <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF> (ids 3..258), then
/// extra: the layout of every llama2.c vocabulary. Extra ids start at 259.
std::vector<std::pair<std::string, float>>
smallVocab(const std::vector<std::pair<std::string, float>> &extra) {
  std::vector<std::pair<std::string, float>> pieces = {
      {"<unk>", 0.0f}, {"\n<s>\n", 0.0f}, {"\n</s>\n", 0.0f}};
  const char *hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b)
    pieces.push_back({std::string("<0x") + hex[b / 16] + hex[b % 16] + ">", 0.0f});
  pieces.insert(pieces.end(), extra.begin(), extra.end());
  return pieces;
}

Tokenizer buildTokenizer(const std::vector<std::pair<std::string, float>> &extra) {
  auto pieces = smallVocab(extra);
  auto bytes = serialize(pieces);
  auto tok = Tokenizer::fromBytes(bytes.data(), bytes.size(), static_cast<int32_t>(pieces.size()),
                                  "small");
  EXPECT_TRUE(tok.isOk()) << tok.message();
  return tok.take();
}

/// Concatenates decode() over ids the way a generation loop prints them.
std::string decodeAll(const Tokenizer &tok, const Ids &ids) {
  std::string text;
  for (size_t i = 1; i < ids.size(); ++i)
    text += tok.decode(ids[i - 1], ids[i]);
  return text;
}

// Ids in the hand-built vocab: " "=259, "a"=260, "b"=261, "c"=262, then the
// test's own pieces from 263 on.
constexpr int32_t kSpace = 259, kA = 260, kB = 261, kC = 262;
std::vector<std::pair<std::string, float>>
withLetters(std::vector<std::pair<std::string, float>> more) {
  std::vector<std::pair<std::string, float>> extra = {
      {" ", -1000.0f}, {"a", -1000.0f}, {"b", -1000.0f}, {"c", -1000.0f}};
  extra.insert(extra.end(), more.begin(), more.end());
  return extra;
}

} // namespace

//===----------------------------------------------------------------------===//
// Merge rules, on a vocabulary small enough to reason about completely.
//===----------------------------------------------------------------------===//

TEST(TokenizerRules, EmptyTextIsOnlyTheRequestedSpecials) {
  Tokenizer tok = buildTokenizer(withLetters({}));
  EXPECT_EQ(tok.encode("", true, false), Ids({1}));
  EXPECT_EQ(tok.encode("", false, false), Ids({}));
  EXPECT_EQ(tok.encode("", true, true), Ids({1, 2}));
}

TEST(TokenizerRules, HighestScoringPairMergesFirst) {
  // "ab" (-5) and "bc" (-1) compete for the 'b'; "bc" scores higher.
  Tokenizer tok = buildTokenizer(withLetters({{"ab", -5.0f}, {"bc", -1.0f}}));
  EXPECT_EQ(tok.encode("abc", false, false), Ids({kSpace, kA, 264}));
}

TEST(TokenizerRules, TiesGoToTheLeftmostPair) {
  // Both "aa" pairs in "aaa" score the same: run.c's strict > keeps the first.
  Tokenizer tok = buildTokenizer(withLetters({{"aa", -1.0f}}));
  EXPECT_EQ(tok.encode("aaa", false, false), Ids({kSpace, 263, kA}));
}

TEST(TokenizerRules, MergesRepeatUntilNoPairIsInTheVocab) {
  // " a" -> " ab" -> " abc": merges chain through the dummy prefix.
  Tokenizer tok = buildTokenizer(withLetters({{" a", -1.0f}, {" ab", -2.0f}, {" abc", -3.0f}}));
  EXPECT_EQ(tok.encode("abc", true, true), Ids({1, 265, 2}));
  EXPECT_EQ(tok.encode("abcab", false, false), Ids({265, kA, kB}));
}

TEST(TokenizerRules, ScoresAtOrBelowMinus1e10NeverMerge) {
  // run.c's best score starts at -1e10, so "bb" at exactly -1e10 is never
  // chosen while "cc" at -1e9 is.
  Tokenizer tok = buildTokenizer(withLetters({{"bb", -1e10f}, {"cc", -1e9f}}));
  EXPECT_EQ(tok.encode("bb", false, false), Ids({kSpace, kB, kB}));
  EXPECT_EQ(tok.encode("cc", false, false), Ids({kSpace, 264}));
}

TEST(TokenizerRules, UnknownCodepointsFallBackToBytes) {
  // U+00E9 is C3 A9; byte b is token b + 3.
  Tokenizer tok = buildTokenizer(withLetters({}));
  EXPECT_EQ(tok.encode("a\xC3\xA9", false, false), Ids({kSpace, kA, 0xC3 + 3, 0xA9 + 3}));
}

TEST(TokenizerRules, KnownMultiByteCodepointIsOneToken) {
  Tokenizer tok = buildTokenizer(withLetters({{"\xC3\xA9", -1.0f}}));
  EXPECT_EQ(tok.encode("\xC3\xA9", false, false), Ids({kSpace, 263}));
}

TEST(TokenizerRules, EmbeddedNulIsTheZeroByteToken) {
  Tokenizer tok = buildTokenizer(withLetters({}));
  EXPECT_EQ(tok.encode(std::string_view("a\0b", 3), false, false), Ids({kSpace, kA, 3, kB}));
}

TEST(TokenizerRules, MissingSpacePieceUsesTheSpaceByte) {
  Tokenizer tok = buildTokenizer({{"a", 0.0f}});
  EXPECT_EQ(tok.encode("a", false, false), Ids({' ' + 3, 259}));
}

TEST(TokenizerRules, DuplicatePiecesResolveToTheLowestId) {
  Tokenizer tok = buildTokenizer(withLetters({{"a", 0.0f}}));
  EXPECT_EQ(tok.lookup("a"), kA);
  EXPECT_EQ(tok.encode("a", false, false), Ids({kSpace, kA}));
}

TEST(TokenizerRules, VocabWithoutByteTokensStaysInRange) {
  // Only the three specials: byte fallback has nowhere to go, so <unk>.
  auto bytes = serialize({{"<unk>", 0.0f}, {"<s>", 0.0f}, {"</s>", 0.0f}});
  auto tok = Tokenizer::fromBytes(bytes.data(), bytes.size(), 3, "tiny");
  ASSERT_TRUE(tok.isOk()) << tok.message();
  EXPECT_EQ(tok->encode("hi", true, true), Ids({1, 0, 0, 0, 2}));
}

TEST(TokenizerRules, Accessors) {
  Tokenizer tok = buildTokenizer(withLetters({{"ab", -5.0f}}));
  EXPECT_EQ(tok.vocabSize(), 264);
  EXPECT_EQ(tok.piece(kA), "a");
  EXPECT_EQ(tok.score(263), -5.0f);
  EXPECT_EQ(tok.piece(-1), "");
  EXPECT_EQ(tok.piece(264), "");
  EXPECT_EQ(tok.score(100000), 0.0f);
  EXPECT_EQ(tok.lookup("zz"), -1);
  EXPECT_EQ(tok.bosId(), 1);
  EXPECT_EQ(tok.eosId(), 2);
}

TEST(TokenizerRules, Decode) {
  Tokenizer tok =
      buildTokenizer(withLetters({{" ab", -1.0f}, {"<0x4>", -1.0f}, {"<0x4G>", -1.0f}}));
  EXPECT_EQ(tok.decode(1, 263), "ab");   // after BOS the space goes
  EXPECT_EQ(tok.decode(kA, 263), " ab"); // elsewhere it stays
  EXPECT_EQ(tok.decode(1, kSpace), "");
  EXPECT_EQ(tok.decode(kA, 0x41 + 3), "A");
  EXPECT_EQ(tok.decode(kA, 0x0A + 3), "\n");
  EXPECT_EQ(tok.decode(kA, 0xFF + 3), "\xFF");
  EXPECT_EQ(tok.decode(kA, 3), std::string(1, '\0'));
  EXPECT_EQ(tok.decode(kA, 264), "<0x4>");  // not <0xNN>: kept verbatim
  EXPECT_EQ(tok.decode(kA, 265), "<0x4G>"); // not hex: kept verbatim
  EXPECT_EQ(tok.decode(kA, -1), "");
  EXPECT_EQ(tok.decode(kA, 100000), "");
}

//===----------------------------------------------------------------------===//
// Malformed tokenizer bytes: always an error naming the input, never a crash.
//===----------------------------------------------------------------------===//

TEST(TokenizerErrors, BadVocabSize) {
  auto bytes = serialize(smallVocab({}));
  for (int32_t vocab : {0, -1, 2}) {
    auto tok = Tokenizer::fromBytes(bytes.data(), bytes.size(), vocab, "v.bin");
    ASSERT_FALSE(tok.isOk());
    EXPECT_NE(tok.message().find("v.bin: vocab size"), std::string::npos) << tok.message();
  }
}

TEST(TokenizerErrors, HugeVocabSizeIsTruncationNotAnAllocation) {
  auto bytes = serialize(smallVocab({}));
  auto tok = Tokenizer::fromBytes(bytes.data(), bytes.size(), INT32_MAX, "v.bin");
  ASSERT_FALSE(tok.isOk());
  EXPECT_NE(tok.message().find("truncated in token 259 of 2147483647"), std::string::npos)
      << tok.message();
}

TEST(TokenizerErrors, EveryTruncationIsReported) {
  auto pieces = smallVocab(withLetters({{"ab", -1.0f}}));
  auto bytes = serialize(pieces);
  int32_t vocab = static_cast<int32_t>(pieces.size());
  for (size_t size = 0; size < bytes.size(); ++size) {
    // A copy of exactly size bytes, so a sanitizer sees any overread.
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + size);
    auto tok = Tokenizer::fromBytes(prefix.data(), prefix.size(), vocab, "cut.bin");
    ASSERT_FALSE(tok.isOk()) << "prefix of " << size << " bytes";
    EXPECT_EQ(tok.message().rfind("cut.bin: tokenizer truncated", 0), 0u) << tok.message();
    EXPECT_EQ(tok.message().find('\n'), std::string::npos) << tok.message();
  }
  auto empty = Tokenizer::fromBytes(nullptr, 0, vocab, "none");
  EXPECT_FALSE(empty.isOk());
}

TEST(TokenizerErrors, NegativeAndHugeLengths) {
  auto bytes = serialize(smallVocab({}));
  // Token 0's length field sits after the header and its score.
  const size_t lengthAt = 4 + 4;
  for (int32_t len : {-1, INT32_MIN}) {
    auto bad = bytes;
    std::memcpy(bad.data() + lengthAt, &len, 4);
    auto tok = Tokenizer::fromBytes(bad.data(), bad.size(), 259, "neg.bin");
    ASSERT_FALSE(tok.isOk());
    EXPECT_NE(tok.message().find("neg.bin: token 0 of 259 (offset 4) has negative length"),
              std::string::npos)
        << tok.message();
  }
  auto bad = bytes;
  int32_t huge = INT32_MAX;
  std::memcpy(bad.data() + lengthAt, &huge, 4);
  auto tok = Tokenizer::fromBytes(bad.data(), bad.size(), 259, "huge.bin");
  ASSERT_FALSE(tok.isOk());
  EXPECT_NE(tok.message().find("piece length 2147483647 exceeds"), std::string::npos)
      << tok.message();
}

TEST(TokenizerErrors, NegativeMaxTokenLength) {
  auto bytes = serialize(smallVocab({}));
  int32_t negative = -7;
  std::memcpy(bytes.data(), &negative, 4);
  auto tok = Tokenizer::fromBytes(bytes.data(), bytes.size(), 259, "m.bin");
  ASSERT_FALSE(tok.isOk());
  EXPECT_EQ(tok.message(), "m.bin: negative max_token_length -7");
}

TEST(TokenizerErrors, TrailingBytesAreRefused) {
  auto bytes = serialize(smallVocab({}));
  bytes.resize(bytes.size() + 5, 0xAB);
  auto tok = Tokenizer::fromBytes(bytes.data(), bytes.size(), 259, "pad.bin");
  ASSERT_FALSE(tok.isOk());
  EXPECT_EQ(tok.message(), "pad.bin: 5 unexpected bytes after the tokenizer's 259 tokens");
}

TEST(TokenizerErrors, ATokenizerOfAnotherVocabularySizeIsRefused) {
  // 259 tokens read as a model of 200: the ids past 199 would be garbage to
  // the model (a 32,000-token vocabulary on a 512-token model).
  auto bytes = serialize(smallVocab({}));
  auto tok = Tokenizer::fromBytes(bytes.data(), bytes.size(), 200, "big.bin");
  ASSERT_FALSE(tok.isOk());
  EXPECT_EQ(tok.message(), "big.bin: the tokenizer has 259 tokens, the model's vocabulary 200");
}

TEST(TokenizerErrors, MissingFile) {
  auto tok = Tokenizer::fromFile("/nonexistent/quill/tokenizer.bin", 512);
  ASSERT_FALSE(tok.isOk());
  EXPECT_EQ(tok.message().rfind("/nonexistent/quill/tokenizer.bin: cannot open", 0), 0u)
      << tok.message();
}

TEST(TokenizerErrors, RandomCorruptionNeverCrashes) {
  auto pieces = smallVocab(withLetters({{"ab", -1.0f}, {" a", -2.0f}}));
  auto bytes = serialize(pieces);
  int32_t vocab = static_cast<int32_t>(pieces.size());
  std::mt19937 rng(1234);
  std::uniform_int_distribution<size_t> where(0, bytes.size() - 1);
  std::uniform_int_distribution<int> value(0, 255);
  for (int round = 0; round < 500; ++round) {
    auto bad = bytes;
    for (int flips = 0; flips < 4; ++flips)
      bad[where(rng)] = static_cast<uint8_t>(value(rng));
    auto tok = Tokenizer::fromBytes(bad.data(), bad.size(), vocab, "fuzz");
    if (!tok.isOk())
      continue;
    // Whatever loaded must encode and decode within range.
    Ids ids = tok->encode("ab c\xC3\xA9\xFF", true, true);
    for (int32_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, vocab);
    }
    (void)decodeAll(*tok, ids);
  }
}

//===----------------------------------------------------------------------===//
// Real vocabularies. Expected ids come from an independent Python port of
// run.c's encode() run over the same files (pieces and scores quoted below),
// and for Llama 2 they are SentencePiece's well-known ids.
//===----------------------------------------------------------------------===//

namespace {

class RealTokenizer : public ::testing::Test {
protected:
  void load(const char *relative, int32_t vocab) {
    std::string path = sharedPath(relative);
    if (!std::ifstream(path).good())
      GTEST_SKIP() << path << " absent: shared models are not checked out here";
    auto loaded = Tokenizer::fromFile(path, vocab);
    ASSERT_TRUE(loaded.isOk()) << loaded.message();
    tok_.emplace(loaded.take());
  }
  std::optional<Tokenizer> tok_;
};

/// stories260K's 512-token vocabulary.
class Tok512Test : public RealTokenizer {
protected:
  void SetUp() override { load("models/stories260K/tok512.bin", 512); }
};

/// The 32000-token Llama 2 SentencePiece vocabulary.
class Llama2TokenizerTest : public RealTokenizer {
protected:
  void SetUp() override { load("models/llama2-tokenizer/tokenizer.bin", 32000); }
};

} // namespace

TEST_F(Tok512Test, Pieces) {
  EXPECT_EQ(tok_->vocabSize(), 512);
  EXPECT_EQ(tok_->maxTokenLength(), 7);
  EXPECT_EQ(tok_->piece(1), "\n<s>\n");
  EXPECT_EQ(tok_->piece(3), "<0x00>");
  EXPECT_EQ(tok_->piece(258), "<0xFF>");
  EXPECT_EQ(tok_->piece(410), " ");
  EXPECT_EQ(tok_->piece(403), " Once");
  EXPECT_EQ(tok_->score(403), -144.0f);
}

TEST_F(Tok512Test, EmptyPromptIsJustBos) {
  EXPECT_EQ(tok_->encode("", true, false), Ids({1}));
  EXPECT_EQ(tok_->encode("", true, true), Ids({1, 2}));
}

TEST_F(Tok512Test, PlainSentence) {
  // " Once"=403 " upon"=407 " a"=261 " time"=378 ","=432 " there"=383
  // " was"=286 " little"=376 " g"=298 "ir"=315 "l"=421 " named"=395
  // " Lily"=317 "."=426: " girl" is not a piece, so it stays in three.
  EXPECT_EQ(tok_->encode("Once upon a time", true, false), Ids({1, 403, 407, 261, 378}));
  EXPECT_EQ(tok_->encode("Once upon a time, there was a little girl named Lily.", true, true),
            Ids({1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 2}));
}

TEST_F(Tok512Test, PartialMerges) {
  // No piece longer than " He"=346 (-87), "ll"=306 (-47), " w"=263 (-4),
  // "or"=304 (-45), "ld"=341 (-82) covers "Hello world" in this vocab.
  EXPECT_EQ(tok_->encode("Hello world", true, false), Ids({1, 346, 306, 414, 263, 304, 341}));
}

TEST_F(Tok512Test, ByteFallbackForEmoji) {
  // U+1F600 = F0 9F 98 80 is not a piece; byte b is id b + 3. "é" (C3 A9)
  // is piece 485, but " é" is not, so the dummy prefix " "=410 stays alone.
  EXPECT_EQ(tok_->encode("\xF0\x9F\x98\x80", true, false), Ids({1, 410, 243, 162, 155, 131}));
  EXPECT_EQ(tok_->encode("\xC3\xA9", true, false), Ids({1, 410, 485}));
  EXPECT_EQ(tok_->encode("caf\xC3\xA9 \xF0\x9F\x98\x80!", true, true),
            Ids({1, 280, 412, 431, 485, 410, 243, 162, 155, 131, 443, 2}));
}

TEST_F(Tok512Test, InvalidUtf8BecomesBytes) {
  EXPECT_EQ(tok_->encode("\xFF\xFE", true, true), Ids({1, 410, 258, 257, 2}));
  // A stray continuation byte is its own unit.
  EXPECT_EQ(tok_->encode("\x80"
                         "abc",
                         true, true),
            Ids({1, 410, 131, 412, 430, 429, 2}));
  // A truncated 3-byte sequence at the end of the text.
  EXPECT_EQ(tok_->encode("\xE2\x82", true, true), Ids({1, 410, 229, 133, 2}));
  // Too many continuation bytes: units are capped at 4 bytes.
  EXPECT_EQ(tok_->encode("\xC3\x80\x80\x80\x80\x80", true, true),
            Ids({1, 410, 198, 131, 131, 131, 131, 131, 2}));
}

TEST_F(Tok512Test, DecodeByteTokens) {
  EXPECT_EQ(tok_->decode(410, 243), "\xF0");
  EXPECT_EQ(tok_->decode(243, 162), "\x9F");
  EXPECT_EQ(tok_->decode(1, 3 + '\n'), "\n");
  EXPECT_EQ(decodeAll(*tok_, {1, 410, 243, 162, 155, 131}), "\xF0\x9F\x98\x80");
}

TEST_F(Tok512Test, DecodeAfterBosStripsTheSpace) {
  EXPECT_EQ(tok_->decode(1, 403), "Once");
  EXPECT_EQ(tok_->decode(403, 407), " upon");
  EXPECT_EQ(tok_->decode(1, 410), "");
}

TEST_F(Tok512Test, DecodeInvertsEncode) {
  for (const char *text :
       {"Once upon a time, there was a little girl named Lily.", "caf\xC3\xA9 \xF0\x9F\x98\x80!",
        "two  spaces\nand a newline", "\xFF\xFE broken \xE2\x82"}) {
    EXPECT_EQ(decodeAll(*tok_, tok_->encode(text, true, false)), text);
  }
}

TEST_F(Llama2TokenizerTest, Pieces) {
  EXPECT_EQ(tok_->vocabSize(), 32000);
  EXPECT_EQ(tok_->piece(15043), " Hello");
  EXPECT_EQ(tok_->piece(3186), " world");
  EXPECT_EQ(tok_->piece(29871), " ");
  EXPECT_EQ(tok_->piece(13), "<0x0A>");
}

TEST_F(Llama2TokenizerTest, EmptyPromptIsJustBos) {
  EXPECT_EQ(tok_->encode("", true, false), Ids({1}));
}

TEST_F(Llama2TokenizerTest, KnownSentencePieceIds) {
  EXPECT_EQ(tok_->encode("Hello world", true, false), Ids({1, 15043, 3186}));
  EXPECT_EQ(tok_->encode("I believe the meaning of life is", true, false),
            Ids({1, 306, 4658, 278, 6593, 310, 2834, 338}));
  // "\n" has no piece of its own: byte token <0x0A>=13. After it, "world"
  // (11526) has no dummy space.
  EXPECT_EQ(tok_->encode("Hello\nworld", true, true), Ids({1, 15043, 13, 11526, 2}));
}

TEST_F(Llama2TokenizerTest, Spaces) {
  // " a"=263, " "=29871, " b"=289: the second space merges into " b", the
  // first stays alone after " a".
  EXPECT_EQ(tok_->encode("a  b", true, false), Ids({1, 263, 29871, 289}));
}

TEST_F(Llama2TokenizerTest, MultiByteAndByteFallback) {
  // "你"=30919 and "好"=31076 are pieces; the emoji is not.
  EXPECT_EQ(tok_->encode("\xE4\xBD\xA0\xE5\xA5\xBD", true, false), Ids({1, 29871, 30919, 31076}));
  EXPECT_EQ(tok_->encode("\xF0\x9F\x98\x80", true, false), Ids({1, 29871, 243, 162, 155, 131}));
  EXPECT_EQ(tok_->encode("\xFF", true, true), Ids({1, 29871, 258, 2}));
}

TEST_F(Llama2TokenizerTest, Decode) {
  EXPECT_EQ(tok_->decode(1, 15043), "Hello");
  EXPECT_EQ(tok_->decode(15043, 3186), " world");
  EXPECT_EQ(tok_->decode(15043, 13), "\n");
  std::string text = "I believe the meaning of life is \xF0\x9F\x98\x80\n";
  EXPECT_EQ(decodeAll(*tok_, tok_->encode(text, true, false)), text);
}
