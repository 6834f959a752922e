// The test oracle: llama2.c's forward pass in plain C++ over a llama2.c
// checkpoint, with its own file reader so importer bugs cannot hide in it.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/support/Error.h"

#include <cstddef>
#include <string>
#include <vector>

namespace quill {

/// A llama2.c model held in memory, evaluated one token at a time exactly as
/// llama2.c's run.c does (float math, same operation order). Slow on purpose:
/// every step is a loop you can read against the paper.
class ReferenceModel {
public:
  /// Reads a legacy or v1 ("ak42") fp32 llama2.c checkpoint into memory.
  static ErrorOr<ReferenceModel> load(const std::string &path);

  const ModelConfig &config() const { return config_; }

  /// Runs `token` at position `pos` and returns the vocabSize logits. Keys and
  /// values are cached per position, so calling pos = 0, 1, ... in order
  /// processes a sequence; calling pos again overwrites that position and
  /// forgets nothing before it. Returns an empty vector when token or pos is
  /// out of range.
  std::vector<float> forward(int token, int pos);

private:
  /// Where each weight starts in `weights_`, in floats. Offsets rather than
  /// pointers so the model stays valid when moved.
  struct Offsets {
    size_t tokenEmbedding = 0;
    size_t rmsAtt = 0, wq = 0, wk = 0, wv = 0, wo = 0; // [layer][...] each
    size_t rmsFfn = 0, w1 = 0, w2 = 0, w3 = 0;
    size_t rmsFinal = 0;
    size_t wcls = 0;
  };

  const float *at(size_t offset) const { return weights_.data() + offset; }

  ModelConfig config_;
  std::vector<float> weights_;
  Offsets off_;
  std::vector<float> keyCache_;   ///< [layer][seqLen][kvDim]
  std::vector<float> valueCache_; ///< [layer][seqLen][kvDim]
};

} // namespace quill
