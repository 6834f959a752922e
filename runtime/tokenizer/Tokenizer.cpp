// Loading, encoding and decoding: llama2.c's SentencePiece-style BPE here,
// byte-level BPE delegated to ByteLevelBpe.
#include "runtime/tokenizer/Tokenizer.h"

#include "runtime/support/ReadFile.h"
#include "runtime/tokenizer/ByteLevelBpe.h"
#include "runtime/tokenizer/PairMerge.h"
#include "runtime/tokenizer/SpecialTokens.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace quill {

namespace {

/// run.c starts its best merge score at -1e10 and accepts only a strictly
/// greater one, so pieces scoring at or below it (or NaN) never merge.
const float kNoMergeScore = static_cast<float>(-1e10);

/// Byte fallback tokens <0x00>..<0xFF> of a tokenizer.bin follow the three
/// special ids.
constexpr int32_t kFirstByteToken = 3;

bool isContinuationByte(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

std::string bytePiece(int byte) {
  const char *hex = "0123456789ABCDEF";
  return std::string("<0x") + hex[byte / 16] + hex[byte % 16] + ">";
}

} // namespace

ErrorOr<Tokenizer> Tokenizer::fromBytes(const uint8_t *data, size_t size, int32_t vocabSize,
                                        const std::string &sourceName) {
  auto parsed = parseTokenizer(data, size, vocabSize, sourceName);
  if (!parsed)
    return parsed.status();
  return fromData(parsed.take(), sourceName);
}

ErrorOr<Tokenizer> Tokenizer::fromData(TokenizerData data, const std::string &sourceName) {
  const std::string where = sourceName + ": ";
  const size_t count = data.pieces.size();
  if (count == 0 || count > size_t(INT32_MAX) || data.scores.size() != count ||
      data.types.size() != count)
    return Status::error(where + "inconsistent tokenizer data (" + std::to_string(count) +
                         " pieces)");
  for (int32_t id : {data.bosId, data.eosId, data.unkId})
    if (id < -1 || id >= int32_t(count))
      return Status::error(where + "special token id " + std::to_string(id) +
                           " is outside the vocabulary");

  Tokenizer tok;
  tok.kind_ = data.kind;
  tok.bosId_ = data.bosId;
  tok.eosId_ = data.eosId;
  tok.unkId_ = data.unkId;
  tok.addDummyPrefix_ = data.flags & kAddDummyPrefix;
  tok.maxTokenLength_ = data.maxTokenLength;
  tok.idOfPiece_.reserve(count);
  for (size_t id = 0; id < count; ++id) {
    tok.idOfPiece_.emplace(data.pieces[id], int32_t(id)); // Lowest id wins.
    if (!data.llama2cLayout)
      tok.maxTokenLength_ = std::max(tok.maxTokenLength_, int32_t(data.pieces[id].size()));
  }

  if (data.kind == TokenizerKind::ByteLevelBpe) {
    auto bpe = ByteLevelBpe::create(data, tok.idOfPiece_, sourceName);
    if (!bpe)
      return bpe.status();
    tok.byteLevel_ = std::make_shared<const ByteLevelBpe>(bpe.take());
  } else {
    tok.special_ = std::make_shared<const SpecialTokens>(data);
  }
  for (int b = 0; b < 256; ++b) {
    int32_t id;
    if (data.llama2cLayout) {
      // run.c: byte b is token b + 3, whatever that piece is.
      id = kFirstByteToken + b < int32_t(count) ? kFirstByteToken + b : tok.unkId_;
    } else {
      auto it = tok.idOfPiece_.find(bytePiece(b));
      id = it != tok.idOfPiece_.end() ? it->second : tok.unkId_;
    }
    if (id < 0 && data.kind == TokenizerKind::SentencePieceBpe)
      return Status::error(where + "byte " + std::to_string(b) +
                           " has no <0xNN> token and there is no unk token");
    tok.byteIds_[b] = id;
  }
  tok.pieces_ = std::move(data.pieces);
  tok.scores_ = std::move(data.scores);
  return tok;
}

ErrorOr<Tokenizer> Tokenizer::fromFile(const std::string &path, int32_t vocabSize) {
  auto bytes = readSmallFile(path, kMaxTokenizerFileBytes, "tokenizer");
  if (!bytes)
    return bytes.status();
  return fromBytes(reinterpret_cast<const uint8_t *>(bytes->data()), bytes->size(), vocabSize,
                   path);
}

const std::string &Tokenizer::piece(int32_t id) const {
  static const std::string empty;
  if (id < 0 || id >= vocabSize())
    return empty;
  return pieces_[id];
}

float Tokenizer::score(int32_t id) const {
  if (id < 0 || id >= vocabSize())
    return 0.0f;
  return scores_[id];
}

int32_t Tokenizer::lookup(std::string_view piece) const {
  // C++17 unordered_map has no heterogeneous lookup, hence the copy.
  auto it = idOfPiece_.find(std::string(piece));
  return it == idOfPiece_.end() ? -1 : it->second;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool addBos, bool addEos) const {
  std::vector<int32_t> tokens;
  tokens.reserve(text.size() + 3);
  // BOS goes first: run.c's merge loop sees it too.
  if (addBos && bosId_ >= 0)
    tokens.push_back(bosId_);
  if (kind_ == TokenizerKind::ByteLevelBpe)
    byteLevel_->encode(text, idOfPiece_, tokens);
  else
    encodeSentencePiece(text, tokens);
  if (addEos && eosId_ >= 0)
    tokens.push_back(eosId_);
  return tokens;
}

std::vector<int32_t> Tokenizer::encodeChat(std::string_view text) const {
  if (kind_ == TokenizerKind::ByteLevelBpe)
    return encode(text, /*addBos=*/false, /*addEos=*/false);
  std::vector<int32_t> tokens, run;
  special_->split(
      text,
      [&](std::string_view segment) {
        run.clear();
        encodeSentencePiece(segment, run);
        tokens.insert(tokens.end(), run.begin(), run.end());
      },
      [&](int32_t id) { tokens.push_back(id); });
  return tokens;
}

void Tokenizer::encodeSentencePiece(std::string_view text, std::vector<int32_t> &tokens) const {
  // SentencePiece's add_dummy_prefix: words are " word" pieces, so the first
  // word gets a space too.
  if (!text.empty() && addDummyPrefix_) {
    int32_t space = lookup(" ");
    tokens.push_back(space >= 0 ? space : byteToken(' '));
  }

  // One unit per UTF-8 codepoint: a byte plus the continuation bytes after
  // it, capped at 4 bytes as run.c caps its buffer. Invalid sequences simply
  // miss the vocabulary and fall back to byte tokens.
  std::string unit;
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    while (i + len < text.size() && len < 4 && isContinuationByte(text[i + len]))
      ++len;
    unit.assign(text.data() + i, len);
    auto it = idOfPiece_.find(unit);
    if (it != idOfPiece_.end()) {
      tokens.push_back(it->second);
    } else {
      for (char byte : unit)
        tokens.push_back(byteToken(static_cast<uint8_t>(byte)));
    }
    i += len;
  }

