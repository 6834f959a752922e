// Synthetic models as F32 GGUF files of the llama architecture: the same
// values as the llama2.c files of one seed (GGUF keeps llama2.c's Q/K row
// order), with a SentencePiece vocabulary in the metadata, so that Quill and
// llama.cpp can run one file of any shape. Written as a stream: a 1b shape's
// 4.4 GB never sits in memory.
#include "compiler/Import/GgufModel.h"
#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/SyntheticModel.h"
#include "runtime/support/ReadFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace quill {

namespace {

// GGUF's metadata value types and the token types of a llama vocabulary.
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kString = 8, kArray = 9 };
enum : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6 };
constexpr uint32_t kGgmlF32 = 0;
constexpr uint64_t kAlignment = 32; // GGUF's default general.alignment.

struct Piece {
  std::string text;
  float score = 0;
  int32_t type = kNormal;
};

/// A llama2.c tokenizer.bin's pieces as a GGUF llama vocabulary has them:
/// <unk>, <s> and </s> for ids 0-2, spaces as U+2581, byte tokens typed.
ErrorOr<std::vector<Piece>> piecesOf(const std::string &path, const std::string &b,
                                     int32_t vocabSize) {
  size_t at = 4; // max_token_length
  std::vector<Piece> pieces;
  for (int32_t id = 0; id < vocabSize; ++id) {
    float score;
    int32_t length;
    if (b.size() < at + 8)
      return Status::error(path + ": tokenizer.bin holds fewer than " + std::to_string(vocabSize) +
                           " pieces");
    std::memcpy(&score, b.data() + at, 4);
    std::memcpy(&length, b.data() + at + 4, 4);
    at += 8;
    if (length < 0 || b.size() - at < size_t(length))
      return Status::error(path + ": tokenizer.bin piece " + std::to_string(id) + " is truncated");
    std::string text(b.data() + at, size_t(length));
    at += size_t(length);
    Piece p{"", score, kNormal};
    unsigned byte;
    char end;
    if (id <= 2) {
      p.text = id == 0 ? "<unk>" : id == 1 ? "<s>" : "</s>";
      p.type = id == 0 ? kUnknown : kControl;
    } else if (text.size() == 6 && std::sscanf(text.c_str(), "<0x%2X%c", &byte, &end) == 2 &&
               end == '>') {
      p.text = text;
      p.type = kByte;
    } else {
      for (char c : text)
        p.text += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
      if (p.text.empty())
        p.type = kControl;
    }
    pieces.push_back(std::move(p));
  }
  return pieces;
}

/// GGUF's little-endian encodings, appended to a byte vector.
struct Bytes {
  std::vector<uint8_t> data;
  template <typename T> void put(T value) {
    const auto *p = reinterpret_cast<const uint8_t *>(&value);
    data.insert(data.end(), p, p + sizeof value);
  }
  void string(const std::string &s) {
    put<uint64_t>(s.size());
    data.insert(data.end(), s.begin(), s.end());
  }
  void key(const std::string &k, uint32_t type) {
    string(k);
    put<uint32_t>(type);
  }
};

} // namespace

