// Synthetic models as F32 GGUF files of the llama architecture: the same
// values as the llama2.c files of one seed (GGUF keeps llama2.c's Q/K row
// order), with a SentencePiece vocabulary in the metadata, so that Quill and
// llama.cpp can run one file of any shape. Written as a stream: a 1b shape's
// 4.4 GB never sits in memory.
#include "compiler/Import/GgufModel.h"
#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/SyntheticModel.h"
#include "runtime/support/ByteStream.h"
#include "runtime/support/ReadFile.h"
#include "runtime/tokenizer/TokenizerFormat.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace quill {

namespace {

// GGUF's metadata value types.
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kString = 8, kArray = 9 };
constexpr uint32_t kGgmlF32 = 0;
constexpr uint64_t kAlignment = 32; // GGUF's default general.alignment.

/// A llama2.c tokenizer.bin's vocabulary as a GGUF llama vocabulary spells
/// it: <unk>, <s> and </s> for ids 0-2, spaces as U+2581. (parseTokenizer
/// already types the tokens with GGUF's numbers.)
ErrorOr<TokenizerData> ggufVocabulary(const std::string &bytes, int32_t vocabSize,
                                      const std::string &source) {
  auto parsed = parseTokenizer(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(),
                               vocabSize, source + ": ");
  if (!parsed)
    return parsed.status();
  TokenizerData vocabulary = parsed.take();
  for (size_t id = 0; id < vocabulary.pieces.size(); ++id) {
    std::string &piece = vocabulary.pieces[id];
    if (id <= 2) {
      piece = id == 0 ? "<unk>" : id == 1 ? "<s>" : "</s>";
      continue;
    }
    std::string spelled;
    for (char c : piece)
      spelled += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    piece = std::move(spelled);
  }
  return vocabulary;
}

/// GGUF's strings: a u64 length, then the bytes.
void putGgufString(ByteWriter &w, const std::string &s) {
  w.put<uint64_t>(s.size());
  w.bytes().insert(w.bytes().end(), s.begin(), s.end());
}

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
  auto vocab =
      ggufVocabulary(vocabulary, config.vocabSize, tokenizerPath.empty() ? path : tokenizerPath);
  if (!vocab)
    return vocab.status();

  ByteWriter meta;
  uint64_t keys = 0;
  auto key = [&](const std::string &k, uint32_t type) {
    putGgufString(meta, k);
    meta.put<uint32_t>(type);
    ++keys;
  };
  auto u32 = [&](const std::string &k, uint32_t v) {
    key(k, kU32);
    meta.put(v);
  };
  auto f32 = [&](const std::string &k, float v) {
    key(k, kF32);
    meta.put(v);
  };
  auto str = [&](const std::string &k, const std::string &v) {
    key(k, kString);
    putGgufString(meta, v);
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
  auto array = [&](const std::string &k, uint32_t elementType) {
    key(k, kArray);
    meta.put<uint32_t>(elementType);
    meta.put<uint64_t>(vocab->pieces.size());
  };
  array("tokenizer.ggml.tokens", kString);
  for (const std::string &piece : vocab->pieces)
    putGgufString(meta, piece);
  array("tokenizer.ggml.scores", kF32);
  for (float score : vocab->scores)
    meta.put(score);
  array("tokenizer.ggml.token_type", kI32);
  for (TokenType type : vocab->types)
    meta.put<int32_t>(static_cast<int32_t>(type));
  u32("tokenizer.ggml.unknown_token_id", 0);
  u32("tokenizer.ggml.bos_token_id", 1);
  u32("tokenizer.ggml.eos_token_id", 2);

  // Tensor infos: name, dims (the row length first), type, offset.
  std::vector<Llama2cBlock> tensors;
  for (const Llama2cBlock &block : llama2cFileLayout(config, 1))
    if (block.isWeight)
      tensors.push_back(block);
  ByteWriter infos;
  uint64_t offset = 0;
  std::vector<uint64_t> elements;
  for (const Llama2cBlock &t : tensors) {
    putGgufString(infos, ggufTensorName(t.name));
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
  ByteWriter headerWriter;
  for (char c : {'G', 'G', 'U', 'F'})
    headerWriter.put(c);
  headerWriter.put<uint32_t>(3);
  headerWriter.put<uint64_t>(tensors.size());
  headerWriter.put<uint64_t>(keys);
  std::vector<uint8_t> &header = headerWriter.bytes();
  header.insert(header.end(), meta.bytes().begin(), meta.bytes().end());
  header.insert(header.end(), infos.bytes().begin(), infos.bytes().end());
  header.resize((header.size() + kAlignment - 1) / kAlignment * kAlignment, 0);

  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(std::fopen(path.c_str(), "wb"),
                                                        &std::fclose);
  if (!file)
    return Status::error(path + ": cannot create: " + std::strerror(errno));
  bool ok = std::fwrite(header.data(), 1, header.size(), file.get()) == header.size();
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
