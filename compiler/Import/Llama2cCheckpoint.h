// Reads llama2.c checkpoints (legacy and "ak42" v1) by mapping the file and
// naming every tensor; MLIR-free so tools and tests can use it on its own.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/support/Error.h"
#include "runtime/support/MappedFile.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace quill {

/// One named tensor of a checkpoint, row-major. `data` points into the mapped
/// file and stays valid as long as the Llama2cCheckpoint it came from.
struct WeightTensor {
  std::string name;
  std::vector<int64_t> shape;
  const float *data = nullptr;

  /// The number of floats: the product of `shape`.
  int64_t numElements() const;
};

/// The v1 magic "ak42", read from disk as a little-endian uint32.
constexpr uint32_t kLlama2cV1Magic = 0x616b3432;
/// Bytes before the first weight: 7 int32 for legacy, a padded block for v1.
constexpr uint64_t kLlama2cLegacyHeaderBytes = 7 * 4;
constexpr uint64_t kLlama2cV1HeaderBytes = 256;
/// Largest value accepted for any header field; anything above is garbage,
/// not a model, and rejecting it early keeps size arithmetic small.
constexpr int32_t kLlama2cMaxField = 1 << 24;

/// One block of a llama2.c file body, in file order.
struct Llama2cBlock {
  std::string name;           ///< Canonical tensor name, or "freq_cis_real" /
                              ///< "freq_cis_imag" for the legacy RoPE tables.
  std::vector<int64_t> shape; ///< Row-major shape in floats.
  bool isWeight = true;       ///< False for the freq_cis tables (not weights).
};

/// Checks that `config` describes a model llama2.c files can hold: positive
/// fields no larger than kLlama2cMaxField, heads dividing dim, kv heads
/// dividing heads, an even head size. The message does not name a file.
Status validateLlama2cConfig(const ModelConfig &config);

/// The exact file size of a checkpoint of `config` in `formatVersion` (0 legacy
/// with its freq_cis tables, 1 v1), computed with overflow checks.
/// `config` must already pass validateLlama2cConfig.
ErrorOr<uint64_t> llama2cFileBytes(const ModelConfig &config, int formatVersion);

/// The blocks of a checkpoint body in the order the format stores them:
/// kind-major (all layers' wq, then all layers' wk, ...), as llama2.c writes.
std::vector<Llama2cBlock> llama2cFileLayout(const ModelConfig &config, int formatVersion);

/// The canonical tensor names in canonical order: tok_embeddings, then per
/// layer attention_norm wq wk wv wo ffn_norm w1 w2 w3, then norm and (when
/// the classifier is separate) output.
std::vector<std::string> llama2cCanonicalNames(const ModelConfig &config);

/// A read-only memory-mapped llama2.c checkpoint. Movable, not copyable; the
/// mapping lives as long as the object, and moving keeps tensor data valid.
class Llama2cCheckpoint {
public:
  /// Maps `path` and checks its header and size; every failure is one line
  /// naming the path and what is wrong.
  static ErrorOr<Llama2cCheckpoint> open(const std::string &path);

  Llama2cCheckpoint(Llama2cCheckpoint &&other) = default;
  Llama2cCheckpoint &operator=(Llama2cCheckpoint &&other) = default;
  Llama2cCheckpoint(const Llama2cCheckpoint &) = delete;
  Llama2cCheckpoint &operator=(const Llama2cCheckpoint &) = delete;

  /// Shape from the header; ropeTheta 10000, normEps 1e-5, bos 1, eos 2 as
  /// llama2.c assumes (the format does not store them).
  const ModelConfig &config() const { return config_; }
  /// 0 for legacy, 1 for v1.
  int formatVersion() const { return formatVersion_; }
  /// All tensors in canonical order (see llama2cCanonicalNames).
  const std::vector<WeightTensor> &weights() const { return weights_; }
  /// The tensor called `name`, or null.
  const WeightTensor *find(const std::string &name) const;
  const std::string &path() const { return file_.path(); }

private:
  Llama2cCheckpoint() = default;

  /// The whole file; the tensors' data point into it.
  MappedFile file_;
  ModelConfig config_;
  int formatVersion_ = 0;
  std::vector<WeightTensor> weights_;
  std::unordered_map<std::string, size_t> indexByName_;
};

} // namespace quill
