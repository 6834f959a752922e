// tokenizer.json conversion: byte-level BPE (GPT-2, Llama 3 and SmolLM
// pre-tokenizers) with hand-worked ids, SentencePiece-style BPE with byte
// fallback against llama2.c's merge rule, and the kinds Quill refuses.
#include "ModelWriters.h"

#include "compiler/Import/HfTokenizer.h"
#include "compiler/Import/JsonValue.h"
#include "runtime/support/Json.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

using namespace quill;
using namespace quill::test;

namespace {

using Ids = std::vector<int32_t>;

const char *kLlama3Split =
    R"({"type": "Split", "pattern": {"Regex": )"
    R"("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},)"
    R"( "behavior": "Isolated", "invert": false})";

/// The shared small byte-level vocabulary as a tokenizer.json.
std::string byteLevelJson(const std::string &preTokenizer, bool mergesAsArrays = false,
                          const std::string &modelExtra = "",
                          const std::string &normalizer = "null") {
  SmallByteLevelVocab v = smallByteLevelVocab();
  std::string vocab, added, merges;
  for (size_t id = 0; id < v.pieces.size(); ++id) {
    bool control =
        std::find(v.controlIds.begin(), v.controlIds.end(), int(id)) != v.controlIds.end();
    if (control) {
      added += std::string(added.empty() ? "" : ", ") + "{\"id\": " + std::to_string(id) +
               ", \"content\": " + jsonQuote(v.pieces[id]) + ", \"special\": true}";
      continue;
    }
    vocab += std::string(vocab.empty() ? "" : ", ") + jsonQuote(gpt2Printable(v.pieces[id])) +
             ": " + std::to_string(id);
  }
  for (auto [left, right] : v.merges) {
    std::string l = gpt2Printable(left), r = gpt2Printable(right);
    merges +=
        std::string(merges.empty() ? "" : ", ") +
        (mergesAsArrays ? "[" + jsonQuote(l) + ", " + jsonQuote(r) + "]" : jsonQuote(l + " " + r));
  }
  return "{\"version\": \"1.0\", \"added_tokens\": [" + added + "], \"normalizer\": " + normalizer +
         ", \"pre_tokenizer\": " + preTokenizer +
         ", \"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": "
         "\"BPE\", \"byte_fallback\": false" +
         modelExtra + ", \"vocab\": {" + vocab + "}, \"merges\": [" + merges + "]}}";
}

ErrorOr<TokenizerData> convert(const std::string &json, int32_t bos = 266, int32_t eos = 265) {
  auto parsed = parseJson(json, "tokenizer.json");
  if (!parsed)
    return parsed.status();
  return tokenizerFromHfJson(*parsed, "tokenizer.json", bos, eos);
}

Tokenizer runtimeTokenizer(const TokenizerData &data) {
  std::vector<uint8_t> bytes = serializeTokenizer(data);
  auto tok = Tokenizer::fromBytes(bytes.data(), bytes.size(), int32_t(data.pieces.size()), "t");
  EXPECT_TRUE(tok.isOk()) << tok.message();
  return tok.take();
}

} // namespace

TEST(HfTokenizer, Gpt2ByteLevel) {
  for (bool arrays : {false, true}) {
    auto data = convert(byteLevelJson(
        R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})", arrays));
    ASSERT_TRUE(data.isOk()) << data.message();
    EXPECT_EQ(data->kind, TokenizerKind::ByteLevelBpe);
    EXPECT_EQ(data->preTokenizer, std::vector<PreTokenizeStep>{PreTokenizeStep::Gpt2});
    EXPECT_EQ(data->pieces[260], " w");
    EXPECT_EQ(data->types[265], TokenType::Control);
    Tokenizer tok = runtimeTokenizer(*data);
    EXPECT_EQ(tok.encode("hello world", true, false), Ids({266, 259, 264}));
    EXPECT_EQ(tok.encode("hel<|end|>", false, false), Ids({256, 'l', 265}));
    EXPECT_EQ(tok.encode("hlo", false, false), Ids({'h', 'l', 'o'}));
  }
}

TEST(HfTokenizer, Llama3SplitWithIgnoreMerges) {
  auto data = convert(byteLevelJson(
      std::string(R"({"type": "Sequence", "pretokenizers": [)") + kLlama3Split +
          R"(, {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})",
      false, ", \"ignore_merges\": true"));
  ASSERT_TRUE(data.isOk()) << data.message();
  EXPECT_EQ(data->preTokenizer, std::vector<PreTokenizeStep>{PreTokenizeStep::Llama3});
  EXPECT_TRUE(data->flags & kIgnoreMerges);
  Tokenizer tok = runtimeTokenizer(*data);
  EXPECT_EQ(tok.encode("hlo world", false, false), Ids({268, 264}));
}

TEST(HfTokenizer, SmolLMDigitsThenByteLevel) {
  auto data = convert(byteLevelJson(R"({"type": "Sequence", "pretokenizers": [{"type": "Digits", )"
                                    R"("individual_digits": true}, {"type": "ByteLevel", )"
                                    R"("add_prefix_space": true, "use_regex": true}]})"));
  ASSERT_TRUE(data.isOk()) << data.message();
  EXPECT_EQ(data->preTokenizer,
            (std::vector<PreTokenizeStep>{PreTokenizeStep::SplitDigits, PreTokenizeStep::Gpt2}));
  EXPECT_TRUE(data->flags & kAddPrefixSpace);
  Tokenizer tok = runtimeTokenizer(*data);
  EXPECT_EQ(tok.encode("world", false, false), Ids({264}));
}

