// --perplexity and --kl-divergence: the text, the windows, the report.
#include "QualityMode.h"

#include "runtime/decode/Perplexity.h"
#include "runtime/support/Json.h"
#include "runtime/support/ReadFile.h"

#include <cstdio>
#include <string>

namespace quill {

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "quill-run: %s\n", message.c_str());
  return 1;
}

/// The window and stride: the flags, or the context (capped to the text)
/// and half of it; errors name the flag.
ErrorOr<std::vector<EvalWindow>> windowsFor(const RunOptions &options, int32_t tokens,
                                            int32_t context, int32_t &window, int32_t &stride) {
  window = options.pplContext > 0 ? options.pplContext : std::min(context, tokens);
  if (window > context)
    return Status::error("invalid --ppl-context " + std::to_string(window) +
                         ": more than the artifact's context of " + std::to_string(context));
  stride = options.pplStride > 0 ? options.pplStride : std::max(1, window / 2);
  if (stride > window)
    return Status::error("invalid --ppl-stride " + std::to_string(stride) +
                         ": more than the window of " + std::to_string(window));
  return evalWindows(tokens, window, stride);
}

std::string reportJson(const QualityReport &r, int32_t window, int32_t stride) {
  std::string json = "{\"tokens\":" + std::to_string(r.scored.size()) +
                     ",\"window\":" + std::to_string(window) +
                     ",\"stride\":" + std::to_string(stride) +
                     ",\"perplexity\":" + jsonNumber(r.perplexity.value) +
                     ",\"perplexity_stderr\":" + jsonNumber(r.perplexity.standardError);
  if (r.hasBase)
    json += ",\"base_perplexity\":" + jsonNumber(r.basePerplexity.value) +
            ",\"base_perplexity_stderr\":" + jsonNumber(r.basePerplexity.standardError) +
            ",\"kl_mean\":" + jsonNumber(r.klMean) + ",\"kl_p99\":" + jsonNumber(r.klP99) +
            ",\"top1_agreement\":" + jsonNumber(r.top1Agreement);
  return json + "}\n";
}

std::string reportText(const QualityReport &r, int32_t window, int32_t stride) {
  char line[256];
  std::string text;
  std::snprintf(line, sizeof line,
                "perplexity: %.4f +/- %.4f over %zu tokens (window %d, stride %d)\n",
                r.perplexity.value, r.perplexity.standardError, r.scored.size(), window, stride);
  text += line;
  if (r.hasBase) {
    std::snprintf(line, sizeof line, "base perplexity: %.4f +/- %.4f\n", r.basePerplexity.value,
                  r.basePerplexity.standardError);
    text += line;
    std::snprintf(line, sizeof line, "KL(base || this): mean %.6g, 99th percentile %.6g\n",
                  r.klMean, r.klP99);
    text += line;
    std::snprintf(line, sizeof line, "top-1 agreement: %.4f\n", r.top1Agreement);
    text += line;
  }
  return text;
}

} // namespace

int runQuality(const RunOptions &options, const Artifact &artifact, const Tokenizer &tokenizer,
               Device &device, const DeviceFactory &makeDevice) {
  auto text = readSmallFile(options.perplexityFile, kMaxEvalTextBytes, "perplexity text");
  if (!text)
    return fail(text.message());
  if (text->empty())
    return fail(options.perplexityFile + ": the perplexity text is empty");
  const ModelConfig &config = artifact.config();
  std::vector<int32_t> tokens = tokenizer.encode(*text, config.addBos, /*addEos=*/false);
  int32_t window = 0, stride = 0;
  auto windows =
      windowsFor(options, static_cast<int32_t>(tokens.size()), config.seqLen, window, stride);
  if (!windows)
    return fail(options.perplexityFile + ": " + windows.message());

  // The base: its own artifact and device, the same tokens.
  std::unique_ptr<Artifact> baseArtifact;
  std::unique_ptr<Device> baseDevice;
  std::unique_ptr<DeviceLogits> base;
  if (!options.klBase.empty()) {
    auto opened = Artifact::open(options.klBase, options.verifyWeights, options.weightPages);
    if (!opened)
      return fail(opened.message());
    baseArtifact = std::make_unique<Artifact>(opened.take());
    const ModelConfig &baseConfig = baseArtifact->config();
    if (baseConfig.vocabSize != config.vocabSize)
      return fail("--kl-divergence " + options.klBase + ": its vocabulary has " +
                  std::to_string(baseConfig.vocabSize) + " tokens, this artifact's " +
                  std::to_string(config.vocabSize) + ": the same tokenizer is needed");
    auto baseTokenizer =
        Tokenizer::fromBytes(baseArtifact->tokenizerData(), baseArtifact->tokenizerSize(),
                             baseConfig.vocabSize, options.klBase + " (tokenizer)");
    if (!baseTokenizer)
      return fail(baseTokenizer.message());
    if (baseTokenizer->encode(*text, config.addBos, false) != tokens)
      return fail("--kl-divergence " + options.klBase +
                  ": its tokenizer splits the text differently: the same tokenizer is needed");
    if (window > baseConfig.seqLen)
      return fail("--kl-divergence " + options.klBase + ": its context of " +
                  std::to_string(baseConfig.seqLen) + " is shorter than the window of " +
                  std::to_string(window));
    auto made = makeDevice(*baseArtifact);
    if (!made)
      return fail(made.message());
    baseDevice = made.take();
    base = std::make_unique<DeviceLogits>(*baseDevice, baseConfig.vocabSize);
  }

  DeviceLogits model(device, config.vocabSize);
  auto report = evaluateQuality(tokens, *windows, model, base.get());
  if (!report)
    return fail(report.message());
  std::fputs(options.json ? reportJson(*report, window, stride).c_str()
                          : reportText(*report, window, stride).c_str(),
             stdout);
  return 0;
}

} // namespace quill
