// libFuzzer target: quill-serve's request bodies (/v1/completions and
// /v1/chat/completions), checked against a small SentencePiece vocabulary.
// The first byte picks the endpoint (even: completions, odd: chat); the rest
// is the body. A body is a spec or a 400 naming the field: never a crash,
// and a spec's prompts hold only ids of the vocabulary.
#include "CompletionRequest.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

/// <unk>, <s>, </s>, the 256 byte tokens, then a few pieces to merge into.
quill::Tokenizer makeTokenizer() {
  quill::TokenizerData data;
  auto add = [&](std::string piece, quill::TokenType type, float score) {
    data.pieces.push_back(std::move(piece));
    data.types.push_back(type);
    data.scores.push_back(score);
  };
  add("<unk>", quill::TokenType::Unknown, 0);
  add("<s>", quill::TokenType::Control, 0);
  add("</s>", quill::TokenType::Control, 0);
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    add(name, quill::TokenType::Byte, 0);
  }
  int score = 0;
  for (const char *piece : {" ", "a", "b", " a", "ab", " ab", "\n", "hello", " hello"})
    add(piece, quill::TokenType::Normal, float(++score));
  data.unkId = 0, data.bosId = 1, data.eosId = 2;
  data.llama2cLayout = true;
  auto tokenizer = quill::Tokenizer::fromData(std::move(data), "fuzz vocabulary");
  if (!tokenizer)
    __builtin_trap();
  return tokenizer.take();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const quill::Tokenizer tokenizer = makeTokenizer();
  static const quill::ModelConfig config = [] {
    quill::ModelConfig c;
    c.vocabSize = tokenizer.vocabSize();
    c.seqLen = 64;
    return c;
  }();
  if (size == 0)
    return 0;
  const bool chat = data[0] & 1;
  std::string body(reinterpret_cast<const char *>(data + 1), size - 1);
  quill::serve::ModelContext model{tokenizer, config, nullptr, "the model has no chat template"};
  auto parsed = quill::serve::parseCompletionRequest(body, chat, model);
  if (auto *spec = std::get_if<quill::serve::CompletionSpec>(&parsed))
    for (const auto &prompt : spec->prompts)
      for (int32_t id : prompt)
        if (id < 0 || id >= config.vocabSize)
          __builtin_trap();
  return 0;
}
