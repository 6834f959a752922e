// Writes random-weight llama2.c checkpoints from a seekable PRNG, streamed.
#include "compiler/Import/SyntheticModel.h"

#include "compiler/Import/Llama2cCheckpoint.h"
#include "runtime/support/SplitMix64.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

using namespace quill;

namespace {

/// FNV-1a, to give every tensor name its own PRNG stream.
uint64_t hashName(const std::string &name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : name) {
    h ^= ch;
    h *= 0x100000001b3ULL;
  }
  return h;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct FileCloser {
  void operator()(std::FILE *f) const {
    if (f)
      std::fclose(f);
  }
};

} // namespace

ErrorOr<ModelConfig> quill::syntheticShape(const std::string &name) {
  // dim, hidden, layers, heads, kv heads, vocab, seq_len.
  struct Shape {
    const char *name;
    int32_t fields[7];
  };
  static const Shape kShapes[] = {
      {"15m", {288, 768, 6, 6, 6, 32000, 256}},
      {"110m", {768, 2048, 12, 12, 12, 32000, 1024}},
      {"1b", {2048, 5632, 22, 32, 4, 32000, 2048}},
      {"tiny", {64, 172, 2, 8, 4, 512, 128}},
  };
  for (const Shape &s : kShapes) {
    if (name != s.name)
      continue;
    ModelConfig c;
    c.dim = s.fields[0];
    c.hiddenDim = s.fields[1];
    c.nLayers = s.fields[2];
    c.nHeads = s.fields[3];
    c.nKvHeads = s.fields[4];
    c.vocabSize = s.fields[5];
    c.seqLen = s.fields[6];
    return c;
  }
  return Status::error("unknown shape '" + name + "' (known: 15m, 110m, 1b, tiny)");
}

std::vector<std::string> quill::syntheticShapeNames() { return {"15m", "110m", "1b", "tiny"}; }

void quill::fillSyntheticTensor(const std::string &name, const std::vector<int64_t> &shape,
                                uint64_t seed, int64_t firstElement, float *out, int64_t count,
                                int64_t period, float queryKeyGain) {
  // Scale so a unit-RMS input gives outputs of RMS ~0.6 at every layer.
  const float fanIn = shape.size() == 2 ? float(shape[1]) : 1.0f;
  float center = 0.0f, halfWidth = 1.0f / std::sqrt(fanIn);
  if (endsWith(name, "norm")) {
    center = 1.0f;
    halfWidth = 0.1f;
  } else if (name == "tok_embeddings") {
    // Unit-norm rows: small next to what the layers add to the residual, so a
    // tied classifier does not just echo the input token, yet tied logits
    // still spread by about one unit.
    halfWidth = std::sqrt(3.0f) / std::sqrt(fanIn);
  } else if (endsWith(name, ".wq") || endsWith(name, ".wk")) {
    halfWidth *= queryKeyGain;
  } else if (name == "output") {
    // A separate classifier: logits spread by a few units, so the next-token
    // distribution is neither flat nor one-hot.
    halfWidth = 5.0f / std::sqrt(fanIn);
  }
  const uint64_t base = splitMix64Mix(seed ^ hashName(name));
  for (int64_t i = 0; i < count; ++i) {
    // Element k is splitmix64's (k+1)-th value, so any chunk can be
    // generated on its own.
    int64_t k = firstElement + i;
    if (period > 0)
      k %= period;
    uint64_t bits = splitMix64At(base, uint64_t(k + 1));
    float unit = float(bits >> 40) * (1.0f / 16777216.0f); // [0, 1)
    out[i] = center + halfWidth * (2.0f * unit - 1.0f);
  }
}

