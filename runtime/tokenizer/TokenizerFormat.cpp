// Reading and writing the tokenizer bytes an artifact carries: llama2.c's
// tokenizer.bin and Quill's versioned format.
#include "runtime/tokenizer/TokenizerFormat.h"

#include "runtime/support/ByteStream.h"

#include <algorithm>
#include <cstring>

namespace quill {

namespace {

/// ids 0, 1, 2 are <unk>, BOS and EOS in every llama2.c vocabulary.
constexpr int32_t kLlama2cMinVocabSize = 3;
/// Byte fallback tokens <0x00>..<0xFF> follow the three special ids.
constexpr int32_t kLlama2cFirstByteToken = 3;
/// No piece is longer than this; a larger length is corruption.
constexpr uint32_t kMaxPieceBytes = 1 << 16;

template <typename T> T readScalar(const uint8_t *data) {
  T value;
  std::memcpy(&value, data, sizeof(T));
  return value;
}

std::string bytePiece(int byte) {
  const char *hex = "0123456789ABCDEF";
  return std::string("<0x") + hex[byte / 16] + hex[byte % 16] + ">";
}

/// llama2.c's tokenizer.bin: int32 max_token_length, then per token a
/// float32 score, an int32 length and the piece's bytes.
ErrorOr<TokenizerData> parseLlama2c(const uint8_t *data, size_t size, int32_t vocabSize,
                                    const std::string &where) {
  if (vocabSize < kLlama2cMinVocabSize)
    return Status::error(where + "vocab size " + std::to_string(vocabSize) +
                         " is too small: ids 0-2 are <unk>, BOS and EOS");
  if (size < sizeof(int32_t))
    return Status::error(where + "tokenizer truncated: " + std::to_string(size) +
                         " bytes cannot hold the max_token_length header");
  int32_t maxTokenLength = readScalar<int32_t>(data);
  if (maxTokenLength < 0)
    return Status::error(where + "negative max_token_length " + std::to_string(maxTokenLength));

  TokenizerData out;
  out.kind = TokenizerKind::SentencePieceBpe;
  out.bosId = 1;
  out.eosId = 2;
  out.unkId = 0;
  out.flags = kAddDummyPrefix;
  out.llama2cLayout = true;
  out.maxTokenLength = maxTokenLength;
  // Each token takes at least 8 bytes, so a huge vocabSize cannot make us
  // reserve more than the input could possibly describe.
  size_t offset = sizeof(int32_t);
  size_t reserve = std::min(static_cast<size_t>(vocabSize), (size - offset) / 8);
  out.pieces.reserve(reserve);
  out.scores.reserve(reserve);
  out.types.reserve(reserve);

  const std::string total = std::to_string(vocabSize);
  for (int32_t id = 0; id < vocabSize; ++id) {
    const std::string token =
        "token " + std::to_string(id) + " of " + total + " (offset " + std::to_string(offset) + ")";
    size_t left = size - offset;
    if (left < 8)
      return Status::error(where + "tokenizer truncated in " + token +
                           ": needs 8 bytes for score and length, " + std::to_string(left) +
                           " left");
    float score = readScalar<float>(data + offset);
    int32_t len = readScalar<int32_t>(data + offset + 4);
    offset += 8;
    left -= 8;
    if (len < 0)
      return Status::error(where + token + " has negative length " + std::to_string(len));
    if (static_cast<size_t>(len) > left)
      return Status::error(where + "tokenizer truncated in " + token + ": piece length " +
                           std::to_string(len) + " exceeds the " + std::to_string(left) +
                           " bytes left");
    out.pieces.emplace_back(reinterpret_cast<const char *>(data + offset),
                            static_cast<size_t>(len));
    out.scores.push_back(score);
    bool isByte = id >= kLlama2cFirstByteToken && id < kLlama2cFirstByteToken + 256;
    out.types.push_back(id < kLlama2cFirstByteToken
                            ? (id == 0 ? TokenType::Unknown : TokenType::Control)
                        : isByte ? TokenType::Byte
                                 : TokenType::Normal);
    offset += static_cast<size_t>(len);
  }
  if (offset != size) {
    // More entries than the model has ids: a tokenizer of another model.
    size_t extra = 0;
    while (size - offset >= 8) {
      int32_t len = readScalar<int32_t>(data + offset + 4);
      if (len < 0 || size_t(len) > size - offset - 8)
        break;
      offset += 8 + size_t(len);
      ++extra;
    }
    if (offset == size)
      return Status::error(where + "the tokenizer has " +
                           std::to_string(uint64_t(vocabSize) + extra) +
                           " tokens, the model's vocabulary " + total);
    return Status::error(where + std::to_string(size - offset) +
                         " unexpected bytes after the tokenizer's " + total + " tokens");
  }
  return out;
}

bool isKnownTokenType(uint8_t type) { return type >= 1 && type <= 6; }

ErrorOr<TokenizerData> parseVersioned(const uint8_t *data, size_t size, int32_t vocabSize,
                                      const std::string &where) {
  ByteReader in(data, size);
  in.get<uint64_t>(); // The magic, already checked.
  auto truncated = [&](const std::string &what) {
    return Status::error(where + "tokenizer truncated in " + what);
  };
  uint32_t version = in.get<uint32_t>();
  if (!in.ok())
    return truncated("the header");
  if (version != kTokenizerFormatVersion)
    return Status::error(where + "tokenizer format version " + std::to_string(version) +
                         " (this runtime reads " + std::to_string(kTokenizerFormatVersion) + ")");
  TokenizerData out;
  uint32_t kind = in.get<uint32_t>();
  int32_t count = in.get<int32_t>();
  out.bosId = in.get<int32_t>();
  out.eosId = in.get<int32_t>();
  out.unkId = in.get<int32_t>();
  out.flags = in.get<uint32_t>();
  if (!in.ok())
    return truncated("the header");
  if (kind != uint32_t(TokenizerKind::SentencePieceBpe) &&
      kind != uint32_t(TokenizerKind::ByteLevelBpe))
    return Status::error(where + "unknown tokenizer kind " + std::to_string(kind));
  out.kind = TokenizerKind(kind);
  if (count != vocabSize || count <= 0)
    return Status::error(where + "tokenizer has " + std::to_string(count) +
                         " tokens, the model's vocabulary " + std::to_string(vocabSize));
  for (int32_t id : {out.bosId, out.eosId, out.unkId})
    if (id < -1 || id >= count)
      return Status::error(where + "special token id " + std::to_string(id) +
                           " is outside the vocabulary of " + std::to_string(count));
  if (out.flags & ~kKnownTokenizerFlags)
    return Status::error(where + "unknown tokenizer flags " + std::to_string(out.flags));

  // Each token takes at least 9 bytes: never reserve beyond the input.
  size_t reserve = std::min<size_t>(size_t(count), in.remaining() / 9);
  out.pieces.reserve(reserve);
  out.scores.reserve(reserve);
  out.types.reserve(reserve);
  for (int32_t id = 0; id < count; ++id) {
    uint8_t type = in.get<uint8_t>();
    float score = in.get<float>();
    std::string piece = in.getString(kMaxPieceBytes);
    if (!in.ok())
      return truncated("token " + std::to_string(id) + " of " + std::to_string(count));
    if (!isKnownTokenType(type))
      return Status::error(where + "token " + std::to_string(id) + " has unknown type " +
                           std::to_string(type));
    out.types.push_back(TokenType(type));
    out.scores.push_back(score);
    out.pieces.push_back(std::move(piece));
  }

  uint32_t merges = in.get<uint32_t>();
  if (!in.ok() || merges > in.remaining() / 8)
    return truncated("the merge list");
  out.merges.reserve(merges);
  for (uint32_t i = 0; i < merges; ++i) {
    int32_t left = in.get<int32_t>(), right = in.get<int32_t>();
    if (left < 0 || left >= count || right < 0 || right >= count)
      return Status::error(where + "merge " + std::to_string(i) +
                           " names a token outside the vocabulary");
    out.merges.emplace_back(left, right);
  }
  uint32_t steps = in.get<uint32_t>();
  if (!in.ok() || steps > in.remaining() / 4)
    return truncated("the pre-tokenizer steps");
  for (uint32_t i = 0; i < steps; ++i) {
    uint32_t step = in.get<uint32_t>();
    if (!isKnownPreTokenizeStep(step))
      return Status::error(where + "unknown pre-tokenizer step " + std::to_string(step));
    out.preTokenizer.push_back(PreTokenizeStep(step));
  }
  if (!in.ok())
    return truncated("the pre-tokenizer steps");
  if (!in.atEnd())
    return Status::error(where + std::to_string(in.remaining()) +
                         " unexpected bytes after the tokenizer");
  if (out.kind == TokenizerKind::SentencePieceBpe && !out.merges.empty())
    return Status::error(where + "a SentencePiece tokenizer has merges");
  return out;
}

} // namespace

bool fitsLlama2cLayout(const TokenizerData &data) {
  if (data.kind != TokenizerKind::SentencePieceBpe || data.unkId != 0 || data.bosId != 1 ||
      data.eosId != 2 || !(data.flags & kAddDummyPrefix) ||
      data.pieces.size() < size_t(kLlama2cFirstByteToken + 256))
    return false;
  for (int b = 0; b < 256; ++b)
    if (data.pieces[kLlama2cFirstByteToken + b] != bytePiece(b))
      return false;
  return true;
}

std::vector<uint8_t> serializeTokenizer(const TokenizerData &data) {
  if (!fitsLlama2cLayout(data))
    return serializeVersionedTokenizer(data);
  ByteWriter out;
  std::vector<std::string> pieces = data.pieces;
  // llama2.c's tokenizer exporter spells the specials this way; matching it
  // makes a converted tokenizer byte-identical to the tokenizer.bin.
  pieces[1] = "\n<s>\n";
  pieces[2] = "\n</s>\n";
  int32_t maxLength = 0;
  for (const std::string &piece : pieces)
    maxLength = std::max<int32_t>(maxLength, int32_t(piece.size()));
  out.put<int32_t>(maxLength);
  for (size_t id = 0; id < pieces.size(); ++id) {
    out.put<float>(data.scores[id]);
    out.put<int32_t>(int32_t(pieces[id].size()));
    out.bytes().insert(out.bytes().end(), pieces[id].begin(), pieces[id].end());
  }
  return std::move(out.bytes());
}

std::vector<uint8_t> serializeVersionedTokenizer(const TokenizerData &data) {
  ByteWriter out;
  out.bytes().insert(out.bytes().end(), std::begin(kTokenizerMagic), std::end(kTokenizerMagic));
  out.put<uint32_t>(kTokenizerFormatVersion);
  out.put<uint32_t>(uint32_t(data.kind));
  out.put<int32_t>(int32_t(data.pieces.size()));
  out.put<int32_t>(data.bosId);
  out.put<int32_t>(data.eosId);
  out.put<int32_t>(data.unkId);
  out.put<uint32_t>(data.flags);
  for (size_t id = 0; id < data.pieces.size(); ++id) {
    out.put<uint8_t>(uint8_t(data.types[id]));
    out.put<float>(id < data.scores.size() ? data.scores[id] : 0.0f);
    out.putString(data.pieces[id]);
  }
  out.put<uint32_t>(uint32_t(data.merges.size()));
  for (const auto &[left, right] : data.merges) {
    out.put<int32_t>(left);
    out.put<int32_t>(right);
  }
  out.put<uint32_t>(uint32_t(data.preTokenizer.size()));
  for (PreTokenizeStep step : data.preTokenizer)
    out.put<uint32_t>(uint32_t(step));
  return std::move(out.bytes());
}

ErrorOr<TokenizerData> parseTokenizer(const uint8_t *data, size_t size, int32_t vocabSize,
                                      const std::string &sourceName) {
  const std::string where = sourceName + ": ";
  if (!data && size != 0)
    return Status::error(where + "no tokenizer data (null pointer)");
  if (size >= sizeof(kTokenizerMagic) &&
      std::memcmp(data, kTokenizerMagic, sizeof(kTokenizerMagic)) == 0)
    return parseVersioned(data, size, vocabSize, where);
  return parseLlama2c(data, size, vocabSize, where);
}

} // namespace quill
