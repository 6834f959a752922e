// libFuzzer target: encode and decode of arbitrary bytes with every kind of
// tokenizer: llama2.c's tok512.bin and the 32,000-token Llama 2 vocabulary
// (from ../shared, when present), and hand-built byte-level vocabularies
// with each pre-tokenizer. The first byte picks the tokenizer and the
// input's reading; the rest is text, or token ids to decode.
//
// Beyond "no crash", it checks what must hold for any text:
//  * every id encode() and encodeChat() return is in the vocabulary;
//  * decoding encode()'s ids gives the text back: byte-level BPE always,
//    SentencePiece where the vocabulary has all 256 byte tokens;
//  * any ids (negative, past the vocabulary, control tokens) decode and
//    stream (Utf8Stream) into well-formed UTF-8.
#include "runtime/support/Utf8.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/TokenizerFormat.h"

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace {

struct Subject {
  quill::Tokenizer tokenizer;
  bool roundTrips; ///< encode() then decode() gives the text back.
};

[[noreturn]] void fail() { __builtin_trap(); }

quill::Tokenizer loaded(quill::ErrorOr<quill::Tokenizer> tokenizer) {
  if (!tokenizer)
    fail();
  return tokenizer.take();
}

/// The 256 bytes, merges up to a few words, and two control tokens.
quill::TokenizerData byteLevel(std::vector<quill::PreTokenizeStep> steps) {
  quill::TokenizerData d;
  d.kind = quill::TokenizerKind::ByteLevelBpe;
  for (int b = 0; b < 256; ++b)
    d.pieces.push_back(std::string(1, char(b)));
  auto id = [&](const std::string &piece) {
    for (size_t i = 0; i < d.pieces.size(); ++i)
      if (d.pieces[i] == piece)
        return int32_t(i);
    fail();
  };
  // Each merge makes the piece left + right, both already pieces.
  using Merge = std::pair<const char *, const char *>;
  for (auto [left, right] : std::initializer_list<Merge>{{"h", "e"},
                                                         {"l", "l"},
                                                         {"he", "ll"},
                                                         {"hell", "o"},
                                                         {" ", "w"},
                                                         {"o", "r"},
                                                         {" w", "or"},
                                                         {"l", "d"},
                                                         {" wor", "ld"},
                                                         {"1", "2"},
                                                         {"\xc3", "\xa9"},
                                                         {" ", "\xc3\xa9"},
                                                         {"\n", "\n"}}) {
    d.merges.push_back({id(left), id(right)});
    d.pieces.push_back(std::string(left) + right);
  }
  d.pieces.push_back("<|end|>");
  d.pieces.push_back("<|begin|>");
  d.scores.assign(d.pieces.size(), 0.0f);
  d.types.assign(d.pieces.size(), quill::TokenType::Normal);
  d.eosId = int32_t(d.pieces.size()) - 2;
  d.bosId = int32_t(d.pieces.size()) - 1;
  d.types[d.eosId] = d.types[d.bosId] = quill::TokenType::Control;
  d.preTokenizer = std::move(steps);
  return d;
}

std::vector<Subject> subjects() {
  using Step = quill::PreTokenizeStep;
  std::vector<Subject> all;
  const std::string models = std::string(QUILL_SHARED_DIR) + "/models/";
  for (auto [path, vocab] : {std::pair{"stories260K/tok512.bin", 512},
                             std::pair{"llama2-tokenizer/tokenizer.bin", 32000}}) {
    auto tokenizer = quill::Tokenizer::fromFile(models + path, vocab);
    if (tokenizer)
      all.push_back({tokenizer.take(), true});
  }
  for (auto steps : {std::vector<Step>{Step::Gpt2}, std::vector<Step>{Step::Llama3},
                     std::vector<Step>{Step::SplitDigits, Step::Llama3SingleDigits}})
    all.push_back({loaded(quill::Tokenizer::fromData(byteLevel(steps), "fuzz")), true});
  // SentencePiece without byte tokens: unknown characters become <unk>.
  quill::TokenizerData sp;
  for (const char *piece : {"<unk>", "<s>", "</s>", " ", "a", "b", " a", "ab", " ab"}) {
    sp.pieces.push_back(piece);
    sp.scores.push_back(float(sp.pieces.size()));
    sp.types.push_back(quill::TokenType::Normal);
  }
  sp.types[0] = quill::TokenType::Unknown;
  sp.types[1] = sp.types[2] = quill::TokenType::Control;
  sp.unkId = 0, sp.bosId = 1, sp.eosId = 2;
  all.push_back({loaded(quill::Tokenizer::fromData(sp, "fuzz")), false});
  return all;
}

void checkIds(const quill::Tokenizer &tokenizer, const std::vector<int32_t> &ids) {
  for (int32_t id : ids)
    if (id < 0 || id >= tokenizer.vocabSize())
      fail();
}

/// The text of ids[from..] as quill-run streams it: well-formed UTF-8.
std::string streamed(const quill::Tokenizer &tokenizer, const std::vector<int32_t> &ids,
                     size_t from, std::string *raw) {
  quill::Utf8Stream stream;
  std::string text;
  for (size_t i = from; i < ids.size(); ++i) {
    std::string piece = tokenizer.decode(i > 0 ? ids[i - 1] : -1, ids[i]);
    if (raw)
      *raw += piece;
    text += stream.push(piece);
  }
  text += stream.finish();
  if (quill::firstIllFormedUtf8(text) != std::string_view::npos)
    fail();
  return text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::vector<Subject> all = subjects();
  if (size == 0)
    return 0;
  const Subject &subject = all[data[0] % all.size()];
  const quill::Tokenizer &tokenizer = subject.tokenizer;
  std::string_view text(reinterpret_cast<const char *>(data + 1), size - 1);
  if ((data[0] / all.size()) % 2 == 1) {
    // Token ids, four bytes each, whatever their value.
    std::vector<int32_t> ids(text.size() / 4);
    if (!ids.empty())
      std::memcpy(ids.data(), text.data(), ids.size() * 4);
    (void)streamed(tokenizer, ids, 0, nullptr);
    return 0;
  }
  std::vector<int32_t> ids = tokenizer.encode(text, true, true);
  checkIds(tokenizer, ids);
  const bool sentencePiece = tokenizer.kind() == quill::TokenizerKind::SentencePieceBpe;
  const bool hasBos = tokenizer.bosId() >= 0, hasEos = tokenizer.eosId() >= 0;
  if ((hasBos && (ids.empty() || ids.front() != tokenizer.bosId())) ||
      (hasEos && (ids.empty() || ids.back() != tokenizer.eosId())))
    fail();
  if (hasEos)
    ids.pop_back();
  std::string raw;
  (void)streamed(tokenizer, ids, hasBos ? 1 : 0, &raw);
  // SentencePiece's first piece after BOS drops the dummy-prefix space.
  if (subject.roundTrips && raw != text && !(sentencePiece && !hasBos))
    fail();
  checkIds(tokenizer, tokenizer.encodeChat(text));
  return 0;
}
