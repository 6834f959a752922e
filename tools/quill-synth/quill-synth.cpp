// quill-synth: writes a deterministic random-weight llama2.c checkpoint, or
// the same values as an F32 GGUF.
#include "compiler/Import/SyntheticModel.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

using namespace quill;

namespace {

const char *const kUsage =
    "usage: quill-synth (--shape 15m|110m|1b|tiny | --dim N --hidden N "
    "--layers N --heads N --kv-heads N --vocab N --seq-len N) -o FILE\n"
    "                   [--format legacy|v1|gguf] [--vocab-from TOKENIZER.BIN] [--seed N] "
    "[--separate-classifier]\n"
    "                   [--tokenizer-out FILE] [--period N] [--query-key-gain G]\n"
    "  With --shape, the custom flags override single fields of that shape.\n"
    "  --tokenizer-out also writes a matching byte-fallback tokenizer.bin.\n"
    "  --format gguf writes an F32 GGUF (llama) of the same values, its vocabulary\n"
    "  that of --vocab-from (a llama2.c tokenizer.bin), else the synthetic one.\n"
    "  --period N repeats each tensor's values every N elements: the same value\n"
    "  distribution in a file (and artifact) that compresses to almost nothing,\n"
    "  to carry large shapes to a benchmark machine.\n"
    "  --query-key-gain G (0.25 to 16) widens wq and wk G times: attention\n"
    "  scores G^2 larger, so a few positions dominate, as in trained models.\n";

/// Prints one line on stderr and returns the exit code for bad usage.
int fail(const std::string &message) {
  std::fprintf(stderr, "quill-synth: %s\n", message.c_str());
  return 1;
}

/// Parses a whole decimal string into [lo, hi]; nullopt otherwise.
std::optional<int64_t> parseInt(const char *text, int64_t lo, int64_t hi) {
  if (!*text || *text == '-' || *text == '+' || *text == ' ')
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || v > uint64_t(hi) || int64_t(v) < lo)
    return std::nullopt;
  return int64_t(v);
}

} // namespace

int main(int argc, char **argv) {
  std::string shapeName, output, tokenizerOut, vocab, format = "legacy";
  uint64_t seed = 0;
  int64_t period = 0;
  float queryKeyGain = 1.0f;
  bool separateClassifier = false;
  // Custom fields, in ModelConfig order; unset ones come from --shape.
  const char *const kFieldFlags[7] = {"--dim",      "--hidden", "--layers", "--heads",
                                      "--kv-heads", "--vocab",  "--seq-len"};
  std::optional<int32_t> fields[7];

  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (flag == "--separate-classifier") {
      separateClassifier = true;
      continue;
    }
    if (i + 1 >= argc)
      return fail("missing value after " + flag);
    const char *value = argv[++i];
    if (flag == "--shape") {
      shapeName = value;
    } else if (flag == "-o" || flag == "--output") {
      output = value;
    } else if (flag == "--tokenizer-out") {
      tokenizerOut = value;
    } else if (flag == "--format") {
      format = value;
      if (format != "legacy" && format != "v1" && format != "gguf")
        return fail("--format must be legacy, v1 or gguf, got '" + format + "'");
    } else if (flag == "--vocab-from") {
      vocab = value;
    } else if (flag == "--seed") {
      std::optional<int64_t> v = parseInt(value, 0, INT64_MAX);
      if (!v)
        return fail("--seed expects a non-negative integer, got '" + std::string(value) + "'");
      seed = uint64_t(*v);
    } else if (flag == "--period") {
      std::optional<int64_t> v = parseInt(value, 1, INT64_MAX);
      if (!v)
        return fail("--period expects a positive integer, got '" + std::string(value) + "'");
      period = *v;
    } else if (flag == "--query-key-gain") {
      char *end = nullptr;
      double g = std::strtod(value, &end);
      if (!end || *end || !(g >= 0.25 && g <= 16))
        return fail("--query-key-gain expects a number from 0.25 to 16, got '" +
                    std::string(value) + "'");
      queryKeyGain = float(g);
    } else {
      int field = -1;
      for (int f = 0; f < 7; ++f)
        if (flag == kFieldFlags[f])
          field = f;
      if (field < 0)
        return fail("unknown flag '" + flag + "' (see --help)");
      std::optional<int64_t> v = parseInt(value, 1, INT32_MAX);
      if (!v)
        return fail(flag + " expects a positive integer, got '" + std::string(value) + "'");
      fields[field] = int32_t(*v);
    }
  }
  if (output.empty())
    return fail("missing -o FILE (see --help)");

  ModelConfig config;
  if (!shapeName.empty()) {
    ErrorOr<ModelConfig> shape = syntheticShape(shapeName);
    if (!shape)
      return fail(shape.message());
    config = *shape;
  } else {
    for (int f = 0; f < 7; ++f)
      if (!fields[f])
        return fail(std::string("without --shape, ") + kFieldFlags[f] + " is required");
  }
  int32_t *targets[7] = {&config.dim,      &config.hiddenDim, &config.nLayers, &config.nHeads,
                         &config.nKvHeads, &config.vocabSize, &config.seqLen};
  for (int f = 0; f < 7; ++f)
    if (fields[f])
      *targets[f] = *fields[f];
  config.sharedClassifier = !separateClassifier;

  if (!tokenizerOut.empty())
    if (Status s = writeSyntheticTokenizer(tokenizerOut, config.vocabSize); !s)
      return fail(s.message());
  if (!vocab.empty() && format != "gguf")
    return fail("--vocab-from is for --format gguf (a llama2.c checkpoint has no vocabulary)");
  Status written =
      format == "gguf"
          ? writeSyntheticGguf(output, config, seed, vocab, period, queryKeyGain)
          : writeSyntheticModel(output, config, format == "v1" ? 1 : 0, seed, period, queryKeyGain);
  if (!written)
    return fail(written.message());
  std::printf("wrote %s: %s, dim %d hidden %d layers %d heads %d kv-heads %d "
              "vocab %d seq-len %d, %s classifier, seed %llu\n",
              output.c_str(), format.c_str(), config.dim, config.hiddenDim, config.nLayers,
              config.nHeads, config.nKvHeads, config.vocabSize, config.seqLen,
              config.sharedClassifier ? "shared" : "separate",
              static_cast<unsigned long long>(seed));
  return 0;
}
