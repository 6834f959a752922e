// The hyperparameters of a Llama-architecture model: what the importer reads,
// the compiler shapes the step from, and the artifact carries to the runtime.
#pragma once

#include <cstdint>

namespace quill {

struct ModelConfig {
  int32_t dim = 0;       ///< Width of the residual stream.
  int32_t hiddenDim = 0; ///< Width of the feed-forward layer.
  int32_t nLayers = 0;
  int32_t nHeads = 0;
  int32_t nKvHeads = 0; ///< < nHeads means grouped-query attention.
  int32_t vocabSize = 0;
  int32_t seqLen = 0; ///< Context length: KV-cache positions.
  float ropeTheta = 10000.0f;
  float normEps = 1e-5f;
  int32_t bosId = 1;
  int32_t eosId = 2;
  bool sharedClassifier = true; ///< Logits use the token embedding table.

  int32_t headDim() const { return dim / nHeads; }
  int32_t kvDim() const { return headDim() * nKvHeads; }
};

} // namespace quill
