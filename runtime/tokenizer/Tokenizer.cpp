// Loading, encoding and decoding for the llama2.c BPE tokenizer.
#include "runtime/tokenizer/Tokenizer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <queue>

namespace quill {

namespace {

/// run.c starts its best merge score at -1e10 and accepts only a strictly
/// greater one, so pieces scoring at or below it (or NaN) never merge.
const float kNoMergeScore = static_cast<float>(-1e10);

/// ids 0, 1, 2 are <unk>, BOS and EOS in every llama2.c vocabulary.
constexpr int32_t kMinVocabSize = 3;
/// Byte fallback tokens <0x00>..<0xFF> follow the three special ids.
constexpr int32_t kFirstByteToken = 3;

bool isContinuationByte(char c) {
  return (static_cast<uint8_t>(c) & 0xC0) == 0x80;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

/// Reads a little-endian (native, as llama2.c writes it) scalar at data.
template <typename T> T readScalar(const uint8_t *data) {
  T value;
  std::memcpy(&value, data, sizeof(T));
  return value;
}

} // namespace

ErrorOr<Tokenizer> Tokenizer::fromBytes(const uint8_t *data, size_t size,
                                        int32_t vocabSize,
                                        const std::string &sourceName) {
  const std::string where = sourceName + ": ";
  if (vocabSize < kMinVocabSize)
    return Status::error(where + "vocab size " + std::to_string(vocabSize) +
                         " is too small: ids 0-2 are <unk>, BOS and EOS");
  if (!data && size != 0)
    return Status::error(where + "no tokenizer data (null pointer)");
  if (size < sizeof(int32_t))
    return Status::error(where +
                         "tokenizer truncated: " + std::to_string(size) +
                         " bytes cannot hold the max_token_length header");

  Tokenizer tok;
  tok.maxTokenLength_ = readScalar<int32_t>(data);
  if (tok.maxTokenLength_ < 0)
    return Status::error(where + "negative max_token_length " +
                         std::to_string(tok.maxTokenLength_));

  // Each token takes at least 8 bytes, so a huge vocabSize cannot make us
  // reserve more than the input could possibly describe.
  size_t offset = sizeof(int32_t);
  size_t maxTokens = (size - offset) / 8;
  size_t reserve = std::min(static_cast<size_t>(vocabSize), maxTokens);
  tok.pieces_.reserve(reserve);
  tok.scores_.reserve(reserve);
  tok.idOfPiece_.reserve(reserve);

  const std::string total = std::to_string(vocabSize);
  for (int32_t id = 0; id < vocabSize; ++id) {
    const std::string token = "token " + std::to_string(id) + " of " + total +
                              " (offset " + std::to_string(offset) + ")";
    size_t left = size - offset;
    if (left < 8)
      return Status::error(where + "tokenizer truncated in " + token +
                           ": needs 8 bytes for score and length, " +
                           std::to_string(left) + " left");
    float score = readScalar<float>(data + offset);
    int32_t len = readScalar<int32_t>(data + offset + 4);
    offset += 8;
    left -= 8;
    if (len < 0)
      return Status::error(where + token + " has negative length " +
                           std::to_string(len));
    if (static_cast<size_t>(len) > left)
      return Status::error(where + "tokenizer truncated in " + token +
                           ": piece length " + std::to_string(len) +
                           " exceeds the " + std::to_string(left) +
                           " bytes left");
    std::string piece(reinterpret_cast<const char *>(data + offset),
                      static_cast<size_t>(len));
    offset += static_cast<size_t>(len);
    tok.idOfPiece_.emplace(piece, id); // emplace keeps the lowest id.
    tok.pieces_.push_back(std::move(piece));
    tok.scores_.push_back(score);
  }
  return tok;
}

ErrorOr<Tokenizer> Tokenizer::fromFile(const std::string &path,
                                       int32_t vocabSize) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(path +
                         ": cannot open tokenizer: " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad())
    return Status::error(path +
                         ": cannot read tokenizer: " + std::strerror(errno));
  return fromBytes(bytes.data(), bytes.size(), vocabSize, path);
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

int32_t Tokenizer::byteToken(uint8_t byte) const {
  int32_t id = kFirstByteToken + byte;
  return id < vocabSize() ? id : unkId();
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool addBos,
                                       bool addEos) const {
  std::vector<int32_t> tokens;
  tokens.reserve(text.size() + 3);
  if (addBos)
    tokens.push_back(bosId());

  // SentencePiece's add_dummy_prefix: words are " word" pieces, so the first
  // word gets a space too.
  if (!text.empty()) {
    int32_t space = lookup(" ");
    tokens.push_back(space >= 0 ? space : byteToken(' '));
  }

  // One unit per UTF-8 codepoint: a byte plus the continuation bytes after
  // it, capped at 4 bytes as run.c caps its buffer. Invalid sequences simply
  // miss the vocabulary and fall back to byte tokens.
  std::string unit;
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    while (i + len < text.size() && len < 4 &&
           isContinuationByte(text[i + len]))
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

  if (addEos)
    tokens.push_back(eosId());
  return tokens;
}

void Tokenizer::mergePairs(std::vector<int32_t> &tokens) const {
  // run.c rescans every pair after each merge (quadratic). A max-heap of
  // pairs ordered by (score desc, position asc) makes the same choice at every
  // step: the highest score, the leftmost pair on ties. Positions never
  // reorder, so the original index orders pairs like run.c's scan does.
  const int32_t n = static_cast<int32_t>(tokens.size());
  if (n < 2)
    return;

  // A doubly linked list over positions; a merge keeps the left position and
  // unlinks the right one. version[] invalidates heap entries whose tokens
  // changed since they were pushed.
  std::vector<int32_t> prev(n), next(n);
  std::vector<uint32_t> version(n, 0);
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }

