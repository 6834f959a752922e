// quill-compile's library: model file -> quill step -> kernels -> artifact,
// with the ability to stop and print any stage.
#pragma once

#include "compiler/Pipeline/Pipeline.h"
#include "runtime/artifact/KVType.h"
#include "runtime/support/Error.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace quill {

struct CompileOptions {
  std::string modelPath;
  std::string tokenizerPath;
  std::string chatTemplatePath;    ///< Embedded instead of the model's own template.
  std::string outputPath;          ///< The artifact; unused when emitting.
  std::optional<std::string> emit; ///< Print this stage (of the target's, or "dot") and stop.
  std::string graphPath;           ///< The steps' dispatch graph (DOT) is written here too.
  std::string dumpDir;             ///< IR after every pass, numbered files.
  std::string reportDir;           ///< The HTML lowering report (index.html) goes here.
  std::string commandLine;         ///< How quill-compile was run, for the report.
  bool timing = false;             ///< Per-pass timing report on stderr.
  int64_t prefillTokens = 64;      ///< Tokens per prefill chunk; 0: no prefill step.
  int64_t batchRows = 64;          ///< Token rows per batch step; 0: no batch step.
  int64_t kvBlockSize = 16;        ///< Positions per block of the paged KV cache.
  KVType kvType = KVType::F32;     ///< The KV cache's element type (--kv-type).
  PipelineOptions pipeline;        ///< The target and its options.
};

/// The stage the dispatch graph is drawn at (--emit=dot, --graph): every
/// step's schedule and its outlined kernels, after fusion.
inline constexpr const char *kGraphStage = "kernels";

/// Compiles; printed stages go to `out`. The error names the input and
/// what is wrong.
Status compileModel(const CompileOptions &options, llvm::raw_ostream &out);

} // namespace quill
