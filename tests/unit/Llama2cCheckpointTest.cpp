// Tests the llama2.c checkpoint parser on the real stories260K files and on
// synthetic (and deliberately broken) checkpoints written by SyntheticModel.
#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/SyntheticModel.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace quill;
namespace fs = std::filesystem;

namespace {

std::string sharedModel(const std::string &file) {
  return std::string(QUILL_SHARED_DIR) + "/models/stories260K/" + file;
}

std::vector<char> readBytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

void writeBytes(const std::string &path, const std::vector<char> &bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

void patchInt32(std::vector<char> &bytes, size_t offset, int32_t value) {
  std::memcpy(bytes.data() + offset, &value, 4);
}

/// Reads `count` floats at byte `offset` straight from the file, as an
/// independent check of the parser's layout arithmetic.
std::vector<float> readFloatsAt(const std::string &path, uint64_t offset, size_t count) {
  std::ifstream f(path, std::ios::binary);
  f.seekg(std::streamoff(offset));
  std::vector<float> out(count);
  f.read(reinterpret_cast<char *>(out.data()), std::streamsize(count * sizeof(float)));
  return f ? out : std::vector<float>();
}

bool sameData(const WeightTensor &a, const WeightTensor &b) {
  return a.shape == b.shape && std::memcmp(a.data, b.data, size_t(a.numElements()) * 4) == 0;
}

ModelConfig tinyConfig() {
  ModelConfig c;
  c.dim = 64;
  c.hiddenDim = 172;
  c.nLayers = 2;
  c.nHeads = 8;
  c.nKvHeads = 4;
  c.vocabSize = 512;
  c.seqLen = 32;
  return c;
}

/// Byte offset of the seven header ints: right at 0 for legacy, after the
/// magic and version for v1.
size_t paramsOffset(int version) { return version == 1 ? 8 : 0; }

/// A fresh temp dir per test, removed afterwards.
class Llama2cSynthetic : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "quill-l2c-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string &name) const { return (fs::path(dir_) / name).string(); }
  /// Writes a synthetic checkpoint and returns its path.
  std::string synth(const std::string &name, const ModelConfig &c, int version, uint64_t seed = 7) {
    std::string p = path(name);
    Status s = writeSyntheticModel(p, c, version, seed);
    EXPECT_TRUE(s) << s.message();
    return p;
  }
  /// Opens `bytes` written to a scratch file and returns the error message
  /// ("" when it opened).
  std::string openError(const std::vector<char> &bytes) {
    std::string p = path("scratch.bin");
    writeBytes(p, bytes);
    ErrorOr<Llama2cCheckpoint> ckpt = Llama2cCheckpoint::open(p);
    return ckpt ? std::string() : ckpt.message();
  }

  std::string dir_;
};

} // namespace

//===----------------------------------------------------------------------===//
// Real files
//===----------------------------------------------------------------------===//

