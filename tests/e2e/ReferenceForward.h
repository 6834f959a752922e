// The test oracle: llama2.c's forward pass in plain C++ over a llama2.c
// checkpoint (with its own file reader, so importer bugs cannot hide in it)
// or over tensors a test made, with the other Llama-family features.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/support/Error.h"

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace quill {

/// Canonical tensor name -> row-major fp32 values.
using ReferenceTensors = std::map<std::string, std::vector<float>>;

/// A Llama-family model held in memory, evaluated one token at a time
/// exactly as llama2.c's run.c does (float math, same operation order), with
/// the other families' published extras where the config asks for them:
/// Q/K/V biases (Qwen2), per-head RMSNorm of q and k before RoPE and a head
/// width apart from dim / heads (Qwen3), scaled RoPE frequencies with an
/// attention factor (Llama 3, YaRN), and a sliding window (Mistral). Slow on purpose: every step is
/// a loop you can read against the paper.
class ReferenceModel {
public:
  /// Reads a legacy or v1 ("ak42") fp32 llama2.c checkpoint into memory.
  static ErrorOr<ReferenceModel> load(const std::string &path);
  /// A model of `config` with weights under Quill's canonical names
  /// (tok_embeddings, layers.N.{attention_norm, wq, wk, wv, wo, ffn_norm,
  /// w1, w2, w3, bq, bk, bv, q_norm, k_norm}, norm, output) in Meta's
  /// interleaved rotary layout; `ropeFrequencies` (headDim / 2 values)
  /// replaces 1 / theta^(2i / headDim) when not empty, and cos and sin are
  /// multiplied by `attentionFactor`. Fails when a tensor is missing or
  /// has the wrong size.
  static ErrorOr<ReferenceModel> fromTensors(const ModelConfig &config, ReferenceTensors tensors,
                                             std::vector<float> ropeFrequencies = {},
                                             float attentionFactor = 1.0f);

  const ModelConfig &config() const { return config_; }

  /// The products over these weights (canonical names; tok_embeddings for
  /// a shared classifier) take their input rounded to Q8_0 blocks of 32,
  /// as llama.cpp rounds the activations of Q8_0 and Q4_0 products:
  /// d = max|x| / 127, q = round-half-even(x / d), the product then over d * q.
  void roundInputsToQ8_0(std::set<std::string> weights) { q8Inputs_ = std::move(weights); }
  /// The products over these weights take their input rounded to bf16 (to
  /// nearest even), as llama.cpp rounds the activations of bf16 products.
  void roundInputsToBf16(std::set<std::string> weights) { bf16Inputs_ = std::move(weights); }

  /// Keys and values are cached rounded to `type` (f16: IEEE binary16,
  /// bf16: the top 16 bits of the f32, both to nearest even), as a
  /// quill-compile --kv-type artifact stores them.
  void roundCacheTo(KVType type) { cacheType_ = type; }

  /// Runs `token` at position `pos` and returns the vocabSize logits. Keys and
  /// values are cached per position, so calling pos = 0, 1, ... in order
  /// processes a sequence; calling pos again overwrites that position and
  /// forgets nothing before it. Returns an empty vector when token or pos is
  /// out of range.
  std::vector<float> forward(int token, int pos);

private:
  const float *weight(const std::string &name) const { return tensors_.at(name).data(); }
  const float *layerWeight(int layer, const char *kind) const {
    return weight("layers." + std::to_string(layer) + "." + kind);
  }

  /// xout(d) = W(d, n) @ x(n) for the weight called `name`, its input
  /// rounded first where roundInputsToQ8_0 or roundInputsToBf16 names it.
  void product(float *xout, const float *x, const std::string &name, int n, int d) const;
  void layerProduct(float *xout, const float *x, int layer, const char *kind, int n, int d) const {
    product(xout, x, "layers." + std::to_string(layer) + "." + kind, n, d);
  }

  ModelConfig config_;
  ReferenceTensors tensors_;
  std::set<std::string> q8Inputs_, bf16Inputs_;
  KVType cacheType_ = KVType::F32;
  std::vector<float> ropeFrequencies_;
  float attentionFactor_ = 1.0f;
  std::vector<float> keyCache_;   ///< [layer][seqLen][kvDim]
  std::vector<float> valueCache_; ///< [layer][seqLen][kvDim]
};

} // namespace quill
