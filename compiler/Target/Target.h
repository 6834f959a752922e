// A code generation target: all that the compile driver and the pipeline
// builder know of one. A target names its stages (what --emit can stop
// at), builds the passes of each MLIR stage from the shared stages
// (Pipeline/SharedStages.h) and its own passes, and turns the lowered
// module into the artifact's kernel payload. Targets are listed in
// Registry.cpp; adding one is a folder under compiler/Target/ and a line
// there.
#pragma once

#include "compiler/Pipeline/PipelineOptions.h"
#include "runtime/artifact/ArtifactFormat.h"
#include "runtime/bench/ReportHtml.h"
#include "runtime/support/Error.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace quill {

/// The kernels as the artifact holds them, and the target's description
/// (the artifact's Target section: what the runtime checks before running).
struct TargetPayload {
  SectionKind kind;
  std::vector<uint8_t> bytes;
  std::string description;
};

/// What the kernel library states of its kernels, as the runtime reads it
/// (runtime/artifact/KernelContract.h): each dispatched kernel's contract
/// words, and the model limits' words.
struct KernelContractTable {
  std::map<std::string, std::vector<int64_t>> kernels;
  std::vector<int64_t> modelLimits;
};

/// Receives text produced after the MLIR stages (LLVM IR, assembly) for
/// --dump-ir-after-all: (text, what, file extension).
using TextDump = std::function<void(llvm::StringRef, llvm::StringRef, llvm::StringRef)>;

class Target {
public:
  virtual ~Target();

  /// The name --target and quill-opt's target= take.
  virtual llvm::StringRef name() const = 0;
  /// One line for --help texts.
  virtual llvm::StringRef summary() const = 0;

  /// Every stage --emit can stop at, in order; the first numMlirStages()
  /// are pass pipelines over the module (addStagePasses).
  virtual const std::vector<std::string> &stages() const = 0;
  virtual size_t numMlirStages() const = 0;
  /// Whether --emit=`stage` prints the module as MLIR (else finish prints).
  virtual bool printsModuleAt(llvm::StringRef stage) const;

  /// The flash-decoding chunk when --attention-chunk is not given.
  virtual int64_t defaultAttentionChunk(const PipelineOptions &options) const = 0;
  /// Whether the artifact may hold a batch step (many sequences at once).
  virtual bool supportsBatchStep() const = 0;
  /// Options this target cannot honour, as one line; ok otherwise.
  virtual Status checkOptions(const PipelineOptions &options) const = 0;

  /// Adds the passes of MLIR stage `stage` (one of stages()).
  virtual mlir::LogicalResult addStagePasses(mlir::OpPassManager &pm, llvm::StringRef stage,
                                             const PipelineOptions &options) const = 0;

  /// After the MLIR stages, before finish: adds `contracts` to the kernels
  /// as data their library exports, under the names the runtime looks up
  /// (kKernelContractPrefix + kernel, kModelLimitsSymbol).
  virtual Status addKernelContracts(mlir::ModuleOp module,
                                    const KernelContractTable &contracts) const = 0;

  /// After the MLIR stages: with `emit` (a stage printsModuleAt rejects),
  /// prints that stage to `out` and returns no payload; else returns the
  /// kernels for the artifact. May remove what it consumes from `module`,
  /// leaving the schedules.
  virtual ErrorOr<std::optional<TargetPayload>>
  finish(mlir::ModuleOp module, const PipelineOptions &options, std::optional<llvm::StringRef> emit,
         llvm::raw_ostream &out, const TextDump &dump) const = 0;

  /// The ceilings the report's roofline is drawn under for these options
  /// (quill-compile --report); none known by default.
  virtual RooflineCeilings rooflineCeilings(const PipelineOptions &options) const;

  /// The index of `stage` in stages(), if it is one.
  std::optional<size_t> stageIndex(llvm::StringRef stage) const;
  /// The stage names separated by '|', for help texts and errors.
  std::string stageList() const;
};

/// The registered targets, in the order --help lists them.
const std::vector<const Target *> &allTargets();
/// The target named `name`, or null.
const Target *lookupTarget(llvm::StringRef name);
/// "cpu|cuda", for help texts and errors.
std::string targetNames();

} // namespace quill
