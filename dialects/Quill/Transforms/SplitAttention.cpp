// quill-split-attention: attention over a long cache -> per-chunk partials
// and a merge in chunk order (flash-decoding).
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/Transforms/Passes.h"

namespace mlir::quill {
#define GEN_PASS_DEF_SPLITATTENTION
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

struct SplitAttentionPass : mlir::quill::impl::SplitAttentionBase<SplitAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    if (chunk <= 0)
      return;
    SmallVector<AttentionOp> candidates;
    getOperation().walk([&](AttentionOp op) { candidates.push_back(op); });
    for (AttentionOp op : candidates) {
      int64_t context = op.getKeys().getType().getDimSize(0);
      // One query vector (decode) over at least 4 chunks; short caches gain
      // nothing from the extra pass.
      if (op.isTiled() || op.getQuery().getType().getRank() != 1 || context < 4 * chunk)
        continue;
      OpBuilder b(op);
      int64_t chunks = (context + chunk - 1) / chunk;
      int64_t rowWidth = (op.getNumHeads() / op.getNumKvHeads()) * (op.getHeadDim() + 2);
      auto partialType =
          RankedTensorType::get({int64_t(op.getNumKvHeads()) * chunks, rowWidth}, b.getF32Type());
      Value partials = AttentionPartialOp::create(
          b, op.getLoc(), partialType, op.getQuery(), op.getKeys(), op.getValues(), op.getPos(),
          op.getNumHeadsAttr(), op.getNumKvHeadsAttr(), b.getI64IntegerAttr(chunk), ValueRange{},
          op.getWindowAttr());
      Value merged = AttentionMergeOp::create(b, op.getLoc(), op.getType(), partials,
                                              op.getNumHeadsAttr(), op.getNumKvHeadsAttr(),
                                              /*tile=*/ValueRange{});
      op.replaceAllUsesWith(merged);
      op.erase();
    }
  }
};

} // namespace