  struct Pair {
    float score;
    int32_t left, right;
    int32_t mergedId;
    uint32_t leftVersion, rightVersion;
  };
  auto lowerPriority = [](const Pair &a, const Pair &b) {
    if (a.score != b.score)
      return a.score < b.score;
    return a.left > b.left;
  };
  std::priority_queue<Pair, std::vector<Pair>, decltype(lowerPriority)> queue(
      lowerPriority);

  std::string merged;
  auto consider = [&](int32_t left, int32_t right) {
    merged.assign(pieces_[tokens[left]]);
    merged += pieces_[tokens[right]];
    auto it = idOfPiece_.find(merged);
    if (it == idOfPiece_.end())
      return;
    float score = scores_[it->second];
    if (!(score > kNoMergeScore))
      return;
    queue.push({score, left, right, it->second, version[left], version[right]});
  };

  for (int32_t i = 0; i + 1 < n; ++i)
    consider(i, i + 1);

  while (!queue.empty()) {
    Pair pair = queue.top();
    queue.pop();
    if (version[pair.left] != pair.leftVersion ||
        version[pair.right] != pair.rightVersion ||
        next[pair.left] != pair.right)
      continue; // Stale: one side was merged since this pair was pushed.

    tokens[pair.left] = pair.mergedId;
    ++version[pair.left];
    ++version[pair.right]; // The right position is gone for good.
    int32_t after = next[pair.right];
    next[pair.left] = after;
    if (after >= 0)
      prev[after] = pair.left;

    if (prev[pair.left] >= 0)
      consider(prev[pair.left], pair.left);
    if (after >= 0)
      consider(pair.left, after);
  }

  // Position 0 is never a right side, so the list always starts there.
  int32_t out = 0;
  for (int32_t i = 0; i >= 0; i = next[i])
    tokens[out++] = tokens[i];
  tokens.resize(out);
}

std::string Tokenizer::decode(int32_t prevToken, int32_t token) const {
  if (token < 0 || token >= vocabSize())
    return {};
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