TEST(HfTokenizer, SentencePieceStyleScoresFollowMergeRanks) {
  // <unk> <s> </s>, the byte tokens, then pieces; merges in rank order.
  std::string vocab = R"("<unk>": 0, "<s>": 1, "</s>": 2)";
  const char *hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b)
    vocab += std::string(", \"<0x") + hex[b / 16] + hex[b % 16] + ">\": " + std::to_string(3 + b);
  // 259 ▁, 260 a, 261 b, 262 c, 263 ▁a, 264 bc, 265 ▁abc, 266 ab
  vocab += R"(, "\u2581": 259, "a": 260, "b": 261, "c": 262, "\u2581a": 263,)"
           R"( "bc": 264, "\u2581abc": 265, "ab": 266)";
  std::string merges = R"(["\u2581 a", "b c", "\u2581a bc", "a b"])"; // ranks 0 1 2 3
  std::string json = R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true},)"
                     R"( {"id": 1, "content": "<s>", "special": true},)"
                     R"( {"id": 2, "content": "</s>", "special": true}],)"
                     R"( "normalizer": {"type": "Sequence", "normalizers": [)"
                     R"({"type": "Prepend", "prepend": "\u2581"},)"
                     R"( {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},)"
                     R"( "pre_tokenizer": null, "model": {"type": "BPE", "byte_fallback": true,)"
                     R"( "unk_token": "<unk>", "vocab": {)" +
                     vocab + "}, \"merges\": " + merges + "}}";
  auto data = convert(json, 1, 2);
  ASSERT_TRUE(data.isOk()) << data.message();
  EXPECT_EQ(data->kind, TokenizerKind::SentencePieceBpe);
  EXPECT_TRUE(fitsLlama2cLayout(*data));
  EXPECT_EQ(data->pieces[263], " a");
  EXPECT_EQ(data->scores[263], -0.0f);
  EXPECT_EQ(data->scores[264], -1.0f);
  EXPECT_EQ(data->scores[265], -2.0f);
  EXPECT_EQ(data->scores[266], -3.0f);
  EXPECT_EQ(data->scores[260], -1e10f); // No merge makes "a".
  EXPECT_EQ(data->types[5], TokenType::Byte);
  EXPECT_EQ(data->types[0], TokenType::Unknown);
  Tokenizer tok = runtimeTokenizer(*data);
  // " abc": (▁,a) rank 0 first, then (b,c) rank 1, then (▁a,bc) rank 2.
  EXPECT_EQ(tok.encode("abc", true, false), Ids({1, 265}));
  // "ab": ▁+a beats a+b (rank 0 < 3): ▁a b.
  EXPECT_EQ(tok.encode("ab", false, false), Ids({263, 261}));
  // "xa": x has no piece: its byte, then ▁ alone.
  EXPECT_EQ(tok.encode("xa", false, false), Ids({259, 'x' + 3, 260}));
}

TEST(HfTokenizer, UnsupportedKindsAreOneLineErrors) {
  struct Case {
    std::string json, expected;
  };
  const std::string byteLevel = R"({"type": "ByteLevel", "add_prefix_space": false})";
  for (const Case &c : std::vector<Case>{
           {R"({"model": {"type": "Unigram", "vocab": []}})",
            "tokenizer.json: tokenizer model type 'Unigram' is not supported "
            "(Quill reads BPE)"},
           {R"({"model": {"type": "WordPiece", "vocab": {}}})", "model type 'WordPiece'"},
           {R"({"version": "1.0"})", "no \"model\" object"},
           {R"({"pre_tokenizer": null, "model": {"type": "BPE", "vocab": )"
            R"({"a": 0}, "merges": []}})",
            "neither byte-level"},
           {byteLevelJson(R"({"type": "Split", "pattern": {"Regex": "\\w+"},)"
                          R"( "behavior": "Isolated"})"),
            "pre_tokenizer Split regex is not one Quill implements"},
           {byteLevelJson(R"({"type": "Whitespace"})"),
            "pre_tokenizer 'Whitespace' is not supported"},
           {byteLevelJson(byteLevel, false, "", R"({"type": "NFC"})"),
            "normalizer 'NFC' is not supported for byte-level BPE"},
           {R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": )"
            R"("BPE", "vocab": {"a": 0}, "merges": ["a zz"]}})",
            "merge 0 'a zz' names a token not in the vocabulary"},
           {R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": )"
            R"("BPE", "vocab": {"a": -3}, "merges": []}})",
            "an id that is not an integer"},
           // Two tokens sharing an id (so another id has none).
           {R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": )"
            R"("BPE", "vocab": {"a": 0, "b": 1, "c": 1}, "merges": []}})",
            "model.vocab gives id 1 to 'c', which 'b' already has"},
           {R"({"added_tokens": [{"id": 0, "content": "<s>"}], "pre_tokenizer": )"
            R"({"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0}, )"
            R"("merges": []}})",
            "added_tokens gives id 0 to '<s>', which 'a' already has"}}) {
    auto data = convert(c.json);
    ASSERT_FALSE(data.isOk()) << c.json;
    EXPECT_NE(data.message().find(c.expected), std::string::npos) << data.message();
    EXPECT_EQ(data.message().rfind("tokenizer.json: ", 0), 0u);
  }
}
