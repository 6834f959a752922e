// quill-fuse-residual: add(x, linear(...)) -> linear(...) residual x.
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/Transforms/Passes.h"

namespace mlir::quill {
#define GEN_PASS_DEF_FUSERESIDUAL
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

/// Whether `value` is available at `op`: a block argument of its block, or
/// defined earlier in it.
bool availableAt(Value value, Operation *op) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner() == op->getBlock();
  Operation *def = value.getDefiningOp();
  return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
}

struct FuseResidualPass : mlir::quill::impl::FuseResidualBase<FuseResidualPass> {
  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp add) { adds.push_back(add); });
    for (AddOp add : adds) {
      for (auto [mine, other] :
           {std::pair(add.getRhs(), add.getLhs()), std::pair(add.getLhs(), add.getRhs())}) {
        auto linear = mine.getDefiningOp<LinearOp>();
        if (!linear || linear.getResidual() || linear.isTiled() || !linear->hasOneUse() ||
            mine == other || !availableAt(other, linear))
          continue;
        linear.getResidualMutable().assign(other);
        add.replaceAllUsesWith(linear.getResult());
        add.erase();
        break;
      }
    }
  }
};

} // namespace
