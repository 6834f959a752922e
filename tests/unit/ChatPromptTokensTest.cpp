// Chat prompts keep special tokens whole (Tokenizer::encodeChat) for both
// tokenizer kinds, with hand-worked ids; and the chat template of a Hugging
// Face checkpoint is read from tokenizer_config.json.
#include "ModelWriters.h"

#include "compiler/Import/ChatTemplateImport.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/TokenizerFormat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>

using namespace quill;

namespace {

using Ids = std::vector<int32_t>;

// A SentencePiece vocabulary: specials, the 256 byte tokens, then pieces
// whose scores make " h" + "i" merge into " hi".
constexpr int32_t kUnk = 0, kBos = 1, kEos = 2, kInst = 3, kEndInst = 4, kX = 5, kXy = 6;
constexpr int32_t kFirstByte = 7, kSpace = 263, kH = 264, kI = 265, kSpH = 266, kSpHi = 267;

TokenizerData sentencePieceVocab() {
  TokenizerData d;
  d.kind = TokenizerKind::SentencePieceBpe;
  d.pieces = {"<unk>", "<s>", "</s>", "[INST]", "[/INST]", "<|x|>", "<|x|>y"};
  d.types = {TokenType::Unknown, TokenType::Control,     TokenType::Control,    TokenType::Control,
             TokenType::Control, TokenType::UserDefined, TokenType::UserDefined};
  const char *hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    d.pieces.push_back(std::string("<0x") + hex[b / 16] + hex[b % 16] + ">");
    d.types.push_back(TokenType::Byte);
  }
  for (const char *p : {" ", "h", "i", " h", " hi"}) {
    d.pieces.push_back(p);
    d.types.push_back(TokenType::Normal);
  }
  d.scores.assign(d.pieces.size(), 0.0f);
  d.scores[kSpH] = 1.0f;
  d.scores[kSpHi] = 2.0f;
  d.unkId = kUnk;
  d.bosId = kBos;
  d.eosId = kEos;
  d.flags = kAddDummyPrefix;
  return d;
}

Tokenizer load(const TokenizerData &data) {
  auto tok = Tokenizer::fromData(data, "test");
  EXPECT_TRUE(tok.isOk()) << tok.message();
  return tok.take();
}

} // namespace

TEST(ChatPromptTokens, SentencePieceCutsOutControlTokens) {
  Tokenizer tok = load(sentencePieceVocab());
  ASSERT_EQ(tok.lookup(" hi"), kSpHi);
  ASSERT_EQ(tok.lookup("<0x00>"), kFirstByte);
  // "<s>", "[INST]", then " hi " with its dummy-prefix space: " " " " "h" "i"
  // " " -> " h" merges (score 1), then " hi" (score 2).
  EXPECT_EQ(tok.encodeChat("<s>[INST] hi [/INST]"),
            (Ids{kBos, kInst, kSpace, kSpHi, kSpace, kEndInst}));
  // No BOS of its own, and an empty text is no tokens.
  EXPECT_EQ(tok.encodeChat("</s>"), (Ids{kEos}));
  EXPECT_EQ(tok.encodeChat(""), (Ids{}));
}

TEST(ChatPromptTokens, SentencePieceMergesStopAtSpecialTokens) {
  Tokenizer tok = load(sentencePieceVocab());
  // "h" -> " h"; "i" -> " " "i" (" i" is no piece): each run has its prefix.
  EXPECT_EQ(tok.encodeChat("h<s>i"), (Ids{kSpH, kBos, kSpace, kI}));
  // The longest user-defined piece wins where two start at one place.
  EXPECT_EQ(tok.encodeChat("<|x|>y<|x|>"), (Ids{kXy, kX}));
  // Plain encode() reads the same text as characters: '<' is byte 0x3C.
  Ids plain = tok.encode("<s>", /*addBos=*/false, /*addEos=*/false);
  EXPECT_EQ(plain, (Ids{kSpace, kFirstByte + '<', kFirstByte + 's', kFirstByte + '>'}));
}

TEST(ChatPromptTokens, ByteLevelKeepsAddedTokensAndAddsNoBos) {
  test::SmallByteLevelVocab v = test::smallByteLevelVocab();
  TokenizerData d;
  d.kind = TokenizerKind::ByteLevelBpe;
  d.pieces = v.pieces;
  d.scores.assign(d.pieces.size(), 0.0f);
  d.types.assign(d.pieces.size(), TokenType::Normal);
  for (int id : v.controlIds)
    d.types[id] = TokenType::Control;
  for (const auto &[left, right] : v.merges) {
    auto id = [&](const std::string &p) {
      return int32_t(std::find(d.pieces.begin(), d.pieces.end(), p) - d.pieces.begin());
    };
    d.merges.emplace_back(id(left), id(right));
  }
  d.bosId = 266;
  d.eosId = 265;
  d.preTokenizer = {PreTokenizeStep::Gpt2};
  Tokenizer tok = load(d);
  // <|bos|> hello <|end|>: 266 259 265 (the vocabulary's hand-worked ids).
  EXPECT_EQ(tok.encodeChat("<|bos|>hello<|end|>"), (Ids{266, 259, 265}));
  EXPECT_EQ(tok.encodeChat("hello world"), (Ids{259, 264}));
}

