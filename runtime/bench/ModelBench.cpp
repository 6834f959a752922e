// The whole-model benchmark behind `quill-run --bench`.
#include "runtime/bench/ModelBench.h"
#include "runtime/artifact/Artifact.h"

#include "runtime/bench/MachineProbes.h"
#include "runtime/device/FeedTokens.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

namespace quill {

namespace {
using Clock = std::chrono::steady_clock;

double matrixWeights(const ModelConfig &c) {
  double perLayer = 2.0 * c.dim * c.dim + 2.0 * c.dim * c.kvDim() + 3.0 * c.dim * c.hiddenDim;
  return perLayer * c.nLayers + double(c.vocabSize) * c.dim;
}

/// The greedy choice; the benchmark times the model, not a sampler chain.
int32_t argmax(const float *logits, int32_t n) {
  return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);
}
} // namespace

double kvBytesReadPerStep(uint64_t kvBytesPerToken, int promptTokens, int decodeTokens,
                          int32_t slidingWindow) {
  if (decodeTokens <= 0)
    return 0;
  double positions = 0;
  for (int p = promptTokens; p < promptTokens + decodeTokens; ++p)
    positions += slidingWindow > 0 ? std::min(p + 1, slidingWindow) : p + 1;
  return positions / decodeTokens * double(kvBytesPerToken);
}

double weightBytesPerToken(const Schedule &decode, int32_t vocab) {
  // Weight ranges by offset -> end; the embedding's table apart.
  std::map<uint64_t, uint64_t> ranges;
  std::vector<Binding> tables;
  for (const Dispatch &d : decode.dispatches) {
    const bool embedding = decode.kernels[d.kernel].rfind("embedding", 0) == 0;
    for (const Binding &b : d.bindings) {
      if (b.space != MemorySpace::Weights)
        continue;
      if (embedding)
        tables.push_back(b);
      else
        ranges[b.offset] = std::max(ranges[b.offset], b.offset + b.bytes);
    }
  }
  double bytes = 0;
  uint64_t covered = 0; // Ranges may overlap (a slice of a packed weight).
  for (auto [offset, end] : ranges) {
    const uint64_t begin = std::max(offset, covered);
    if (end > begin)
      bytes += double(end - begin);
    covered = std::max(covered, end);
  }
  for (const Binding &table : tables) {
    auto it = ranges.find(table.offset);
    if (it == ranges.end() || it->second < table.offset + table.bytes)
      bytes += double(table.bytes) / std::max(vocab, 1);
  }
  return bytes;
}

double flopsPerToken(const ModelConfig &c, double context) {
  // Scores and weighted sum: 2 flops each per cached position and width.
  double attention = 4.0 * context * c.dim * c.nLayers;
  return 2.0 * matrixWeights(c) + attention;
}

