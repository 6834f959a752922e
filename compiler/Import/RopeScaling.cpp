// The published RoPE scaling rules (Hugging Face's rope utilities, Meta's
// Llama 3.1 reference, the YaRN paper), in double precision, rounded to
// float32 once at the end.
#include "compiler/Import/RopeScaling.h"

#include <algorithm>
#include <cmath>

namespace quill {

std::vector<double> baseRopeFrequencies(double theta, int64_t headDim) {
  std::vector<double> freqs(size_t(headDim / 2));
  for (size_t i = 0; i < freqs.size(); ++i)
    freqs[i] = 1.0 / std::pow(theta, double(2 * i) / double(headDim));
  return freqs;
}

namespace {

constexpr double kPi = 3.14159265358979323846;

/// Llama 3.1: wavelengths longer than originalContext / lowFreqFactor are
/// divided by factor, shorter than originalContext / highFreqFactor kept,
/// and the band between interpolated smoothly.
void llama3(const RopeScaling &s, std::vector<double> &freqs) {
  const double lowWavelen = double(s.originalContext) / s.lowFreqFactor;
  const double highWavelen = double(s.originalContext) / s.highFreqFactor;
  for (double &f : freqs) {
    const double wavelen = 2.0 * kPi / f;
    if (wavelen > lowWavelen) {
      f /= s.factor;
    } else if (!(wavelen < highWavelen)) {
      double smooth = (double(s.originalContext) / wavelen - s.lowFreqFactor) /
                      (s.highFreqFactor - s.lowFreqFactor);
      f = (1.0 - smooth) * f / s.factor + smooth * f;
    }
  }
}

/// YaRN: pairs that rotate fewer than betaSlow times over the original
/// context are interpolated (divided by factor), those rotating more than
/// betaFast times kept, with a linear ramp between.
void yarn(const RopeScaling &s, double theta, int64_t headDim, std::vector<double> &freqs) {
  auto correctionDim = [&](double rotations) {
    return double(headDim) * std::log(double(s.originalContext) / (rotations * 2.0 * kPi)) /
           (2.0 * std::log(theta));
  };
  double low = correctionDim(s.betaFast), high = correctionDim(s.betaSlow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, double(headDim - 1));
  if (low == high)
    high += 0.001;
  for (size_t i = 0; i < freqs.size(); ++i) {
    double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
    double extrapolation = 1.0 - ramp;
    double interpolated = freqs[i] / s.factor;
    freqs[i] = interpolated * (1.0 - extrapolation) + freqs[i] * extrapolation;
  }
}

/// YaRN's attention scaling: 0.1 * mscale * ln(factor) + 1 for factor > 1.
double yarnMscale(double factor, double mscale) {
  return factor <= 1.0 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0;
}

ErrorOr<RopeTable> rounded(const std::vector<double> &freqs, double attentionFactor) {
  RopeTable table;
  table.attentionFactor = float(attentionFactor);
  for (double f : freqs) {
    float value = float(f);
    if (!std::isfinite(value) || !(value > 0))
      return Status::error("the RoPE scaling gives the frequency " + std::to_string(f) +
                           ", not a positive float32");
    table.frequencies.push_back(value);
  }
  if (!std::isfinite(table.attentionFactor) || !(table.attentionFactor > 0))
    return Status::error("the RoPE scaling gives the attention factor " +
                         std::to_string(attentionFactor));
  return table;
}

} // namespace

ErrorOr<RopeTable> ropeTable(const RopeScaling &s, double theta, int64_t headDim) {
  if (s.type.empty() || s.type == "default")
    return RopeTable{};
  if (s.type != "linear" && s.type != "llama3" && s.type != "yarn")
    return Status::error("RoPE scaling type '" + s.type +
                         "' is not supported (Quill supports linear, llama3 and yarn)");
  if (!std::isfinite(s.factor) || !(s.factor >= 1.0))
    return Status::error("RoPE scaling factor " + std::to_string(s.factor) + " must be at least 1");
  if (headDim <= 0 || headDim % 2 != 0 || !(theta > 1.0))
    return Status::error("RoPE scaling needs an even head size and a base above 1");
  std::vector<double> freqs = baseRopeFrequencies(theta, headDim);
  double attentionFactor = 1.0;
  if (s.type == "linear") {
    for (double &f : freqs)
      f /= s.factor;
  } else {
    if (s.originalContext <= 0)
      return Status::error("RoPE scaling '" + s.type +
                           "' needs a positive original context length");
    if (s.type == "llama3") {
      if (!(s.lowFreqFactor > 0) || !(s.highFreqFactor > s.lowFreqFactor))
        return Status::error("llama3 RoPE scaling needs 0 < low_freq_factor < high_freq_factor");
      llama3(s, freqs);
    } else {
      if (!(s.betaFast > 0) || !(s.betaSlow > 0))
        return Status::error("yarn RoPE scaling needs positive beta_fast and beta_slow");
      yarn(s, theta, headDim, freqs);
      attentionFactor = s.attentionFactor;
      if (!(attentionFactor > 0))
        attentionFactor =
            s.mscale > 0 && s.mscaleAllDim > 0
                ? yarnMscale(s.factor, s.mscale) / yarnMscale(s.factor, s.mscaleAllDim)
                : yarnMscale(s.factor, 1.0);
    }
  }
  return rounded(freqs, attentionFactor);
}

ErrorOr<RopeTable> ropeTableFromFactors(const std::vector<float> &factors, double theta,
                                        int64_t headDim) {
  if (int64_t(factors.size()) * 2 != headDim)
    return Status::error("rope_freqs.weight has " + std::to_string(factors.size()) +
                         " entries, expected " + std::to_string(headDim / 2));
  std::vector<double> freqs = baseRopeFrequencies(theta, headDim);
  for (size_t i = 0; i < freqs.size(); ++i) {
    if (!std::isfinite(factors[i]) || !(factors[i] > 0))
      return Status::error("rope_freqs.weight holds the factor " + std::to_string(factors[i]));
    freqs[i] /= double(factors[i]);
  }
  return rounded(freqs, 1.0);
}

} // namespace quill
