// The CUDA target's compile path, which needs no GPU: every kernel of the
// stories260K and 110m steps gets a PTX entry, with no libdevice call left.
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace quill::test {
namespace {

/// Names after `prefix` (up to a non-identifier character) in `text`.
std::set<std::string> namesAfter(const std::string &text, const std::string &prefix) {
  std::set<std::string> names;
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    size_t start = at + prefix.size(), end = start;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
      ++end;
    names.insert(text.substr(start, end - start));
  }
  return names;
}

void expectPtxForEveryKernel(const std::string &model, const std::string &name) {
  std::string compile = quote(tool("quill-compile")) + " " + quote(model) + " --target=cuda";
  CommandResult kernels = run(compile + " --emit=kernels");
  ASSERT_EQ(kernels.exitCode, 0) << kernels.err;
  CommandResult ptx = run(compile + " --emit=ptx");
  ASSERT_EQ(ptx.exitCode, 0) << ptx.err;
  // Kernel functions are the ones the schedules dispatch.
  std::set<std::string> dispatched = namesAfter(kernels.out, "quill.dispatch @");
  std::set<std::string> entries = namesAfter(ptx.out, ".visible .entry ");
  EXPECT_FALSE(dispatched.empty());
  EXPECT_EQ(entries, dispatched) << name;
  EXPECT_NE(ptx.out.find(".target sm_90"), std::string::npos);
  EXPECT_EQ(ptx.out.find(".extern"), std::string::npos) << name << ": a call outside the PTX";
  ::testing::Test::RecordProperty(name + "_kernels", std::to_string(entries.size()));
}

TEST(CudaTarget, PtxForEveryKernelOfStories260K) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  expectPtxForEveryKernel(model, "stories260K");
}

TEST(CudaTarget, PtxForEveryKernelOf110m) {
  std::string model = tempDir() + "/110m.bin";
  CommandResult synth = run(quote(tool("quill-synth")) + " --shape 110m -o " + quote(model) +
                            " --tokenizer-out " + quote(tempDir() + "/110m-tok.bin"));
  ASSERT_EQ(synth.exitCode, 0) << synth.err;
  expectPtxForEveryKernel(model, "110m");
}

TEST(CudaTarget, QuillRunDeviceCudaSaysWhatIsMissingInOneLine) {
  // A GPU machine has the driver, but the runtime's CUDA path is not written
  // yet: either way, one line and a nonzero exit, never a crash.
  ModelConfig c;
  c.dim = 32, c.hiddenDim = 64, c.nLayers = 1, c.nHeads = 2, c.nKvHeads = 2;
  c.vocabSize = 300, c.seqLen = 16;
  std::string artifact = compileArtifact(synthesizeModel(c, "cuda-cli"), syntheticTokenizer(300),
                                         "cuda-cli");
  ASSERT_FALSE(artifact.empty());
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(artifact) + " --device cuda -n 4");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_EQ(r.err.rfind("quill-run: --device cuda: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

} // namespace
} // namespace quill::test