  mergePairs(tokens);
}

void Tokenizer::mergePairs(std::vector<int32_t> &tokens) const {
  // run.c rescans every pair after each merge; mergeAdjacentPairs makes the
  // same choice at every step: the highest score, the leftmost pair on ties.
  std::string merged;
  mergeAdjacentPairs<float>(
      tokens,
      [&](int32_t left, int32_t right) -> std::optional<PairMerge<float>> {
        merged.assign(pieces_[left]);
        merged += pieces_[right];
        auto it = idOfPiece_.find(merged);
        if (it == idOfPiece_.end())
          return std::nullopt;
        float score = scores_[it->second];
        if (!(score > kNoMergeScore))
          return std::nullopt;
        return PairMerge<float>{score, it->second};
      },
      std::greater<float>());
}

std::string Tokenizer::decode(int32_t prevToken, int32_t token) const {
  if (token < 0 || token >= vocabSize())
    return {};
  if (kind_ == TokenizerKind::ByteLevelBpe)
    return pieces_[token];
  std::string_view text = pieces_[token];
  // SentencePiece strips the dummy-prefix space of the first word.
  if (prevToken == bosId() && !text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>') {
    int high = hexValue(text[3]), low = hexValue(text[4]);
    if (high >= 0 && low >= 0)
      return std::string(1, static_cast<char>(high * 16 + low));
  }
  return std::string(text);
}

} // namespace quill
