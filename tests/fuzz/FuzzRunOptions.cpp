// libFuzzer target: quill-run's flags (parseRunOptions), and the sampler
// chain built from the sampling flags it accepts. The input is argv after
// the program name, NUL-separated. Whatever the parser accepts (other than
// --help, which prints the usage and ignores the other flags) must pass
// validate() and, for a 512-token vocabulary, either be refused by
// validateForVocabulary or build a chain whose every pick is in the
// vocabulary (or -1, nothing left to pick).
#include "RunOptions.h"

#include "runtime/sampling/Sampler.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

constexpr int32_t kVocab = 512;

[[noreturn]] void fail() { __builtin_trap(); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> args{"quill-run"};
  std::string arg;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(std::move(arg));
      arg.clear();
    } else {
      arg += char(data[i]);
    }
  }
  if (!arg.empty())
    args.push_back(std::move(arg));
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  auto options = quill::parseRunOptions(int(args.size()), argv.data());
  if (!options || options->help)
    return 0;
  if (!quill::validate(options->sampling))
    fail();
  (void)quill::benchLengths(*options, 256);
  if (!quill::validateForVocabulary(options->sampling, kVocab))
    return 0;
  quill::SamplerChain chain = quill::SamplerChain::fromParams(options->sampling, nullptr);
  chain.reserve(kVocab);
  std::vector<float> logits(kVocab);
  for (int step = 0; step < 4; ++step) {
    // A different, input-dependent distribution each step.
    for (int32_t i = 0; i < kVocab; ++i)
      logits[size_t(i)] = float(std::sin(0.37 * i * (step + 1) + double(size))) * 8.0f;
    int32_t id = chain.sample(logits.data(), kVocab);
    if (id < -1 || id >= kVocab)
      fail();
  }
  (void)chain.describe();
  return 0;
}
