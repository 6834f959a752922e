// Byte-level BPE and the versioned tokenizer format: a hand-built vocabulary
// with merges and hand-worked ids, GPT-2's byte map, and corrupt bytes.
#include "runtime/tokenizer/ByteLevelBpe.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/TokenizerFormat.h"

#include <gtest/gtest.h>

#include <random>

using namespace quill;

namespace {

using Ids = std::vector<int32_t>;

// Ids 0..255 are the single bytes; merges make these, in rank order.
constexpr int32_t kHe = 256, kLl = 257, kHell = 258, kHello = 259, kSpW = 260, kOr = 261,
                  kSpWor = 262, kLd = 263, kSpWorld = 264, kEnd = 265, kBos = 266, kEl = 267,
                  kHlo = 268;

TokenizerData byteLevelVocab(uint32_t flags = 0) {
  TokenizerData d;
  d.kind = TokenizerKind::ByteLevelBpe;
  for (int b = 0; b < 256; ++b)
    d.pieces.push_back(std::string(1, char(b)));
  for (const char *p : {"he", "ll", "hell", "hello", " w", "or", " wor", "ld", " world", "<|end|>",
                        "<|bos|>", "el", "hlo"})
    d.pieces.push_back(p);
  d.scores.assign(d.pieces.size(), 0.0f);
  d.types.assign(d.pieces.size(), TokenType::Normal);
  d.types[kEnd] = d.types[kBos] = TokenType::Control;
  auto id = [](char c) { return int32_t(uint8_t(c)); };
  d.merges = {{id('h'), id('e')}, {id('l'), id('l')}, {kHe, kLl},  {kHell, id('o')},
              {id(' '), id('w')}, {id('o'), id('r')}, {kSpW, kOr}, {id('l'), id('d')},
              {kSpWor, kLd},      {id('e'), id('l')}};
  d.bosId = kBos;
  d.eosId = kEnd;
  d.flags = flags;
  d.preTokenizer = {PreTokenizeStep::Gpt2};
  return d;
}

Tokenizer load(const TokenizerData &data) {
  std::vector<uint8_t> bytes = serializeTokenizer(data);
  auto tok = Tokenizer::fromBytes(bytes.data(), bytes.size(), int32_t(data.pieces.size()), "test");
  EXPECT_TRUE(tok.isOk()) << tok.message();
  return tok.take();
}

} // namespace

TEST(Gpt2ByteMap, KnownCharacters) {
  EXPECT_EQ(gpt2CodepointOfByte(' '), 0x120u);  // Ġ
  EXPECT_EQ(gpt2CodepointOfByte('\n'), 0x10Au); // Ċ
  EXPECT_EQ(gpt2CodepointOfByte(0x00), 0x100u);
  EXPECT_EQ(gpt2CodepointOfByte('!'), uint32_t('!'));
  EXPECT_EQ(gpt2CodepointOfByte(0x7F), 0x121u);
  EXPECT_EQ(gpt2CodepointOfByte(0xA0), 0x142u);
  EXPECT_EQ(gpt2CodepointOfByte(0xAD), 0x143u); // the last stand-in, Ń
  EXPECT_EQ(gpt2CodepointOfByte(0xE9), 0xE9u);
  EXPECT_EQ(gpt2BytesToPiece(" hi\n"), "\xC4\xA0hi\xC4\x8A");
  EXPECT_EQ(gpt2PieceToBytes("\xC4\xA0world"), std::string(" world"));
  EXPECT_EQ(gpt2PieceToBytes("\xC3\xA9"), std::string("\xE9"));
  EXPECT_FALSE(gpt2PieceToBytes("\xE4\xB8\xAD").has_value()); // 中: no byte
  for (int b = 0; b < 256; ++b) {
    std::string one(1, char(b));
    EXPECT_EQ(gpt2PieceToBytes(gpt2BytesToPiece(one)), one);
  }
}

TEST(ByteLevelBpe, MergesByRankInsideWords) {
  Tokenizer tok = load(byteLevelVocab());
  EXPECT_EQ(tok.kind(), TokenizerKind::ByteLevelBpe);
  // "hello": he, ll, hell, hello. " world": " w", or, " wor", ld, " world".
  EXPECT_EQ(tok.encode("hello world", false, false), Ids({kHello, kSpWorld}));
  EXPECT_EQ(tok.encode("hello world", true, true), Ids({kBos, kHello, kSpWorld, kEnd}));
  // (h,e) has rank 0 and (e,l) rank 9: "he" wins, and "he"+"l" is no merge.
  EXPECT_EQ(tok.encode("hel", false, false), Ids({kHe, 'l'}));
  EXPECT_EQ(tok.encode("helo", false, false), Ids({kHe, 'l', 'o'}));
  EXPECT_EQ(tok.encode("el", false, false), Ids({kEl}));
  // Words never merge across the pre-tokenizer's cuts: "o" + " w" stay apart.
  EXPECT_EQ(tok.encode("o world", false, false), Ids({'o', kSpWorld}));
  // Bytes outside every merge stay single bytes, UTF-8 split into bytes.
  EXPECT_EQ(tok.encode("\xC3\xA9!", false, false), Ids({0xC3, 0xA9, '!'}));
  EXPECT_EQ(tok.encode("", true, false), Ids({kBos}));
}

TEST(ByteLevelBpe, AddedTokensAreCutOutFirst) {
  Tokenizer tok = load(byteLevelVocab());
  EXPECT_EQ(tok.encode("hello<|end|>hello", false, false), Ids({kHello, kEnd, kHello}));
  EXPECT_EQ(tok.encode("<|end|><|bos|>", false, false), Ids({kEnd, kBos}));
  EXPECT_EQ(tok.encode("<|en", false, false), Ids({'<', '|', 'e', 'n'}));
}

