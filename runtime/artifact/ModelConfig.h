// The hyperparameters of a Llama-family model (Llama 2 and 3, Qwen 2 and 3,
// Mistral, SmolLM): what the importer reads, the compiler shapes the step
// from, and the artifact carries to the runtime.
#pragma once

#include "runtime/artifact/KVType.h"

#include <cstdint>
#include <vector>

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

  /// Elements per attention head; 0 means dim / nHeads. Qwen3 sets it
  /// apart, so the attention width nHeads * headDim need not be dim.
  int32_t headDimension = 0;
  /// Q, K and V projections have biases (Qwen2): tensors layers.N.{bq,bk,bv}.
  bool qkvBias = false;
  /// Each head of q and k is RMS-normalized before the rotary embedding
  /// (Qwen3): tensors layers.N.{q_norm,k_norm} of headDim elements.
  bool qkNorm = false;
  /// Sliding-window attention (Mistral): a position attends to the last
  /// slidingWindow positions, itself included; 0 means the whole context.
  int32_t slidingWindow = 0;
  /// The rotary embedding's inverse frequencies per pair of a head's
  /// elements (headDim / 2), when a RoPE scaling (linear, llama3, yarn)
  /// changed them from theta^(-2i / headDim); empty otherwise. The compiler
  /// stores them as the constant tensor rope_freqs.
  std::vector<float> ropeFrequencies;
  /// YaRN's attention factor: cos and sin are multiplied by it (1 otherwise).
  float ropeAttentionFactor = 1.0f;
  /// Tokens that end generation besides eosId (Llama 3's <|eot_id|> and
  /// <|eom_id|>, generation_config.json's eos_token_id lists).
  std::vector<int32_t> extraEosIds;
  /// Prompts start with bosId (false for Qwen, whose add_bos_token is off).
  bool addBos = true;
  /// The KV cache's element type: a compile-time choice (--kv-type), not
  /// the model's, carried here because the runtime sizes the cache from it.
  KVType kvType = KVType::F32;

  int32_t headDim() const { return headDimension > 0 ? headDimension : dim / nHeads; }
  /// Width of the query and of the attention output: nHeads * headDim.
  int32_t qDim() const { return headDim() * nHeads; }
  int32_t kvDim() const { return headDim() * nKvHeads; }
  /// Bytes of one cached position of one layer's keys (or values).
  uint64_t kvRowBytes() const { return kvBytesOf(kvType, uint64_t(kvDim())); }
  /// KV-cache bytes one position takes over all layers, keys and values.
  uint64_t kvBytesPerToken() const { return 2 * uint64_t(nLayers) * kvRowBytes(); }
  /// The tokens that end generation: eosId, the extra end tokens, and BOS
  /// (llama2.c-trained models separate documents with it), once each.
  std::vector<int32_t> endTokens() const {
    std::vector<int32_t> ends;
    auto add = [&](int32_t id) {
      if (id >= 0 && !contains(ends, id))
        ends.push_back(id);
    };
    add(eosId);
    for (int32_t id : extraEosIds)
      add(id);
    add(bosId);
    return ends;
  }
  /// Whether `token` ends generation (one of endTokens(); no allocation:
  /// the decode loop asks for every token).
  bool isEndToken(int32_t token) const {
    return token >= 0 && (token == eosId || token == bosId || contains(extraEosIds, token));
  }

private:
  static bool contains(const std::vector<int32_t> &ids, int32_t id) {
    for (int32_t x : ids)
      if (x == id)
        return true;
    return false;
  }
};

} // namespace quill