Status quill::writeSyntheticModel(const std::string &path, const ModelConfig &config,
                                  int formatVersion, uint64_t seed, int64_t period,
                                  float queryKeyGain) {
  if (formatVersion != 0 && formatVersion != 1)
    return Status::error(path + ": unknown llama2.c format version " +
                         std::to_string(formatVersion));
  if (Status s = validateLlama2cConfig(config); !s)
    return Status::error(path + ": " + s.message());
  if (ErrorOr<uint64_t> bytes = llama2cFileBytes(config, formatVersion); !bytes)
    return Status::error(path + ": " + bytes.message());

  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file)
    return Status::error(path + ": cannot create: " + std::strerror(errno));
  bool ok = true;
  auto write = [&](const void *data, size_t bytes) {
    ok = ok && std::fwrite(data, 1, bytes, file.get()) == bytes;
  };

  int32_t params[7] = {config.dim,      config.hiddenDim, config.nLayers, config.nHeads,
                       config.nKvHeads, config.vocabSize, config.seqLen};
  if (formatVersion == 0) {
    // Legacy marks a separate classifier with a negative vocab size.
    if (!config.sharedClassifier)
      params[5] = -params[5];
    write(params, sizeof(params));
  } else {
    unsigned char header[kLlama2cV1HeaderBytes] = {};
    const uint32_t magic = kLlama2cV1Magic;
    const int32_t version = 1;
    std::memcpy(header, &magic, 4);
    std::memcpy(header + 4, &version, 4);
    std::memcpy(header + 8, params, sizeof(params));
    header[8 + sizeof(params)] = config.sharedClassifier ? 1 : 0;
    write(header, sizeof(header));
  }

  // One fixed-size buffer: the 1b shape is ~4.4 GB and must not be in memory.
  constexpr int64_t kChunk = 1 << 16;
  std::vector<float> buffer(kChunk);
  const int64_t headDim = config.headDim();
  for (const Llama2cBlock &block : llama2cFileLayout(config, formatVersion)) {
    int64_t total = 1;
    for (int64_t d : block.shape)
      total *= d;
    for (int64_t start = 0; ok && start < total; start += kChunk) {
      int64_t count = std::min(kChunk, total - start);
      if (block.isWeight) {
        fillSyntheticTensor(block.name, block.shape, seed, start, buffer.data(), count, period,
                            queryKeyGain);
      } else {
        // The legacy RoPE tables, as llama2.c's export computes them:
        // cos/sin(pos * theta^(-2i/head_size)), row = pos, column = i.
        const bool isReal = block.name == "freq_cis_real";
        const int64_t half = headDim / 2;
        for (int64_t k = 0; k < count; ++k) {
          int64_t pos = (start + k) / half, i = (start + k) % half;
          double freq = 1.0 / std::pow(double(config.ropeTheta), double(2 * i) / double(headDim));
          double angle = double(pos) * freq;
          buffer[k] = float(isReal ? std::cos(angle) : std::sin(angle));
        }
      }
      write(buffer.data(), size_t(count) * sizeof(float));
    }
  }
  if (!ok || std::fflush(file.get()) != 0 || std::fclose(file.release()) != 0) {
    std::string reason = std::strerror(errno);
    std::remove(path.c_str());
    return Status::error(path + ": cannot write: " + reason);
  }
  return Status::ok();
}

ErrorOr<std::string> quill::syntheticTokenizerBytes(int32_t vocabSize) {
  if (vocabSize < 260)
    return Status::error("a synthetic tokenizer needs a vocabulary of at least 260 "
                         "(3 specials and 256 byte tokens), got " +
                         std::to_string(vocabSize));
  std::string out;
  auto put = [&](const void *data, size_t size) {
    out.append(static_cast<const char *>(data), size);
  };
  int32_t maxLength = 16;
  put(&maxLength, 4);
  for (int32_t id = 0; id < vocabSize; ++id) {
    std::string piece;
    if (id == 0) {
      piece = "<unk>";
    } else if (id == 1) {
      piece = "\n<s>\n";
    } else if (id == 2) {
      piece = "\n</s>\n";
    } else if (id < 259) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "<0x%02X>", id - 3);
      piece = hex;
    } else {
      piece = " t" + std::to_string(id);
    }
    float score = id < 259 ? 0.0f : -float(id);
    int32_t length = static_cast<int32_t>(piece.size());
    put(&score, 4);
    put(&length, 4);
    put(piece.data(), piece.size());
  }
  return out;
}

Status quill::writeSyntheticTokenizer(const std::string &path, int32_t vocabSize) {
  auto bytes = syntheticTokenizerBytes(vocabSize);
  if (!bytes)
    return Status::error(path + ": " + bytes.message());
  std::ofstream out(path, std::ios::binary);
  if (!out)
    return Status::error(path + ": cannot open for writing");
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  if (!out.flush())
    return Status::error(path + ": write failed");
  return Status::ok();
}
