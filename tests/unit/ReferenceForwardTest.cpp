// Validates the reference oracle against llama2.c: greedy decoding of
// stories260K must reproduce llama2.c's own output byte for byte.
#include "tests/e2e/ReferenceForward.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

using namespace quill;

namespace {

std::string sharedPath(const std::string &relative) {
  return std::string(QUILL_SHARED_DIR) + "/" + relative;
}

bool exists(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return f.good();
}

/// Reads a llama2.c tokenizer.bin: int32 max_len, then per token a float
/// score, an int32 length and that many bytes. Scores are not needed here.
std::vector<std::string> readPieces(const std::string &path, int vocabSize) {
  std::vector<std::string> pieces;
  std::ifstream f(path, std::ios::binary);
  int32_t maxLen = 0;
  f.read(reinterpret_cast<char *>(&maxLen), 4);
  for (int i = 0; i < vocabSize && f; ++i) {
    float score;
    int32_t len = 0;
    f.read(reinterpret_cast<char *>(&score), 4);
    f.read(reinterpret_cast<char *>(&len), 4);
    if (!f || len < 0 || len > 1 << 16)
      break;
    std::string piece(size_t(len), '\0');
    f.read(piece.data(), len);
    pieces.push_back(piece);
  }
  return pieces;
}

/// llama2.c's decode(): drop the leading space of the piece after BOS and
/// turn "<0xNN>" byte pieces into the raw byte.
std::string decodePiece(const std::vector<std::string> &pieces, int prev, int token) {
  std::string piece = pieces[size_t(token)];
  if (prev == 1 && !piece.empty() && piece[0] == ' ')
    piece.erase(0, 1);
  unsigned int byte = 0;
  char tail = 0;
  if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%02X%c", &byte, &tail) == 2 &&
      tail == '>')
    piece = std::string(1, char(byte));
  return piece;
}

int argmax(const std::vector<float> &v) {
  return int(std::max_element(v.begin(), v.end()) - v.begin());
}

} // namespace

TEST(ReferenceForward, GreedyStories260KMatchesLlama2c) {
  const std::string model = sharedPath("models/stories260K/stories260K.bin");
  const std::string tokenizer = sharedPath("models/stories260K/tok512.bin");
  const std::string expectedPath = sharedPath("models/stories260K/expected-greedy-200.txt");
  if (!exists(model) || !exists(tokenizer) || !exists(expectedPath))
    GTEST_SKIP() << "stories260K files not found under " << QUILL_SHARED_DIR;

  ErrorOr<ReferenceModel> loaded = ReferenceModel::load(model);
  ASSERT_TRUE(loaded) << loaded.message();
  ReferenceModel &m = *loaded;
  EXPECT_EQ(m.config().dim, 64);
  EXPECT_EQ(m.config().nLayers, 5);
  EXPECT_EQ(m.config().nKvHeads, 4);
  std::vector<std::string> pieces = readPieces(tokenizer, m.config().vocabSize);
  ASSERT_EQ(int(pieces.size()), m.config().vocabSize);

  // llama2.c `run -t 0 -n 200`: BOS at pos 0, feed the argmax back, stop
  // early only if BOS comes out.
  std::string text;
  int token = 1;
  for (int pos = 0; pos < 200; ++pos) {
    std::vector<float> logits = m.forward(token, pos);
    ASSERT_EQ(int(logits.size()), m.config().vocabSize);
    int next = argmax(logits);
    if (next == 1)
      break;
    text += decodePiece(pieces, token, next);
    token = next;
  }

  std::ifstream f(expectedPath, std::ios::binary);
  std::stringstream expected;
  expected << f.rdbuf();
  EXPECT_EQ(text, expected.str());
}

TEST(ReferenceForward, RejectsBadInputs) {
  EXPECT_FALSE(ReferenceModel::load("/nonexistent/model.bin"));
  const std::string model = sharedPath("models/stories260K/stories260K.bin");
  if (!exists(model))
    GTEST_SKIP() << "stories260K.bin not found under " << QUILL_SHARED_DIR;
  ErrorOr<ReferenceModel> loaded = ReferenceModel::load(model);
  ASSERT_TRUE(loaded) << loaded.message();
  EXPECT_TRUE(loaded->forward(-1, 0).empty());
  EXPECT_TRUE(loaded->forward(0, loaded->config().seqLen).empty());
}

TEST(ReferenceForward, LegacyAndV1GiveTheSameLogits) {
  const std::string legacy = sharedPath("models/stories260K/stories260K.bin");
  const std::string v1 = sharedPath("models/stories260K/stories260K.v1.bin");
  if (!exists(legacy) || !exists(v1))
    GTEST_SKIP() << "stories260K files not found under " << QUILL_SHARED_DIR;
  ErrorOr<ReferenceModel> a = ReferenceModel::load(legacy);
  ErrorOr<ReferenceModel> b = ReferenceModel::load(v1);
  ASSERT_TRUE(a) << a.message();
  ASSERT_TRUE(b) << b.message();
  const int tokens[] = {1, 403, 407, 261, 378};
  for (int pos = 0; pos < 5; ++pos)
    EXPECT_EQ(a->forward(tokens[pos], pos), b->forward(tokens[pos], pos));
}
