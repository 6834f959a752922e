// quill-copies-to-linalg: memref.copy -> linalg.copy, so that copies lower to
// loops instead of calls into MLIR's C runner library.
#include "dialects/Quill/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::quill {
#define GEN_PASS_DEF_COPIESTOLINALG
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;

namespace {
struct CopiesToLinalgPass : mlir::quill::impl::CopiesToLinalgBase<CopiesToLinalgPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};
} // namespace