TEST(Llama2cCheckpoint, Stories260KConfig) {
  const std::string legacy = sharedModel("stories260K.bin");
  if (!fs::exists(legacy))
    GTEST_SKIP() << legacy << " not found";
  ErrorOr<Llama2cCheckpoint> ckpt = Llama2cCheckpoint::open(legacy);
  ASSERT_TRUE(ckpt) << ckpt.message();
  const ModelConfig &c = ckpt->config();
  EXPECT_EQ(ckpt->formatVersion(), 0);
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hiddenDim, 172);
  EXPECT_EQ(c.nLayers, 5);
  EXPECT_EQ(c.nHeads, 8);
  EXPECT_EQ(c.nKvHeads, 4);
  EXPECT_EQ(c.vocabSize, 512);
  EXPECT_EQ(c.seqLen, 512);
  EXPECT_TRUE(c.sharedClassifier);
  EXPECT_EQ(c.ropeTheta, 10000.0f);
  EXPECT_EQ(c.normEps, 1e-5f);
  EXPECT_EQ(c.bosId, 1);
  EXPECT_EQ(c.eosId, 2);
  EXPECT_EQ(ckpt->weights().size(), 1u + 5 * 9 + 1);
  EXPECT_EQ(ckpt->find("output"), nullptr);
  const WeightTensor *wk = ckpt->find("layers.4.wk");
  ASSERT_NE(wk, nullptr);
  EXPECT_EQ(wk->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(ckpt->find("layers.0.w2")->shape, (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(ckpt->weights().front().name, "tok_embeddings");
  EXPECT_EQ(ckpt->weights()[1].name, "layers.0.attention_norm");
  EXPECT_EQ(ckpt->weights().back().name, "norm");
}

TEST(Llama2cCheckpoint, Stories260KLegacyAndV1AreBitwiseIdentical) {
  const std::string legacy = sharedModel("stories260K.bin");
  const std::string v1 = sharedModel("stories260K.v1.bin");
  if (!fs::exists(legacy) || !fs::exists(v1))
    GTEST_SKIP() << "stories260K legacy/v1 files not found";
  ErrorOr<Llama2cCheckpoint> a = Llama2cCheckpoint::open(legacy);
  ErrorOr<Llama2cCheckpoint> b = Llama2cCheckpoint::open(v1);
  ASSERT_TRUE(a) << a.message();
  ASSERT_TRUE(b) << b.message();
  EXPECT_EQ(b->formatVersion(), 1);
  EXPECT_EQ(b->config().seqLen, 512);
  EXPECT_TRUE(b->config().sharedClassifier);
  ASSERT_EQ(a->weights().size(), b->weights().size());
  for (size_t i = 0; i < a->weights().size(); ++i) {
    const WeightTensor &ta = a->weights()[i], &tb = b->weights()[i];
    EXPECT_EQ(ta.name, tb.name);
    EXPECT_TRUE(sameData(ta, tb)) << ta.name;
  }
}

TEST(Llama2cCheckpoint, Stories260KOffsetsMatchTheFormat) {
  const std::string legacy = sharedModel("stories260K.bin");
  const std::string v1 = sharedModel("stories260K.v1.bin");
  if (!fs::exists(legacy) || !fs::exists(v1))
    GTEST_SKIP() << "stories260K legacy/v1 files not found";
  // Offsets in floats, written out by hand from the format description.
  const uint64_t d = 64, h = 172, kv = 32, L = 5, V = 512;
  struct Probe {
    const char *name;
    uint64_t legacyFloat, v1Float, count;
  };
  const uint64_t legacyWq = V * d + L * d, v1Wq = 2 * L * d + d + V * d;
  const Probe probes[] = {
      {"tok_embeddings", 0, 2 * L * d + d, V * d},
      {"layers.3.attention_norm", V * d + 3 * d, 3 * d, d},
      {"layers.2.wk", legacyWq + L * d * d + 2 * kv * d, v1Wq + L * d * d + 2 * kv * d, kv * d},
      {"layers.1.ffn_norm", legacyWq + 2 * L * d * d + 2 * L * kv * d + d, L * d + d, d},
      {"layers.4.w3", legacyWq + 2 * L * d * d + 2 * L * kv * d + L * d + 2 * L * h * d + 4 * h * d,
       v1Wq + 2 * L * d * d + 2 * L * kv * d + 2 * L * h * d + 4 * h * d, h * d},
      {"norm", legacyWq + 2 * L * d * d + 2 * L * kv * d + L * d + 3 * L * h * d, 2 * L * d, d},
  };
  ErrorOr<Llama2cCheckpoint> a = Llama2cCheckpoint::open(legacy);
  ErrorOr<Llama2cCheckpoint> b = Llama2cCheckpoint::open(v1);
  ASSERT_TRUE(a && b);
  for (const Probe &p : probes) {
    std::vector<float> fromLegacy = readFloatsAt(legacy, 28 + 4 * p.legacyFloat, p.count);
    std::vector<float> fromV1 = readFloatsAt(v1, 256 + 4 * p.v1Float, p.count);
    ASSERT_EQ(fromLegacy.size(), p.count) << p.name;
    EXPECT_EQ(std::memcmp(fromLegacy.data(), a->find(p.name)->data, p.count * 4), 0) << p.name;
    EXPECT_EQ(fromLegacy, fromV1) << p.name;
  }
}

//===----------------------------------------------------------------------===//
// Synthetic files
//===----------------------------------------------------------------------===//

TEST_F(Llama2cSynthetic, LegacyAndV1HoldTheGeneratedValues) {
  ModelConfig c = tinyConfig();
  ErrorOr<Llama2cCheckpoint> a = Llama2cCheckpoint::open(synth("tiny.bin", c, 0));
  ErrorOr<Llama2cCheckpoint> b = Llama2cCheckpoint::open(synth("tiny.v1.bin", c, 1));
  ASSERT_TRUE(a) << a.message();
  ASSERT_TRUE(b) << b.message();
  EXPECT_EQ(a->formatVersion(), 0);
  EXPECT_EQ(b->formatVersion(), 1);
  ASSERT_EQ(a->weights().size(), 1u + 2 * 9 + 1);
  ASSERT_EQ(b->weights().size(), a->weights().size());
  for (size_t i = 0; i < a->weights().size(); ++i) {
    const WeightTensor &t = a->weights()[i];
    EXPECT_TRUE(sameData(t, b->weights()[i])) << t.name;
    std::vector<float> expected(size_t(t.numElements()));
    fillSyntheticTensor(t.name, t.shape, 7, 0, expected.data(), t.numElements());
    EXPECT_EQ(std::memcmp(expected.data(), t.data, expected.size() * 4), 0) << t.name;
    // Norms sit around 1, matrices within +-1/sqrt(fan_in).
    bool isNorm = t.name.size() >= 4 && t.name.compare(t.name.size() - 4, 4, "norm") == 0;
    float lo = isNorm ? 0.9f : -1.0f, hi = isNorm ? 1.1f : 1.0f;
    for (int64_t k = 0; k < t.numElements(); ++k)
      ASSERT_TRUE(t.data[k] >= lo && t.data[k] <= hi) << t.name << "[" << k << "]";
  }
  // A different seed gives different weights.
  ErrorOr<Llama2cCheckpoint> other = Llama2cCheckpoint::open(synth("seed8.bin", c, 0, 8));
  ASSERT_TRUE(other);
  EXPECT_FALSE(sameData(*a->find("layers.1.wq"), *other->find("layers.1.wq")));
}

TEST(SyntheticTensor, PeriodRepeatsTheSameValues) {
  // --period N: element k holds element k % N's value, and the first period
  // is the unrepeated tensor's.
  const std::vector<int64_t> shape = {64, 100};
  std::vector<float> plain(6400), periodic(6400), tail(100);
  fillSyntheticTensor("layers.0.wq", shape, 3, 0, plain.data(), 6400);
  fillSyntheticTensor("layers.0.wq", shape, 3, 0, periodic.data(), 6400, /*period=*/1000);
  EXPECT_EQ(std::memcmp(plain.data(), periodic.data(), 1000 * sizeof(float)), 0);
  for (int64_t k = 1000; k < 6400; ++k)
    ASSERT_EQ(periodic[k], periodic[k % 1000]) << k;
  EXPECT_NE(std::memcmp(plain.data() + 1000, periodic.data() + 1000, 1000 * sizeof(float)), 0);
  // Chunks agree with the whole.
  fillSyntheticTensor("layers.0.wq", shape, 3, 2500, tail.data(), 100, 1000);
  EXPECT_EQ(std::memcmp(tail.data(), periodic.data() + 2500, 100 * sizeof(float)), 0);
}

TEST_F(Llama2cSynthetic, SeparateClassifier) {
  ModelConfig c = tinyConfig();
  c.sharedClassifier = false;
  for (int version : {0, 1}) {
    std::string p = synth("sep" + std::to_string(version) + ".bin", c, version);
    if (version == 0) {
      // Legacy marks the separate classifier with a negative vocab size.
      std::vector<char> bytes = readBytes(p);
      int32_t vocab;
      std::memcpy(&vocab, bytes.data() + 20, 4);
      EXPECT_EQ(vocab, -512);
    }
    ErrorOr<Llama2cCheckpoint> ckpt = Llama2cCheckpoint::open(p);
    ASSERT_TRUE(ckpt) << ckpt.message();
    EXPECT_FALSE(ckpt->config().sharedClassifier);
    EXPECT_EQ(ckpt->config().vocabSize, 512);
    ASSERT_EQ(ckpt->weights().size(), 1u + 2 * 9 + 2);
    const WeightTensor *out = ckpt->find("output");
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(&ckpt->weights().back(), out);
    EXPECT_EQ(out->shape, (std::vector<int64_t>{512, 64}));
    EXPECT_FALSE(sameData(*out, *ckpt->find("tok_embeddings")));
  }
}

TEST_F(Llama2cSynthetic, GroupedQueryAndMultiHeadShapes) {
  ModelConfig gqa = tinyConfig();
  gqa.dim = 200;
  gqa.hiddenDim = 520;
  gqa.nHeads = 10;
  gqa.nKvHeads = 2;
  ModelConfig mha = gqa;
  mha.nKvHeads = 10;
  for (int version : {0, 1}) {
    ErrorOr<Llama2cCheckpoint> g =
        Llama2cCheckpoint::open(synth("gqa" + std::to_string(version) + ".bin", gqa, version));
    ASSERT_TRUE(g) << g.message();
    EXPECT_EQ(g->config().nKvHeads, 2);
    EXPECT_EQ(g->find("layers.1.wk")->shape, (std::vector<int64_t>{40, 200}));
    EXPECT_EQ(g->find("layers.1.wv")->shape, (std::vector<int64_t>{40, 200}));
    EXPECT_EQ(g->find("layers.1.wq")->shape, (std::vector<int64_t>{200, 200}));
    EXPECT_EQ(g->find("layers.0.w1")->shape, (std::vector<int64_t>{520, 200}));
    ErrorOr<Llama2cCheckpoint> m =
        Llama2cCheckpoint::open(synth("mha" + std::to_string(version) + ".bin", mha, version));
    ASSERT_TRUE(m) << m.message();
    EXPECT_EQ(m->find("layers.0.wk")->shape, (std::vector<int64_t>{200, 200}));
  }
}

TEST_F(Llama2cSynthetic, MovingKeepsTensorsValid) {
  ErrorOr<Llama2cCheckpoint> opened = Llama2cCheckpoint::open(synth("move.bin", tinyConfig(), 1));
  ASSERT_TRUE(opened);
  const float *before = opened->find("norm")->data;
  float firstValue = before[0];
  Llama2cCheckpoint moved = opened.take();
  Llama2cCheckpoint target = std::move(moved);
  EXPECT_EQ(target.find("norm")->data, before);
  EXPECT_EQ(target.find("norm")->data[0], firstValue);
  EXPECT_TRUE(moved.weights().empty());
}

TEST_F(Llama2cSynthetic, TruncatedFilesAreRejected) {
  for (int version : {0, 1}) {
    std::string p = synth("cut" + std::to_string(version) + ".bin", tinyConfig(), version);
    std::vector<char> whole = readBytes(p);
    const size_t header = version == 1 ? 256 : 28;
    const size_t cuts[] = {0,
                           1,
                           3,
                           4,
                           header / 2,
                           header - 1,
                           header,
                           header + 1,
                           header + 4096,
                           whole.size() / 2,
                           whole.size() - 4,
                           whole.size() - 1};
    for (size_t cut : cuts) {
      std::vector<char> bytes(whole.begin(), whole.begin() + long(cut));
      std::string error = openError(bytes);
      SCOPED_TRACE("version " + std::to_string(version) + ", cut at " + std::to_string(cut));
      ASSERT_FALSE(error.empty());
      EXPECT_NE(error.find("scratch.bin"), std::string::npos) << error;
      if (cut < header) {
        // Cuts inside a v1 magic leave too few bytes to recognise v1.
        EXPECT_NE(error.find("shorter than the"), std::string::npos) << error;
      } else {
        EXPECT_NE(error.find("expected " + std::to_string(whole.size()) +
                             " bytes from the header, file has " + std::to_string(cut)),
                  std::string::npos)
            << error;
      }
    }
  }
}

TEST_F(Llama2cSynthetic, OneByteTooLongIsRejected) {
  for (int version : {0, 1}) {
    std::vector<char> bytes =
        readBytes(synth("long" + std::to_string(version) + ".bin", tinyConfig(), version));
    size_t size = bytes.size();
    bytes.push_back(0);
    std::string error = openError(bytes);
    EXPECT_NE(error.find("expected " + std::to_string(size) + " bytes from the header, file has " +
                         std::to_string(size + 1)),
              std::string::npos)
        << error;
  }
}

TEST_F(Llama2cSynthetic, BadHeaderFieldsAreRejected) {
  struct Case {
    int field; // index into the seven header ints
    int32_t value;
    const char *phrase;
  };
  const Case cases[] = {
      {0, -64, "dim is -64, must be positive"},
      {1, -1, "hidden_dim is -1, must be positive"},
      {2, 0, "n_layers is 0, must be positive"},
      {3, 0, "n_heads is 0, must be positive"},
      {4, 0, "n_kv_heads is 0, must be positive"},
      {4, -4, "n_kv_heads is -4, must be positive"},
      {4, 3, "n_heads 8 is not a multiple of n_kv_heads 3"},
      {4, 16, "n_kv_heads 16 exceeds n_heads 8"},
      {3, 6, "dim 64 is not divisible by n_heads 6"},
      {6, -1, "seq_len is -1, must be positive"},
      {0, INT32_MAX, "implausibly large"},
  };
  for (int version : {0, 1}) {
    std::vector<char> good =
        readBytes(synth("hdr" + std::to_string(version) + ".bin", tinyConfig(), version));
    for (const Case &k : cases) {
      std::vector<char> bytes = good;
      patchInt32(bytes, paramsOffset(version) + 4 * size_t(k.field), k.value);
      std::string error = openError(bytes);
      SCOPED_TRACE("version " + std::to_string(version) + ", field " + std::to_string(k.field) +
                   " = " + std::to_string(k.value));
      ASSERT_FALSE(error.empty());
      EXPECT_NE(error.find(k.phrase), std::string::npos) << error;
    }
  }
}

TEST_F(Llama2cSynthetic, OddHeadSizeIsRejected) {
  ModelConfig c = tinyConfig();
  std::vector<char> bytes = readBytes(synth("odd.bin", c, 1));
  patchInt32(bytes, 8 + 0, 24); // dim 24 over 8 heads: head size 3
  std::string error = openError(bytes);
  EXPECT_NE(error.find("head size 3 is odd"), std::string::npos) << error;
}

TEST_F(Llama2cSynthetic, NegativeVocabMeansSeparateOnlyInLegacy) {
  std::vector<char> v1 = readBytes(synth("negv1.bin", tinyConfig(), 1));
  patchInt32(v1, 8 + 20, -512);
  EXPECT_NE(openError(v1).find("v1 header: vocab_size is -512"), std::string::npos);
  // A legacy file whose vocab turns negative now promises an extra classifier
  // the file does not have.
  std::vector<char> legacy = readBytes(synth("neg.bin", tinyConfig(), 0));
  patchInt32(legacy, 20, -512);
  EXPECT_NE(openError(legacy).find("bytes from the header"), std::string::npos);
  patchInt32(legacy, 20, INT32_MIN);
  EXPECT_NE(openError(legacy).find("must be positive"), std::string::npos);
}

TEST_F(Llama2cSynthetic, BadV1MagicAndVersionAreRejected) {
  std::vector<char> good = readBytes(synth("magic.bin", tinyConfig(), 1));
  std::vector<char> bytes = good;
  bytes[3] = 'x'; // no longer "ak42": the file is read as legacy
  std::string error = openError(bytes);
  EXPECT_NE(error.find("legacy header"), std::string::npos) << error;

  bytes = good;
  patchInt32(bytes, 4, 2);
  error = openError(bytes);
  EXPECT_NE(error.find("v1 header: unsupported version 2"), std::string::npos) << error;

  bytes = good;
  bytes[8 + 28] = 7;
  error = openError(bytes);
  EXPECT_NE(error.find("shared_classifier byte is 7"), std::string::npos) << error;
}

TEST_F(Llama2cSynthetic, HugeDimsReportOverflowNotCrash) {
  for (int version : {0, 1}) {
    std::vector<char> bytes(version == 1 ? 256 : 28, 0);
    if (version == 1) {
      patchInt32(bytes, 0, int32_t(kLlama2cV1Magic));
      patchInt32(bytes, 4, 1);
      bytes[36] = 1;
    }
    // Every field at the plausibility limit: L * dim * dim is 2^72.
    const int32_t big = kLlama2cMaxField;
    const int32_t fields[7] = {big, big, big, 16, 16, big, big};
    for (int f = 0; f < 7; ++f)
      patchInt32(bytes, paramsOffset(version) + 4 * size_t(f), fields[f]);
    bytes.resize(bytes.size() + 4096, 0);
    std::string error = openError(bytes);
    EXPECT_NE(error.find("overflow"), std::string::npos) << error;
  }
}

TEST_F(Llama2cSynthetic, HeaderByteCorruptionNeverCrashes) {
  for (int version : {0, 1}) {
    std::vector<char> good =
        readBytes(synth("fuzz" + std::to_string(version) + ".bin", tinyConfig(), version));
    // Header bytes only: legacy's 28, v1's magic..shared byte (37).
    const size_t headerBytes = version == 1 ? 37 : 28;
    for (size_t offset = 0; offset < headerBytes; ++offset) {
      for (unsigned char value : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
        std::vector<char> bytes = good;
        bytes[offset] = char(value);
        std::string p = path("fuzz.bin");
        writeBytes(p, bytes);
        ErrorOr<Llama2cCheckpoint> ckpt = Llama2cCheckpoint::open(p);
        if (!ckpt) {
          EXPECT_EQ(ckpt.message().find('\n'), std::string::npos);
          continue;
        }
        // Whatever opened must lie inside the file: touch every tensor's
        // first and last float (a bad pointer would fault here).
        volatile float sink = 0;
        for (const WeightTensor &t : ckpt->weights())
          sink = t.data[0] + t.data[t.numElements() - 1];
        (void)sink;
      }
    }
  }
}

TEST_F(Llama2cSynthetic, MissingAndNonRegularFiles) {
  ErrorOr<Llama2cCheckpoint> missing = Llama2cCheckpoint::open(path("nope.bin"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.message().find("nope.bin: cannot open"), std::string::npos)
      << missing.message();
  ErrorOr<Llama2cCheckpoint> directory = Llama2cCheckpoint::open(dir_);
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.message().find("not a regular file"), std::string::npos)
      << directory.message();
}

TEST_F(Llama2cSynthetic, WriterRejectsInvalidShapes) {
  ModelConfig c = tinyConfig();
  c.nKvHeads = 3;
  Status s = writeSyntheticModel(path("bad.bin"), c, 0, 1);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("not a multiple of n_kv_heads"), std::string::npos);
  EXPECT_FALSE(fs::exists(path("bad.bin")));
  EXPECT_FALSE(writeSyntheticModel(path("bad.bin"), tinyConfig(), 2, 1));
}

TEST(SyntheticShapes, NamedShapes) {
  ErrorOr<ModelConfig> b1 = syntheticShape("1b");
  ASSERT_TRUE(b1);
  EXPECT_EQ(b1->dim, 2048);
  EXPECT_EQ(b1->hiddenDim, 5632);
  EXPECT_EQ(b1->nLayers, 22);
  EXPECT_EQ(b1->nKvHeads, 4);
  // The 1b legacy file: ~4.4 GB, computed without writing it.
  ErrorOr<uint64_t> bytes = llama2cFileBytes(*b1, 0);
  ASSERT_TRUE(bytes);
  EXPECT_GT(*bytes, 4000000000ull);
  EXPECT_LT(*bytes, 5000000000ull);
  for (const std::string &name : syntheticShapeNames()) {
    ErrorOr<ModelConfig> c = syntheticShape(name);
    ASSERT_TRUE(c) << name;
    EXPECT_TRUE(validateLlama2cConfig(*c)) << name;
  }
  EXPECT_FALSE(syntheticShape("7b"));
}
