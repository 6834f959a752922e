// Whole-model throughput of a loaded artifact: prefill and decode tokens/s,
// set against the machine's measured ceilings.
#pragma once

#include "runtime/artifact/ArtifactFormat.h"
#include "runtime/artifact/ModelConfig.h"
#include "runtime/artifact/WeightTable.h"
#include "runtime/device/Device.h"
#include "runtime/support/Error.h"

#include <tbb/task_arena.h>

#include <string>
#include <utility>
#include <vector>

namespace quill {

class Artifact;

struct ModelBenchReport {
  /// "cpu", or the device whose own memory bandwidth was probed (then the
  /// FMA peak is not probed and its fields stay 0; a failed probe leaves the
  /// bandwidth and decode's fraction 0).
  std::string device = "cpu";
  int threads = 0;
  int promptTokens = 0, decodeTokens = 0;
  double prefillTokensPerS = 0, decodeTokensPerS = 0;
  double bandwidthGBs = 0, fmaGFlops = 0;
  /// vpdpbusd's peak (measureInt8DotPeak); 0 on a GPU or a CPU without it.
  double int8DotGOps = 0;
  double weightBytesPerToken = 0; ///< Bytes a decode step must stream.
  /// What the artifact stores (setWeights): the encoding holding the most
  /// bytes, and the bytes of each encoding present; empty without a table.
  std::string weightType;
  std::vector<std::pair<std::string, uint64_t>> weightBytesByType;
  /// Where a CPU run reads the weights from: "copied" (a copy in memory,
  /// weightHugePageBytes of it in huge pages) or "mapped" (the file's pages,
  /// --mmap); empty on a GPU.
  std::string weightPages;
  uint64_t weightHugePageBytes = 0;
  /// The KV cache's element type and the bytes one position adds to it
  /// (all layers, keys and values).
  std::string kvType = "f32";
  uint64_t kvBytesPerToken = 0;
  /// Cache bytes a decode step reads, on average over the timed steps
  /// (kvBytesReadPerStep): decode's bandwidth fraction counts them beside
  /// the weights.
  double kvBytesReadPerToken = 0;
  double prefillFlopsPerToken = 0;
  double decodeFractionOfBandwidth = 0, prefillFractionOfFmaPeak = 0;
  /// Prefill's matrix work against the int8 peak: the ceiling that applies
  /// to block-quantized weights (their products are int8 dot products).
  double prefillFractionOfInt8Peak = 0;

  /// Fills weightType and weightBytesByType from the artifact's table.
  void setWeights(const std::vector<WeightEntry> &table);
  /// Fills weightPages and weightHugePageBytes from a CPU artifact.
  void setWeightPages(const Artifact &artifact);
  std::string toText() const;
  std::string toJson() const;

private:
  std::string figuresText() const; ///< toText's machine, prefill and decode lines.
};

/// Streams a deterministic `promptTokens`-token prompt through the device,
/// then decodes `decodeTokens` greedy steps, after one warm-up pass (which
/// also faults the mapped weights in); then probes the machine's bandwidth,
/// FMA peak and int8 dot-product peak on the same arena.
ErrorOr<ModelBenchReport> benchmarkModel(Device &device, const ModelConfig &config,
                                         const Schedule &decode, tbb::task_arena &arena,
                                         int promptTokens, int decodeTokens);

/// Bytes of weights the decode schedule `decode` reads per step, in the
/// encodings the artifact stores them in: every weight range a dispatch
/// binds, counted once, except that an embedding kernel's table (of
/// `vocab` rows) counts one row unless another kernel reads it whole (a
/// shared classifier).
double weightBytesPerToken(const Schedule &decode, int32_t vocab);
/// KV-cache bytes one decode step reads on average over `decodeTokens`
/// steps after a prompt of `promptTokens`: the step at position p attends
/// to p + 1 positions (all of them; a sliding window its last ones), each
/// `kvBytesPerToken` over the layers.
double kvBytesReadPerStep(uint64_t kvBytesPerToken, int promptTokens, int decodeTokens,
                          int32_t slidingWindow);
/// FLOPs of one token through the matrices (2 per weight) plus attention
/// over `context` cached positions.
double flopsPerToken(const ModelConfig &config, double context);

} // namespace quill
