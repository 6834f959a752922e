// Helpers for end-to-end tests: paths, subprocesses, compiled fixtures.
#pragma once

#include "runtime/artifact/ModelConfig.h"

#include <map>
#include <string>
#include <vector>

namespace quill::test {

/// ../shared/models/... path, or "" when ../shared is absent.
std::string sharedModel(const std::string &relative);
/// build/bin/NAME, or $QUILL_BIN_DIR/NAME when that is set. quill-compile
/// and quill-opt come from QUILL_COMPILER_BIN_DIR, a release build's, in a
/// sanitizer build.
std::string tool(const std::string &name);
/// A fresh directory under the system temp dir, removed at exit.
std::string tempDir();

struct CommandResult {
  int exitCode = -1;
  std::string out, err;
};
/// Runs a shell command line, capturing stdout and stderr.
CommandResult run(const std::string &commandLine);
/// Single-quotes `s` for the shell.
std::string quote(const std::string &s);

/// Compiles `model` with `tokenizer` into DIR/NAME.qm with quill-compile;
/// fails the current test (and returns "") when that fails.
std::string compileArtifact(const std::string &model, const std::string &tokenizer,
                            const std::string &name, const std::string &extraFlags = "");
/// Writes a synthetic llama2.c model of `config` and returns its path
/// (`queryKeyGain`: see fillSyntheticTensor).
std::string synthesizeModel(const ModelConfig &config, const std::string &name,
                            int formatVersion = 0, uint64_t seed = 7, float queryKeyGain = 1.0f);
/// A llama2.c tokenizer.bin of `vocabSize` tokens (byte tokens and letters)
/// for synthetic models; written once per size.
std::string syntheticTokenizer(int vocabSize);

std::string readFile(const std::string &path);

/// Whether /proc/cpuinfo lists `flag` (e.g. "avx_vnni") for this CPU.
bool cpuHasFlag(const std::string &flag);

/// A Llama shape for synthetic models (the other fields their defaults).
ModelConfig llamaShape(int32_t dim, int32_t hidden, int32_t layers, int32_t heads, int32_t kvHeads,
                       int32_t vocab, int32_t seqLen);
/// synthesizeModel(config, name, 0, seed) compiled with a syntheticTokenizer
/// of its vocabulary (and `extraFlags`) into DIR/NAME.qm; "" on failure.
std::string compileSynthetic(const ModelConfig &config, const std::string &name,
                             const std::string &extraFlags = "", uint64_t seed = 7);

/// A model whose heads are one Q8_0 block wide (32: what --kv-type q8_0
/// needs; stories260K's are 8), compiled with `extraFlags` into
/// DIR/NAME.qm: a synthetic Llama of 2 layers, 4 heads over 2 kv heads and
/// 512 positions, with its synthetic tokenizer; "" on failure.
std::string wideHeadArtifact(const std::string &name, const std::string &extraFlags);

/// A row of quill-run --profile's report.
struct ProfileRow {
  long long launches = 0;
  double gbPerSecond = 0;
  double gflopsPerSecond = -1; ///< -1: "n/a", the artifact has no kernel costs.
};

/// --profile's rows by kernel, from stderr ("  12.34%  1.234 ms  8 launches
/// 5.6 GB/s  1.2 GFLOP/s  step  name" under "kernel time ("); a kernel of
/// several steps sums their launches.
std::map<std::string, ProfileRow> parseProfile(const std::string &err);

/// The tool failed cleanly: exit code 1 and one line on stderr, "TOOL: ..."
/// (quill-run, quill-compile), that contains `phrase`.
void expectCleanFailure(const CommandResult &r, const std::string &phrase);

} // namespace quill::test

#include "runtime/artifact/Artifact.h"
#include "runtime/device/CpuDevice.h"

#include <memory>

namespace quill::test {

/// An artifact loaded onto the CPU device with its own arena.
struct LoadedArtifact {
  std::unique_ptr<Artifact> artifact;
  std::unique_ptr<tbb::task_arena> arena;
  std::unique_ptr<CpuDevice> device;
};
/// Loads `path` with `threads` worker threads; fails the test on error.
LoadedArtifact load(const std::string &path, int threads);

} // namespace quill::test
