// quill-run: generate text from a compiled Quill artifact.
#include "RunOptions.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/bench/ModelBench.h"
#include "runtime/decode/Generator.h"
#include "runtime/device/CpuDevice.h"
#include "runtime/support/Json.h"

#include <tbb/info.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "quill-run: %s\n", message.c_str());
  return 1;
}

std::string jsonIds(const std::vector<int32_t> &ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

double perSecond(double count, double seconds) { return seconds > 0 ? count / seconds : 0.0; }

/// A log-probability as a JSON number; JSON has no -inf, so an impossible
/// token (which the sampler never picks) would read null.
std::string jsonLogprob(float value) {
  if (!std::isfinite(value))
    return "null";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.7g", static_cast<double>(value));
  return buffer;
}

/// [{"token":ID,"logprob":X,"top":[{"token":ID,"logprob":X},...]},...]
std::string jsonLogprobs(const std::vector<quill::StepLogprobs> &steps) {
  std::string out = "[";
  for (size_t i = 0; i < steps.size(); ++i) {
    const quill::StepLogprobs &step = steps[i];
    out += (i ? ",{\"token\":" : "{\"token\":") + std::to_string(step.token) +
           ",\"logprob\":" + jsonLogprob(step.logprob) + ",\"top\":[";
    for (size_t k = 0; k < step.top.size(); ++k)
      out += (k ? ",{\"token\":" : "{\"token\":") + std::to_string(step.top[k].token) +
             ",\"logprob\":" + jsonLogprob(step.top[k].logprob) + "}";
    out += "]}";
  }
  return out + "]";
}

} // namespace

int main(int argc, char **argv) {
  using namespace quill;
  auto parsed = parseRunOptions(argc, argv);
  if (!parsed)
    return fail(parsed.message());
  RunOptions options = parsed.take();
  if (options.help) {
    std::fputs(runUsage(), stdout);
    return 0;
  }
  if (!options.seedGiven)
    options.sampling.seed = static_cast<uint64_t>(
        std::chrono::system_clock::now().time_since_epoch().count());

  auto artifact = Artifact::open(options.artifactPath, options.verifyWeights);
  if (!artifact)
    return fail(artifact.message());
  const ModelConfig &config = artifact->config();
  auto tokenizer = Tokenizer::fromBytes(artifact->tokenizerData(), artifact->tokenizerSize(),
                                        config.vocabSize, options.artifactPath + " (tokenizer)");
  if (!tokenizer)
    return fail(tokenizer.message());
  if (Status s = validateForVocabulary(options.sampling, config.vocabSize); !s)
    return fail(s.message());

  int threads = options.threads > 0 ? options.threads : tbb::info::default_concurrency();
  tbb::task_arena arena(threads);
  auto device = CpuDevice::create(*artifact, arena);
  if (!device)
    return fail(device.message());
  if (options.bench) {
    // Short contexts shrink the benchmark rather than fail it.
    int32_t prompt = std::min(options.benchPrompt, std::max(1, config.seqLen / 2));
    int32_t decode = std::min(options.benchDecode, config.seqLen - prompt);
    auto report = benchmarkModel(**device, config, arena, prompt, decode);
    if (!report)
      return fail(report.message());
    std::fputs(options.json ? report->toJson().c_str() : report->toText().c_str(), stdout);
    return 0;
  }
  SamplerChain sampler = SamplerChain::fromParams(options.sampling, &arena);
  sampler.reserve(config.vocabSize);
  if (options.verbose) {
    std::fprintf(stderr, "model: dim %d, hidden %d, %d layers, %d heads, %d kv heads, vocab %d, "
                         "context %d\n",
                 config.dim, config.hiddenDim, config.nLayers, config.nHeads, config.nKvHeads,
                 config.vocabSize, config.seqLen);
    std::fprintf(stderr, "%s\n", (*device)->describe().c_str());
    std::fprintf(stderr, "kv cache: %llu bytes (%d positions)\n",
                 static_cast<unsigned long long>((*device)->kvCache().bytes()),
                 (*device)->kvCache().capacity());
    std::fprintf(stderr, "sampler: %s, seed %llu\n", sampler.describe().c_str(),
                 static_cast<unsigned long long>(options.sampling.seed));
  }

  Generator generator(**device, *tokenizer, sampler, config);
  GenerationRequest request{options.prompt, options.maxNewTokens, options.stopStrings};
  auto stream = [&](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
  auto result = options.json ? generator.generate(request)
                             : generator.generate(request, stream);
  if (!result)
    return fail(result.message());

  double prefillRate = perSecond(result->promptTokens.size(), result->prefillSeconds);
  double decodeRate = perSecond(result->tokens.size(), result->decodeSeconds);
  if (options.json) {
    std::ostringstream out;
    out.precision(6);
    out << "{\"prompt_tokens\":" << jsonIds(result->promptTokens)
        << ",\"tokens\":" << jsonIds(result->tokens) << ",\"text\":" << jsonQuote(result->text)
        << ",\"stop_reason\":\"" << stopReasonName(result->stop) << "\"";
    if (options.sampling.logprobs)
      out << ",\"logprobs\":" << jsonLogprobs(result->logprobs);
    out
        << ",\"seed\":" << options.sampling.seed
        << ",\"timings\":{\"prefill_tokens_per_s\":" << prefillRate
        << ",\"decode_tokens_per_s\":" << decodeRate
        << ",\"prefill_ms\":" << result->prefillSeconds * 1e3
        << ",\"decode_ms\":" << result->decodeSeconds * 1e3 << "}}\n";
    std::fputs(out.str().c_str(), stdout);
  } else {
    std::fputc('\n', stdout);
    std::fflush(stdout);
    std::fprintf(stderr, "[stop: %s after %zu tokens; prefill %.1f tok/s, decode %.1f tok/s]\n",
                 stopReasonName(result->stop), result->tokens.size(), prefillRate, decodeRate);
  }
  return 0;
}
