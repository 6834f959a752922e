// RoPE scalings as Hugging Face's config.json and GGUF describe them (linear,
// llama3, yarn), turned at import into the table of inverse frequencies the
// step's rotary embedding reads (ModelConfig::ropeFrequencies). MLIR-free.
#pragma once

#include "runtime/support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace quill {

struct RopeScaling {
  /// "linear", "llama3" or "yarn"; "" or "default" for none.
  std::string type;
  double factor = 1.0;
  /// llama3: the context the model was pretrained with and the wavelength
  /// bounds of the band that is smoothly interpolated.
  int64_t originalContext = 0;
  double lowFreqFactor = 1.0, highFreqFactor = 4.0;
  /// yarn: the rotation counts bounding the ramp, and the attention factor
  /// (0: derived from factor, mscale and mscale_all_dim).
  double betaFast = 32.0, betaSlow = 1.0;
  double attentionFactor = 0.0;
  double mscale = 0.0, mscaleAllDim = 0.0;
  bool truncate = true;
};

/// The frequencies and attention factor a scaling gives.
struct RopeTable {
  std::vector<float> frequencies; ///< headDim / 2 inverse frequencies.
  float attentionFactor = 1.0f;
};

/// The unscaled inverse frequencies theta^(-2i / headDim), i < headDim / 2.
std::vector<double> baseRopeFrequencies(double theta, int64_t headDim);

/// The table `scaling` gives for heads of `headDim` and base `theta`, or an
/// error naming an unsupported type or an impossible parameter. A scaling
/// of type "" or "default" gives an empty table: the step computes
/// frequencies from theta itself.
ErrorOr<RopeTable> ropeTable(const RopeScaling &scaling, double theta, int64_t headDim);

/// GGUF's rope_freqs.weight holds a divisor per pair (llama3's factors):
/// the table is the base frequencies divided by them.
ErrorOr<RopeTable> ropeTableFromFactors(const std::vector<float> &factors, double theta,
                                        int64_t headDim);

} // namespace quill