namespace {

/// A fresh checkpoint directory holding `tokenizerConfig` as
/// tokenizer_config.json (none when empty).
std::string hfDir(const std::string &tokenizerConfig) {
  static int count = 0;
  std::string dir = test::scratchRoot() + "/chat-template-" + std::to_string(count++);
  std::filesystem::create_directories(dir);
  if (!tokenizerConfig.empty())
    test::writeText(dir + "/tokenizer_config.json", tokenizerConfig);
  return dir;
}

} // namespace

TEST(ChatTemplateImport, HuggingFaceStringListAndAbsent) {
  auto plain = chatTemplateFromHfDirectory(hfDir(R"({"chat_template": "{{ x }}"})"));
  ASSERT_TRUE(plain.isOk()) << plain.message();
  ASSERT_TRUE(plain->has_value());
  EXPECT_EQ((*plain)->text, "{{ x }}");

  auto named =
      chatTemplateFromHfDirectory(hfDir(R"({"chat_template": [{"name": "tool_use", "template": "T"},
                                     {"name": "default", "template": "D"}]})"));
  ASSERT_TRUE(named.isOk()) << named.message();
  EXPECT_EQ((*named)->text, "D");
  auto first = chatTemplateFromHfDirectory(
      hfDir(R"({"chat_template": [{"name": "rag", "template": "R"}]})"));
  ASSERT_TRUE(first.isOk()) << first.message();
  EXPECT_EQ((*first)->text, "R");

  for (const char *config : {"", R"({"bos_token": "<s>"})", R"({"chat_template": null})"}) {
    auto none = chatTemplateFromHfDirectory(hfDir(config));
    ASSERT_TRUE(none.isOk()) << none.message();
    EXPECT_FALSE(none->has_value()) << config;
  }
}

TEST(ChatTemplateImport, HuggingFaceBadValuesAreOneLine) {
  for (const char *config :
       {R"({"chat_template": 3})", R"({"chat_template": [{"name": "a"}]})",
        R"({"chat_template": []})", R"({"chat_template": "\u0000"})", R"({"chat_template": )"}) {
    auto r = chatTemplateFromHfDirectory(hfDir(config));
    ASSERT_FALSE(r.isOk()) << config;
    EXPECT_NE(r.message().find("tokenizer_config.json"), std::string::npos) << r.message();
    EXPECT_EQ(r.message().find('\n'), std::string::npos) << r.message();
  }
}

namespace {

/// A small llama GGUF with `extra` metadata, opened.
ErrorOr<std::unique_ptr<ModelSource>>
ggufWith(const std::function<void(test::GgufWriter &)> &extra) {
  static int count = 0;
  ModelConfig c;
  c.dim = 16, c.hiddenDim = 32, c.nLayers = 1, c.nHeads = 2, c.nKvHeads = 2, c.vocabSize = 32,
  c.seqLen = 8;
  std::string path = test::scratchRoot() + "/chat-template-" + std::to_string(count++) + ".gguf";
  test::writeBytes(path,
                   test::llamaGgufBytes(c, test::syntheticTensors(c, 3, [](float v) { return v; }),
                                        "F32", 3, nullptr, extra));
  return openModel(path);
}

} // namespace

TEST(ChatTemplateImport, GgufStringAbsentAndWrongType) {
  auto with =
      ggufWith([](test::GgufWriter &w) { w.addString("tokenizer.chat_template", "{{ x }}"); });
  ASSERT_TRUE(with.isOk()) << with.message();
  auto t = (*with)->chatTemplate();
  ASSERT_TRUE(t.isOk()) << t.message();
  ASSERT_TRUE(t->has_value());
  EXPECT_EQ((*t)->text, "{{ x }}");
  EXPECT_NE((*t)->source.find("tokenizer.chat_template"), std::string::npos) << (*t)->source;

  auto without = ggufWith({});
  ASSERT_TRUE(without.isOk()) << without.message();
  auto none = (*without)->chatTemplate();
  ASSERT_TRUE(none.isOk()) << none.message();
  EXPECT_FALSE(none->has_value());

  auto number = ggufWith([](test::GgufWriter &w) { w.addU32("tokenizer.chat_template", 7); });
  ASSERT_TRUE(number.isOk()) << number.message();
  auto wrong = (*number)->chatTemplate();
  ASSERT_FALSE(wrong.isOk());
  EXPECT_NE(wrong.message().find("not a string"), std::string::npos) << wrong.message();
  EXPECT_EQ(wrong.message().find('\n'), std::string::npos) << wrong.message();
}
