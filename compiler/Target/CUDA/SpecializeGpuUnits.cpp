// quill-specialize-gpu-units: on the GPU a kernel call is one unit of work,
// so its temporaries shrink from the whole range to one unit's.
#include "compiler/Target/CUDA/Passes.h"
#include "dialects/Quill/IR/QuillMarkers.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::quill {
#define GEN_PASS_DEF_SPECIALIZEGPUUNITS
#include "compiler/Target/CUDA/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {
/// extract_slice(alloc_tensor)[0..][sizes] with some static size below the
/// allocation's extent -> the slice of a smaller alloc_tensor: static sizes
/// become the extents, dynamic ones keep the old extent.
struct ShrinkScratch : OpRewritePattern<tensor::ExtractSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExtractSliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto alloc = slice.getSource().getDefiningOp<bufferization::AllocTensorOp>();
    if (!alloc || !alloc->hasOneUse() || alloc.getCopy() || !alloc.getDynamicSizes().empty())
      return failure();
    RankedTensorType source = slice.getSourceType();
    if (slice.getType().getRank() != source.getRank())
      return failure();
    auto isConstant = [](OpFoldResult v, int64_t c) {
      std::optional<int64_t> value = getConstantIntValue(v);
      return value && *value == c;
    };
    if (!llvm::all_of(slice.getMixedOffsets(), [&](OpFoldResult o) { return isConstant(o, 0); }) ||
        !llvm::all_of(slice.getMixedStrides(), [&](OpFoldResult s) { return isConstant(s, 1); }))
      return failure();
    SmallVector<int64_t> shape(source.getShape());
    bool smaller = false;
    for (auto [dim, size] : llvm::enumerate(slice.getMixedSizes()))
      if (std::optional<int64_t> value = getConstantIntValue(size); value && *value < shape[dim]) {
        shape[dim] = *value;
        smaller = true;
      }
    if (!smaller)
      return failure();
    auto type = RankedTensorType::get(shape, source.getElementType());
    Location loc = slice.getLoc();
    auto shrunk = bufferization::AllocTensorOp::create(rewriter, loc, type, ValueRange{});
    if (Attribute space = alloc.getMemorySpaceAttr())
      shrunk.setMemorySpaceAttr(space);
    if (RankedTensorType(slice.getType()) == type)
      rewriter.replaceOp(slice, shrunk.getResult());
    else
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          slice, shrunk, slice.getMixedOffsets(), slice.getMixedSizes(), slice.getMixedStrides());
    rewriter.eraseOp(alloc); // An allocation is not erased as dead by itself.
    return success();
  }
};

struct SpecializeGpuUnitsPass : mlir::quill::impl::SpecializeGpuUnitsBase<SpecializeGpuUnitsPass> {
  using SpecializeGpuUnitsBase::SpecializeGpuUnitsBase;

  /// The CPU's analog of the GPU launch: `kernel` becomes the private K_unit,
  /// and a new K(..., begin, end) with its attributes calls it once per unit.
  /// Returns K_unit, to be specialized.
  static func::FuncOp loopOverUnits(func::FuncOp kernel) {
    OpBuilder b(kernel);
    Location loc = kernel.getLoc();
    auto wrapper = func::FuncOp::create(b, loc, kernel.getName(), kernel.getFunctionType());
    wrapper->setDiscardableAttrs(kernel->getDiscardableAttrDictionary());
    if (ArrayAttr argAttrs = kernel.getAllArgAttrs())
      wrapper.setAllArgAttrs(argAttrs);
    std::string name = kernel.getName().str();
    kernel.setName(name + "_unit");
    kernel.setPrivate();
    clearKernel(kernel);
    Block *entry = wrapper.addEntryBlock();
    OpBuilder wb = OpBuilder::atBlockBegin(entry);
    unsigned n = entry->getNumArguments();
    Value one = arith::ConstantIndexOp::create(wb, loc, 1);
    auto loop =
        scf::ForOp::create(wb, loc, entry->getArgument(n - 2), entry->getArgument(n - 1), one);
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    Value unit = loop.getInductionVar();
    SmallVector<Value> args(entry->getArguments().take_front(n - 2));
    args.append({unit, arith::AddIOp::create(lb, loc, unit, one)});
    func::CallOp::create(lb, loc, kernel, args);
    func::ReturnOp::create(wb, loc);
    return kernel;
  }

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // Every kernel ends with (token, pos, begin, end): end becomes begin + 1.
    SmallVector<func::FuncOp> kernels;
    for (auto kernel : getOperation().getOps<func::FuncOp>()) {
      if (!isKernel(kernel) || kernel.isExternal())
        continue;
      // The kernel contract: no results, (token, pos, begin, end) last.
      FunctionType type = kernel.getFunctionType();
      if (type.getNumResults() != 0 || type.getNumInputs() < 4 ||
          !llvm::all_of(type.getInputs().take_back(4), [](Type t) { return t.isIndex(); })) {
        kernel.emitError("quill-specialize-gpu-units: kernel '")
            << kernel.getName() << "' must return nothing and end with four index arguments";
        return signalPassFailure();
      }
      kernels.push_back(kernel);
    }
    for (func::FuncOp kernel : kernels) {
      if (loopUnits)
        kernel = loopOverUnits(kernel);
      Block &entry = kernel.getBody().front();
      BlockArgument begin = entry.getArgument(entry.getNumArguments() - 2);
      BlockArgument end = entry.getArgument(entry.getNumArguments() - 1);
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      Value one = arith::ConstantIndexOp::create(b, kernel.getLoc(), 1);
      Value next = arith::AddIOp::create(b, kernel.getLoc(), begin, one);
      end.replaceAllUsesWith(next);
    }
    // Fold the sizes that depended on end - begin, then shrink: the
    // canonicalizer's patterns with ShrinkScratch among them.
    RewritePatternSet patterns(ctx);
    for (Dialect *dialect : ctx->getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, ctx);
    patterns.add<ShrinkScratch>(ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("quill-specialize-gpu-units: the shapes did not settle");
      return signalPassFailure();
    }
  }
};
} // namespace
