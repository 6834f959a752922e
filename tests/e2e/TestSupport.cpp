// Paths, subprocesses and fixtures for the end-to-end tests.
#include "TestSupport.h"

#include "compiler/Import/SyntheticModel.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace quill::test {

std::string sharedModel(const std::string &relative) {
  fs::path path = fs::path(QUILL_SHARED_DIR) / "models" / relative;
  return fs::exists(path) ? path.string() : "";
}

std::string tool(const std::string &name) {
  // $QUILL_BIN_DIR: the tools elsewhere than the build tree (a copy carried
  // to a GPU machine, see scripts/gpu/).
  const char *dir = std::getenv("QUILL_BIN_DIR");
  // The MLIR tools: a sanitizer build has none and uses a release build's.
  if (name == "quill-compile" || name == "quill-opt")
    return std::string(dir && *dir ? dir : QUILL_COMPILER_BIN_DIR) + "/" + name;
  return std::string(dir && *dir ? dir : QUILL_BIN_DIR) + "/" + name;
}

namespace {
struct TempRoot {
  fs::path path;
  TempRoot() {
    std::string pattern = (fs::temp_directory_path() / "quill-e2e-XXXXXX").string();
    path = mkdtemp(pattern.data());
  }
  ~TempRoot() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};
} // namespace

std::string tempDir() {
  static TempRoot root;
  return root.path.string();
}

std::string quote(const std::string &s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult run(const std::string &commandLine) {
  static int counter = 0;
  std::string errPath =
      tempDir() + "/stderr-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  std::string full = commandLine + " 2>" + quote(errPath) + " </dev/null";
  CommandResult result;
  FILE *pipe = popen(full.c_str(), "r");
  if (!pipe)
    return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
    result.out.append(buffer, n);
  int status = pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.err = readFile(errPath);
  return result;
}

std::string compileArtifact(const std::string &model, const std::string &tokenizer,
                            const std::string &name, const std::string &extraFlags) {
  std::string out = tempDir() + "/" + name + ".qm";
  CommandResult r = run(quote(tool("quill-compile")) + " " + quote(model) + " --tokenizer " +
                        quote(tokenizer) + " -o " + quote(out) + " " + extraFlags);
  EXPECT_EQ(r.exitCode, 0) << "quill-compile failed: " << r.err;
  return r.exitCode == 0 ? out : "";
}

std::string synthesizeModel(const ModelConfig &config, const std::string &name, int formatVersion,
                            uint64_t seed, float queryKeyGain) {
  std::string path = tempDir() + "/" + name + ".bin";
  Status s = writeSyntheticModel(path, config, formatVersion, seed, /*period=*/0, queryKeyGain);
  EXPECT_TRUE(s.isOk()) << s.message();
  return path;
}

std::string syntheticTokenizer(int vocabSize) {
  std::string path = tempDir() + "/tokenizer-" + std::to_string(vocabSize) + ".bin";
  if (!fs::exists(path)) {
    Status s = writeSyntheticTokenizer(path, vocabSize);
    EXPECT_TRUE(s.isOk()) << s.message();
  }
  return path;
}

} // namespace quill::test

namespace quill::test {

ModelConfig llamaShape(int32_t dim, int32_t hidden, int32_t layers, int32_t heads, int32_t kvHeads,
                       int32_t vocab, int32_t seqLen) {
  ModelConfig c;
  c.dim = dim, c.hiddenDim = hidden, c.nLayers = layers, c.nHeads = heads, c.nKvHeads = kvHeads;
  c.vocabSize = vocab, c.seqLen = seqLen;
  return c;
}

std::string compileSynthetic(const ModelConfig &config, const std::string &name,
                             const std::string &extraFlags, uint64_t seed) {
  return compileArtifact(synthesizeModel(config, name, 0, seed),
                         syntheticTokenizer(config.vocabSize), name, extraFlags);
}

std::string wideHeadArtifact(const std::string &name, const std::string &extraFlags) {
  return compileSynthetic(llamaShape(128, 256, 2, 4, 2, 320, 512), name, extraFlags);
}

std::map<std::string, ProfileRow> parseProfile(const std::string &err) {
  std::map<std::string, ProfileRow> rows;
  size_t at = err.find("kernel time (");
  if (at == std::string::npos)
    return rows;
  std::istringstream lines(err.substr(at));
  std::string line;
  std::getline(lines, line); // The header.
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string share, ms, unit, launchesWord, gbUnit, gflops, gflopsUnit, step, name;
    ProfileRow row;
    if (!(words >> share >> ms >> unit >> row.launches >> launchesWord >> row.gbPerSecond >>
          gbUnit >> gflops >> gflopsUnit >> step >> name) ||
        launchesWord != "launches" || gbUnit != "GB/s" || gflopsUnit != "GFLOP/s")
      break;
    row.gflopsPerSecond = gflops == "n/a" ? -1 : std::stod(gflops);
    auto [it, fresh] = rows.try_emplace(name, row);
    if (!fresh)
      it->second.launches += row.launches;
  }
  return rows;
}

void expectCleanFailure(const CommandResult &r, const std::string &phrase) {
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_EQ(r.err.rfind("quill-", 0), 0u) << "stderr: " << r.err;
  EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected exactly one line: " << r.err;
}

LoadedArtifact load(const std::string &path, int threads) {
  LoadedArtifact loaded;
  auto artifact = Artifact::open(path);
  EXPECT_TRUE(artifact.isOk()) << artifact.message();
  if (!artifact)
    return loaded;
  loaded.artifact = std::make_unique<Artifact>(artifact.take());
  loaded.arena = std::make_unique<tbb::task_arena>(threads);
  auto device = CpuDevice::create(*loaded.artifact, *loaded.arena);
  EXPECT_TRUE(device.isOk()) << device.message();
  if (device)
    loaded.device = device.take();
  return loaded;
}

bool cpuHasFlag(const std::string &flag) {
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line))
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

} // namespace quill::test