TEST(ByteLevelBpe, FlagsIgnoreMergesAndPrefixSpace) {
  Tokenizer plain = load(byteLevelVocab());
  EXPECT_EQ(plain.encode("hlo", false, false), Ids({'h', 'l', 'o'}));
  Tokenizer ignore = load(byteLevelVocab(kIgnoreMerges));
  EXPECT_EQ(ignore.encode("hlo", false, false), Ids({kHlo}));
  Tokenizer prefix = load(byteLevelVocab(kAddPrefixSpace));
  EXPECT_EQ(prefix.encode("world", false, false), Ids({kSpWorld}));
  EXPECT_EQ(prefix.encode(" world", false, false), Ids({kSpWorld}));
}

TEST(ByteLevelBpe, DecodeGivesRawBytes) {
  Tokenizer tok = load(byteLevelVocab());
  EXPECT_EQ(tok.decode(kBos, kSpWorld), " world"); // No space stripping.
  EXPECT_EQ(tok.decode(kHello, 0xC3) + tok.decode(0xC3, 0xA9), "\xC3\xA9");
  EXPECT_EQ(tok.decode(kHello, kEnd), "<|end|>");
  EXPECT_EQ(tok.decode(kHello, 9999), "");
  EXPECT_EQ(tok.bosId(), kBos);
  EXPECT_EQ(tok.eosId(), kEnd);
}

TEST(ByteLevelBpe, MergeToAMissingPieceIsRejected) {
  TokenizerData d = byteLevelVocab();
  d.merges.push_back({'x', 'y'}); // "xy" is not in the vocabulary.
  auto tok = Tokenizer::fromData(d, "bad");
  ASSERT_FALSE(tok.isOk());
  EXPECT_NE(tok.message().find("bad: merge 10"), std::string::npos) << tok.message();
}

TEST(TokenizerFormat, VersionedRoundTrip) {
  TokenizerData d = byteLevelVocab(kIgnoreMerges);
  d.preTokenizer = {PreTokenizeStep::SplitDigits, PreTokenizeStep::Llama3};
  std::vector<uint8_t> bytes = serializeTokenizer(d);
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "QUILLTOK");
  auto back = parseTokenizer(bytes.data(), bytes.size(), int32_t(d.pieces.size()), "t");
  ASSERT_TRUE(back.isOk()) << back.message();
  EXPECT_EQ(back->pieces, d.pieces);
  EXPECT_EQ(back->merges, d.merges);
  EXPECT_EQ(back->preTokenizer, d.preTokenizer);
  EXPECT_EQ(back->flags, d.flags);
  EXPECT_EQ(back->bosId, kBos);
  // The vocabulary size must match the model's.
  auto wrong = parseTokenizer(bytes.data(), bytes.size(), 300, "t");
  ASSERT_FALSE(wrong.isOk());
  EXPECT_NE(wrong.message().find("269 tokens"), std::string::npos) << wrong.message();
}

TEST(TokenizerFormat, SentencePieceWithOtherIdsUsesTheVersionedForm) {
  // A SentencePiece vocabulary whose specials are not 0/1/2: tokenizer.bin
  // cannot say that, so the versioned format carries it.
  TokenizerData d;
  d.kind = TokenizerKind::SentencePieceBpe;
  d.flags = kAddDummyPrefix;
  d.pieces = {" ", "a", "b", " a", " ab", "<s>", "</s>", "<unk>"};
  d.scores = {-9, -9, -9, -1, -2, 0, 0, 0};
  d.types.assign(d.pieces.size(), TokenType::Normal);
  d.bosId = 5, d.eosId = 6, d.unkId = 7;
  EXPECT_FALSE(fitsLlama2cLayout(d));
  Tokenizer tok = load(d);
  EXPECT_EQ(tok.kind(), TokenizerKind::SentencePieceBpe);
  // " ab" via " a"; "c" has no piece and no <0x63>: unk.
  EXPECT_EQ(tok.encode("abc", true, true), Ids({5, 4, 7, 6}));
  EXPECT_EQ(tok.decode(5, 4), "ab");
}

TEST(TokenizerFormat, EveryTruncationOfTheVersionedFormIsAnError) {
  std::vector<uint8_t> bytes = serializeTokenizer(byteLevelVocab());
  for (size_t size = 0; size < bytes.size(); ++size) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + size);
    auto tok = Tokenizer::fromBytes(prefix.data(), prefix.size(), 269, "cut");
    ASSERT_FALSE(tok.isOk()) << size;
    EXPECT_EQ(tok.message().rfind("cut: ", 0), 0u) << tok.message();
    EXPECT_EQ(tok.message().find('\n'), std::string::npos);
  }
}

TEST(TokenizerFormat, BitFlipsNeverCrash) {
  const std::vector<uint8_t> bytes = serializeTokenizer(byteLevelVocab());
  std::mt19937 rng(20240601);
  for (int round = 0; round < 1500; ++round) {
    std::vector<uint8_t> bad = bytes;
    for (int flips = 1 + int(rng() % 3); flips > 0; --flips)
      bad[rng() % bad.size()] ^= uint8_t(1u << (rng() % 8));
    auto tok = Tokenizer::fromBytes(bad.data(), bad.size(), 269, "flip");
    if (!tok.isOk())
      continue;
    for (int32_t id : tok->encode("hello world <|end|> 12\xC3\xA9", true, true)) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, 269);
      (void)tok->decode(0, id);
    }
  }
}
