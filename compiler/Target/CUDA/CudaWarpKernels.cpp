// quill-cuda-warp-kernels: reductions a warp per unit of work, before the
// neutral lowering takes the rest. Matrix-vector products and RMS scales go
// through the neutral patterns with the warp KernelBuilder; flash-decoding's
// partial attention and a prefill's attention rows have warp forms of
// their own (LaneAttention.cpp).
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "compiler/Target/CUDA/LaneReduction.h"
#include "compiler/Target/CUDA/Passes.h"
#include "dialects/Quill/IR/QuillMarkers.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::quill {
#define GEN_PASS_DEF_CUDAWARPKERNELS
#include "compiler/Target/CUDA/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

/// Products and RMS scales whose reductions the warp's lanes share; rows
/// built privately, since every lane stores the unit's result.
class WarpKernelBuilder : public KernelBuilder {
public:
  explicit WarpKernelBuilder(LaneMode mode) : mode_(mode) {}

  Value matVecRows(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult firstRow,
                   OpFoldResult rows, Value init) const override {
    return laneMatVecRows(b, loc, mode_, weight, input, firstRow, rows, init);
  }
  Value matMulRows(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult firstRow,
                   OpFoldResult rows, Value liveRows, Value init) const override {
    return laneMatMulRows(b, loc, mode_, weight, input, firstRow, rows, liveRows, init);
  }
  Value rmsScales(OpBuilder &b, Location loc, Value input, float eps) const override {
    return laneRmsScales(b, loc, mode_, input, eps);
  }
  bool privateRows() const override { return true; }
  void noteLowered(Operation *op) const override { markWarp(op, mode_); }

  /// On the GPU, the kernel around `op` runs a warp per unit.
  static void markWarp(Operation *op, LaneMode mode) {
    if (mode == LaneMode::Gpu)
      markEnclosingWarpKernel(op, kWarpLanes);
  }

private:
  LaneMode mode_;
};

/// Units [first, last) of an op's tile, or all `units` when untiled.
std::pair<Value, Value> unitRange(OpBuilder &b, Location loc, ValueRange tile, int64_t units) {
  if (!tile.empty())
    return {tile[0], tile[1]};
  return {arith::ConstantIndexOp::create(b, loc, 0), arith::ConstantIndexOp::create(b, loc, units)};
}

/// A prefill's attention tiled by (query row, kv head): a warp per unit.
struct WarpAttentionRows : OpRewritePattern<AttentionOp> {
  WarpAttentionRows(MLIRContext *ctx, LaneMode mode) : OpRewritePattern(ctx), mode(mode) {}
  LaneMode mode;

  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &b) const override {
    // A sliding window takes the generic lowering.
    if (!op.getTileRows() || !op.isTiled() || op.getWindow())
      return failure();
    Location loc = op.getLoc();
    const int64_t rowWidth = op.getQuery().getType().getDimSize(1) / op.getNumKvHeads();
    Value first = op.getTile()[0], last = op.getTile()[1];
    Value units = arith::SubIOp::create(b, loc, last, first);
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{units, b.getIndexAttr(rowWidth)}, b.getF32Type());
    Value result = laneAttentionRows(b, loc, mode, op, first, last, init);
    WarpKernelBuilder::markWarp(op, mode);
    b.replaceOp(op, castTo(b, loc, result, op.getType()));
    return success();
  }
};

/// Flash-decoding's partial attention, a warp per (kv head, chunk), where
/// the chunk and head_dim are whole warps.
struct WarpAttentionPartial : OpRewritePattern<AttentionPartialOp> {
  WarpAttentionPartial(MLIRContext *ctx, LaneMode mode) : OpRewritePattern(ctx), mode(mode) {}
  LaneMode mode;

  LogicalResult matchAndRewrite(AttentionPartialOp op, PatternRewriter &b) const override {
    if (op.getChunk() % kWarpLanes != 0 || op.getHeadDim() % kWarpLanes != 0 || op.getWindow())
      return failure();
    Location loc = op.getLoc();
    auto [first, last] = unitRange(b, loc, op.getTile(), op.getNumKvHeads() * op.getChunks());
    Value count = arith::SubIOp::create(b, loc, last, first);
    const int64_t rowWidth = op.getGroup() * (op.getHeadDim() + 2);
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{count, b.getIndexAttr(rowWidth)}, b.getF32Type());
    Value result = laneAttentionPartial(b, loc, mode, op, first, last, init);
    WarpKernelBuilder::markWarp(op, mode);
    b.replaceOp(op, castTo(b, loc, result, op.getType()));
    return success();
  }
};

struct CudaWarpKernelsPass : mlir::quill::impl::CudaWarpKernelsBase<CudaWarpKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    std::optional<LaneMode> mode = llvm::StringSwitch<std::optional<LaneMode>>(lanes)
                                       .Case("gpu", LaneMode::Gpu)
                                       .Case("emulate", LaneMode::Emulate)
                                       .Default(std::nullopt);
    if (!mode) {
      getOperation().emitError("quill-cuda-warp-kernels: lanes must be gpu or emulate, not '")
          << lanes << "'";
      return signalPassFailure();
    }
    if (failed(verifyBlockWeightsHaveBytes(getOperation())))
      return signalPassFailure();
    auto builder = std::make_shared<const WarpKernelBuilder>(*mode);
    RewritePatternSet patterns(&getContext());
    populateLowerMatVecPatterns(patterns, builder);
    populateLowerNormPatterns(patterns, builder);
    patterns.add<WarpAttentionRows, WarpAttentionPartial>(&getContext(), *mode);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