Status writeSyntheticGguf(const std::string &path, const ModelConfig &config, uint64_t seed,
                          const std::string &tokenizerPath, int64_t period, float queryKeyGain) {
  if (Status s = validateLlama2cConfig(config); !s)
    return Status::error(path + ": " + s.message());
  std::string vocabulary;
  if (tokenizerPath.empty()) {
    auto bytes = syntheticTokenizerBytes(config.vocabSize);
    if (!bytes)
      return Status::error(path + ": " + bytes.message());
    vocabulary = bytes.take();
  } else {
    auto bytes = readSmallFile(tokenizerPath, kMaxTokenizerFileBytes, "tokenizer");
    if (!bytes)
      return bytes.status();
    vocabulary = bytes.take();
  }
  auto pieces =
      piecesOf(tokenizerPath.empty() ? path : tokenizerPath, vocabulary, config.vocabSize);
  if (!pieces)
    return pieces.status();

  Bytes meta;
  uint64_t keys = 0;
  auto u32 = [&](const std::string &k, uint32_t v) {
    meta.key(k, kU32);
    meta.put(v);
    ++keys;
  };
  auto f32 = [&](const std::string &k, float v) {
    meta.key(k, kF32);
    meta.put(v);
    ++keys;
  };
  auto str = [&](const std::string &k, const std::string &v) {
    meta.key(k, kString);
    meta.string(v);
    ++keys;
  };
  str("general.architecture", "llama");
  str("general.name", "quill-synth");
  u32("llama.context_length", uint32_t(config.seqLen));
  u32("llama.embedding_length", uint32_t(config.dim));
  u32("llama.feed_forward_length", uint32_t(config.hiddenDim));
  u32("llama.block_count", uint32_t(config.nLayers));
  u32("llama.attention.head_count", uint32_t(config.nHeads));
  u32("llama.attention.head_count_kv", uint32_t(config.nKvHeads));
  u32("llama.rope.dimension_count", uint32_t(config.headDim()));
  f32("llama.rope.freq_base", config.ropeTheta);
  f32("llama.attention.layer_norm_rms_epsilon", config.normEps);
  str("tokenizer.ggml.model", "llama");
  meta.key("tokenizer.ggml.tokens", kArray);
  meta.put<uint32_t>(kString);
  meta.put<uint64_t>(pieces->size());
  for (const Piece &p : *pieces)
    meta.string(p.text);
  meta.key("tokenizer.ggml.scores", kArray);
  meta.put<uint32_t>(kF32);
  meta.put<uint64_t>(pieces->size());
  for (const Piece &p : *pieces)
    meta.put(p.score);
  meta.key("tokenizer.ggml.token_type", kArray);
  meta.put<uint32_t>(kI32);
  meta.put<uint64_t>(pieces->size());
  for (const Piece &p : *pieces)
    meta.put(p.type);
  keys += 3;
  u32("tokenizer.ggml.unknown_token_id", 0);
  u32("tokenizer.ggml.bos_token_id", 1);
  u32("tokenizer.ggml.eos_token_id", 2);

  // Tensor infos: name, dims (the row length first), type, offset.
  std::vector<Llama2cBlock> tensors;
  for (const Llama2cBlock &block : llama2cFileLayout(config, 1))
    if (block.isWeight)
      tensors.push_back(block);
  Bytes infos;
  uint64_t offset = 0;
  std::vector<uint64_t> elements;
  for (const Llama2cBlock &t : tensors) {
    infos.string(ggufTensorName(t.name));
    infos.put<uint32_t>(uint32_t(t.shape.size()));
    uint64_t n = 1;
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) {
      infos.put<uint64_t>(uint64_t(*d));
      n *= uint64_t(*d);
    }
    infos.put<uint32_t>(kGgmlF32);
    infos.put<uint64_t>(offset);
    elements.push_back(n);
    offset += (n * 4 + kAlignment - 1) / kAlignment * kAlignment;
  }
  Bytes header;
  header.data = {'G', 'G', 'U', 'F'};
  header.put<uint32_t>(3);
  header.put<uint64_t>(tensors.size());
  header.put<uint64_t>(keys);
  header.data.insert(header.data.end(), meta.data.begin(), meta.data.end());
  header.data.insert(header.data.end(), infos.data.begin(), infos.data.end());
  header.data.resize((header.data.size() + kAlignment - 1) / kAlignment * kAlignment, 0);

  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(std::fopen(path.c_str(), "wb"),
                                                        &std::fclose);
  if (!file)
    return Status::error(path + ": cannot create: " + std::strerror(errno));
  bool ok =
      std::fwrite(header.data.data(), 1, header.data.size(), file.get()) == header.data.size();
  constexpr int64_t kChunk = 1 << 16;
  std::vector<float> buffer(kChunk);
  static const char zeros[kAlignment] = {};
  for (size_t i = 0; ok && i < tensors.size(); ++i) {
    const int64_t total = int64_t(elements[i]);
    for (int64_t start = 0; ok && start < total; start += kChunk) {
      const int64_t count = std::min(kChunk, total - start);
      fillSyntheticTensor(tensors[i].name, tensors[i].shape, seed, start, buffer.data(), count,
                          period, queryKeyGain);
      ok = std::fwrite(buffer.data(), 4, size_t(count), file.get()) == size_t(count);
    }
    const uint64_t pad = (kAlignment - elements[i] * 4 % kAlignment) % kAlignment;
    ok = ok && std::fwrite(zeros, 1, pad, file.get()) == pad;
  }
  if (!ok || std::fflush(file.get()) != 0 || std::fclose(file.release()) != 0) {
    std::string reason = std::strerror(errno);
    std::remove(path.c_str());
    return Status::error(path + ": cannot write: " + reason);
  }
  return Status::ok();
}

} // namespace quill
