// quill-check-static-memory: no heap allocation may survive into kernels.
#include "dialects/Quill/Transforms/Passes.h"

namespace mlir::quill {
#define GEN_PASS_DEF_CHECKSTATICMEMORY
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;

namespace {
struct CheckStaticMemoryPass : mlir::quill::impl::CheckStaticMemoryBase<CheckStaticMemoryPass> {
  void runOnOperation() override {
    WalkResult result = getOperation().walk([](memref::AllocOp alloc) {
      auto function = alloc->getParentOfType<func::FuncOp>();
      alloc.emitError("quill contract: kernel @")
          << (function ? function.getName() : StringRef("?")) << " would allocate "
          << alloc.getType()
          << " on the heap at every call (temporaries must be static and "
             "promoted to the stack)";
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    // A stack buffer inside a loop is allocated again at every iteration.
    result = getOperation().walk([](memref::AllocaOp alloca) {
      if (isa<func::FuncOp>(alloca->getParentOp()))
        return WalkResult::advance();
      auto function = alloca->getParentOfType<func::FuncOp>();
      alloca.emitError("quill contract: kernel @")
          << (function ? function.getName() : StringRef("?")) << " allocates " << alloca.getType()
          << " on the stack inside a loop: it would grow at every iteration";
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