ErrorOr<ModelBenchReport> benchmarkModel(Device &device, const ModelConfig &config,
                                         const Schedule &decode, tbb::task_arena &arena,
                                         int promptTokens, int decodeTokens) {
  if (promptTokens < 1 || decodeTokens < 1)
    return Status::error("the benchmark needs at least one prompt and one decode token");
  if (promptTokens + decodeTokens > config.seqLen)
    return Status::error("the benchmark's " + std::to_string(promptTokens + decodeTokens) +
                         " positions exceed the model's context of " +
                         std::to_string(config.seqLen));
  KVCache &cache = device.kvCache();
  auto tokenAt = [&](int i) {
    return 3 + int32_t((uint64_t(i) * 2654435761u) % (config.vocabSize - 3));
  };
  std::vector<int32_t> prompt;
  for (int i = 0; i < promptTokens; ++i)
    prompt.push_back(tokenAt(i));
  auto runPrompt = [&] {
    cache.clear();
    (void)feedTokens(device, prompt.data(), promptTokens);
  };
  runPrompt(); // Warm-up: weights paged in, caches and branch predictors primed.

  ModelBenchReport r;
  r.threads = arena.max_concurrency();
  r.promptTokens = promptTokens;
  r.decodeTokens = decodeTokens;
  auto start = Clock::now();
  runPrompt();
  auto decodeStart = Clock::now();
  int32_t token = argmax(device.logits(), config.vocabSize);
  for (int i = 0; i < decodeTokens; ++i) {
    device.step(token, *cache.append());
    token = argmax(device.logits(), config.vocabSize);
  }
  auto end = Clock::now();
  if (Status s = device.error(); !s)
    return s;
  double prefillSeconds = std::chrono::duration<double>(decodeStart - start).count();
  double decodeSeconds = std::chrono::duration<double>(end - decodeStart).count();
  r.prefillTokensPerS = promptTokens / prefillSeconds;
  r.decodeTokensPerS = decodeTokens / decodeSeconds;

  r.device = device.name();
  if (r.device != "cpu") {
    // A GPU: its memory's bandwidth (0 if the probe failed); no FMA probe.
    r.bandwidthGBs = device.measureOwnBandwidthGBs();
  } else {
    r.bandwidthGBs = measureReadBandwidth(arena);
    r.fmaGFlops = measureFmaPeak(arena);
    r.int8DotGOps = measureInt8DotPeak(arena);
  }
  r.weightBytesPerToken = weightBytesPerToken(decode, config.vocabSize);
  r.kvType = std::string(kvTypeName(config.kvType));
  r.kvBytesPerToken = config.kvBytesPerToken();
  r.kvBytesReadPerToken =
      kvBytesReadPerStep(r.kvBytesPerToken, promptTokens, decodeTokens, config.slidingWindow);
  r.prefillFlopsPerToken = flopsPerToken(config, promptTokens / 2.0);
  if (r.bandwidthGBs > 0)
    r.decodeFractionOfBandwidth = (r.weightBytesPerToken + r.kvBytesReadPerToken) *
                                  r.decodeTokensPerS / (r.bandwidthGBs * 1e9);
  if (r.fmaGFlops > 0)
    r.prefillFractionOfFmaPeak = r.prefillFlopsPerToken * r.prefillTokensPerS / (r.fmaGFlops * 1e9);
  if (r.int8DotGOps > 0)
    r.prefillFractionOfInt8Peak =
        r.prefillFlopsPerToken * r.prefillTokensPerS / (r.int8DotGOps * 1e9);
  return r;
}

void ModelBenchReport::setWeights(const std::vector<WeightEntry> &table) {
  weightType = dominantEncoding(table);
  weightBytesByType.clear();
  auto bytes = bytesByEncoding(table);
  for (size_t k = 0; k < kWeightEncodingCount; ++k)
    if (bytes[k])
      weightBytesByType.emplace_back(kWeightEncodings[k].name, bytes[k]);
}

void ModelBenchReport::setWeightPages(const Artifact &artifact) {
  weightPages = artifact.weightPages() == WeightPages::Copied ? "copied" : "mapped";
  weightHugePageBytes = artifact.weightHugePageBytes();
}

std::string ModelBenchReport::toText() const {
  std::string weights;
  if (!weightType.empty()) {
    weights = "weights: " + weightType;
    for (size_t i = 0; i < weightBytesByType.size(); ++i) {
      weights += (i ? ", " : " (") + weightBytesByType[i].first + " " +
                 byteSizeText(weightBytesByType[i].second);
    }
    weights += ")";
    if (weightPages == "copied")
      weights += ", copied into memory (" + byteSizeText(weightHugePageBytes) + " in huge pages)";
    else if (weightPages == "mapped")
      weights += ", read from the file's mapping";
    weights += "\n";
  }
  weights += "kv cache: " + kvType + ", " + std::to_string(kvBytesPerToken) + " bytes per token\n";
  return weights + figuresText();
}

