// The one lowering pipeline shared by quill-compile and quill-opt, cut into
// named stages that --emit can stop at.
#pragma once

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <set>
#include <vector>
#include <string>

namespace quill {

/// Stages of compilation. Both targets share Quill .. Loops. The CPU then
/// goes to LLVMDialect (the last MLIR stage), LLVMIR and Asm (produced by
/// the CPU target); CUDA goes to Gpu (kernels in a gpu.module), NVVM and Ptx
/// (all in MLIR).
enum class Stage { Quill, Kernels, Linalg, Loops, LLVMDialect, LLVMIR, Asm, Gpu, NVVM, Ptx };

enum class Target { Cpu, Cuda };

/// "quill", "kernels", "linalg", "loops", "llvm-dialect", "llvm", "asm",
/// "gpu", "nvvm", "ptx".
std::optional<Stage> parseStage(llvm::StringRef name);
const char *stageName(Stage stage);
/// A target's stages in order.
const std::vector<Stage> &targetStages(Target target);
/// A target's stage names separated by '|', for help texts and errors.
std::string stageNames(Target target);

/// The fusion passes of the quill stage, by short name, in pipeline order:
/// "gate-up", "qkv", "residual", "rmsnorm", "rope-kv".
const std::vector<std::string> &fusionNames();

struct PipelineOptions {
  Target target = Target::Cpu;
  std::string gpuArch = "sm_90"; ///< CUDA: the SM version the PTX is for.
  int64_t matvecGrain = 16; ///< Output rows per parallel chunk of a matvec.
  std::set<std::string> disabledFusions; ///< Short names, see fusionNames().
  int64_t attentionChunk = 256; ///< Flash-decoding chunk of cached positions; 0: off.
  /// CPU only: compile the CUDA target's kernel transformations for the CPU
  /// (one unit of work per kernel call, math approximated as on the GPU),
  /// to test them where there is no GPU.
  bool emulateCudaKernels = false;
  /// CPU: matmuls prefetch the next block of weight rows (off for A/B).
  bool prefetchWeights = true;
  /// CUDA (and its emulation): a warp per output element of matrix-vector
  /// kernels, its lanes sharing the reduction (off: a thread per row).
  bool warpReductions = true;
};

/// The textual pass pipeline that runs the passes of `stage` alone (the step
/// from the previous stage to this one), e.g. for printing with --emit.
std::string stagePipeline(Stage stage, const PipelineOptions &options);

/// Adds the passes taking a freshly imported module up to `last` (an MLIR
/// stage of options.target) to `pm`.
mlir::LogicalResult addLoweringPasses(mlir::OpPassManager &pm, Stage last,
                                      const PipelineOptions &options);

} // namespace quill
