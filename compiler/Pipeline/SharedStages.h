// The stages every target shares, built from typed pass options: the quill
// stage (import checks, fusions, split attention), outlining into kernels,
// the target-neutral lowering to linalg, and bufferization down to loops.
// A target composes its stages from these and its own passes.
#pragma once

#include "compiler/Pipeline/PipelineOptions.h"

#include "mlir/Pass/PassManager.h"

namespace quill {

/// quill-verify-step, the fusions not disabled (gate/up before QKV, which
/// would otherwise take the gate and up projections as siblings),
/// quill-split-attention with `attentionChunk`, then cse.
void addQuillStage(mlir::OpPassManager &pm, const PipelineOptions &options, int64_t attentionChunk);

/// quill-outline-kernels.
void addOutlineKernels(mlir::OpPassManager &pm, const PipelineOptions &options);

/// quill-lower-to-linalg: every quill op left, through generic linalg.
void addNeutralLowering(mlir::OpPassManager &pm);

/// canonicalize, cse.
void addCleanup(mlir::OpPassManager &pm);

/// The largest temporary a kernel may keep on the stack (promote-buffers-
/// to-stack's limit): a larger one would be a heap allocation per call,
/// which the static-memory contract refuses.
constexpr int64_t kMaxKernelTemporaryBytes = 4 << 20;

/// Bufferization to memrefs, temporaries on the stack (a step allocates no
/// heap memory), then linalg to loops.
void addLoopsStage(mlir::OpPassManager &pm);

/// Vector ops unrolled to scalars and LLVM vectors, affine and scf to
/// branches, strided memrefs expanded: what both targets' LLVM lowerings
/// start with (`reassociateFPReductions`: vector reductions may reorder).
void addVectorAndLoopLowering(mlir::OpPassManager &pm, bool reassociateFPReductions);

} // namespace quill
