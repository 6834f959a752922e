// quill-cuda-split-units: marks the ops whose units of work the GPU needs
// finer than the CPU's (quill-outline-kernels reads the marks).
#include "compiler/Target/CUDA/Passes.h"
#include "dialects/Quill/IR/QuillMarkers.h"

namespace mlir::quill {
#define GEN_PASS_DEF_CUDASPLITUNITS
#include "compiler/Target/CUDA/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

/// The GPU's split of `op`, or Default where the CPU's units serve.
UnitSplit gpuSplit(Operation *op) {
  // A prefill's token rows; a vector's elements (merged attention, RMSNorm,
  // the decode embedding). One GPU thread for all of them is slow.
  if (auto rope = dyn_cast<RoPEOp>(op))
    return !rope.getRows() && rope.getType().getRank() == 2 ? UnitSplit::Rows : UnitSplit::Default;
  if (auto write = dyn_cast<KVWriteOp>(op))
    return write.getRow().getType().getRank() == 2 ? UnitSplit::Rows : UnitSplit::Default;
  // A grouped (per-head) norm runs whole: its tiles would cut heads.
  if (auto norm = dyn_cast<RMSNormOp>(op); norm && norm.getGroup())
    return UnitSplit::Default;
  if (isa<EmbeddingsOp, AttentionMergeOp, RMSNormOp, EmbeddingOp>(op))
    return UnitSplit::Rows;
  // Attention over T query rows: (query row, kv head) pairs, since kv heads
  // alone are a handful of threads.
  if (auto attention = dyn_cast<AttentionOp>(op))
    return attention.getQuery().getType().getRank() == 2 ? UnitSplit::QueryRows
                                                         : UnitSplit::Default;
  return UnitSplit::Default;
}

struct CudaSplitUnitsPass : mlir::quill::impl::CudaSplitUnitsBase<CudaSplitUnitsPass> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (UnitSplit split = gpuSplit(op); split != UnitSplit::Default)
        setUnitSplit(op, split);
    });
  }
};

} // namespace