std::string ModelBenchReport::figuresText() const {
  char buffer[1024];
  double prefillGFlops = prefillFlopsPerToken * prefillTokensPerS / 1e9;
  double decodeGBs = (weightBytesPerToken + kvBytesReadPerToken) * decodeTokensPerS / 1e9;
  if (device != "cpu") {
    std::snprintf(buffer, sizeof buffer,
                  "device: %s\n"
                  "machine: device memory bandwidth %.1f GB/s (device-to-device copies)\n"
                  "prefill: %d tokens, %.1f tokens/s, %.1f GFLOP/s (no FMA probe on the "
                  "device)\n"
                  "decode:  %d tokens, %.1f tokens/s, %.1f MB/token of weights + %.1f of KV "
                  "cache = %.1f GB/s = %.1f%% of the device's memory bandwidth\n",
                  device.c_str(), bandwidthGBs, promptTokens, prefillTokensPerS, prefillGFlops,
                  decodeTokens, decodeTokensPerS, weightBytesPerToken / 1e6,
                  kvBytesReadPerToken / 1e6, decodeGBs, 100 * decodeFractionOfBandwidth);
    return buffer;
  }
  char int8[160] = "no int8 dot-product probe (no AVX2)";
  char int8Share[96] = "";
  if (int8DotGOps > 0) {
    std::snprintf(int8, sizeof int8, "int8 dot-product peak %.0f GOP/s (%s)", int8DotGOps,
                  int8DotPeakInstruction());
    std::snprintf(int8Share, sizeof int8Share, ", %.1f%% of the int8 peak",
                  100 * prefillFractionOfInt8Peak);
  }
  std::snprintf(buffer, sizeof buffer,
                "threads: %d\n"
                "machine: read bandwidth %.1f GB/s, FMA peak %.0f GFLOP/s, %s\n"
                "prefill: %d tokens, %.1f tokens/s, %.1f GFLOP/s = %.1f%% of the FMA peak%s\n"
                "decode:  %d tokens, %.1f tokens/s, %.1f MB/token of weights + %.1f of KV "
                "cache = %.1f GB/s = %.1f%% of the read bandwidth\n",
                threads, bandwidthGBs, fmaGFlops, int8, promptTokens, prefillTokensPerS,
                prefillGFlops, 100 * prefillFractionOfFmaPeak, int8Share, decodeTokens,
                decodeTokensPerS, weightBytesPerToken / 1e6, kvBytesReadPerToken / 1e6, decodeGBs,
                100 * decodeFractionOfBandwidth);
  return buffer;
}

std::string ModelBenchReport::toJson() const {
  std::ostringstream out;
  out.precision(6);
  // A figure whose probe did not run (the FMA and int8 peaks on a GPU, the
  // int8 peak on a CPU without AVX2) is null.
  auto figure = [&](double peak, double value) -> std::ostream & {
    return peak > 0 ? out << value : out << "null";
  };
  out << "{\"device\":\"" << device << "\",\"threads\":" << threads << ",\"weight_type\":";
  if (weightType.empty())
    out << "null";
  else
    out << '"' << weightType << '"';
  out << ",\"weight_bytes_by_type\":{";
  for (size_t i = 0; i < weightBytesByType.size(); ++i)
    out << (i ? "," : "") << '"' << weightBytesByType[i].first
        << "\":" << weightBytesByType[i].second;
  out << "}";
  if (!weightPages.empty())
    out << ",\"weight_pages\":\"" << weightPages
        << "\",\"weight_bytes_in_huge_pages\":" << weightHugePageBytes;
  out << ",\"kv_type\":\"" << kvType << "\",\"kv_bytes_per_token\":" << kvBytesPerToken
      << ",\"prompt_tokens\":" << promptTokens << ",\"decode_tokens\":" << decodeTokens
      << ",\"prefill_tokens_per_s\":" << prefillTokensPerS
      << ",\"decode_tokens_per_s\":" << decodeTokensPerS << ",\"bandwidth_gb_s\":" << bandwidthGBs
      << ",\"fma_gflop_s\":";
  figure(fmaGFlops, fmaGFlops) << ",\"int8_dot_gop_s\":";
  figure(int8DotGOps, int8DotGOps)
      << ",\"weight_bytes_per_token\":" << weightBytesPerToken
      << ",\"kv_bytes_read_per_token\":" << kvBytesReadPerToken
      << ",\"prefill_flops_per_token\":" << prefillFlopsPerToken
      << ",\"decode_fraction_of_bandwidth\":" << decodeFractionOfBandwidth
      << ",\"prefill_fraction_of_fma_peak\":";
  figure(fmaGFlops, prefillFractionOfFmaPeak) << ",\"prefill_fraction_of_int8_dot_peak\":";
  figure(int8DotGOps, prefillFractionOfInt8Peak) << "}\n";
  return out.str();
}

} // namespace quill
