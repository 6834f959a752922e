// quill-approximate-math: exp, log, powf, sin, cos and sqrt as plain
// arithmetic inside GPU modules, so that NVVM code needs no libdevice.
#include "compiler/Target/CUDA/Passes.h"

#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::quill {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "compiler/Target/CUDA/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;

namespace {
/// sqrt(x) = x * rsqrt(x); rsqrt from the bit-level estimate
/// 0x5f3759df - (bits(x) >> 1), refined by three Newton steps
/// y = y * (1.5 - 0.5 * x * y^2). sqrt(0) is 0 * (finite) = 0.
struct ScalarSqrt : OpRewritePattern<math::SqrtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::SqrtOp op, PatternRewriter &b) const override {
    if (!op.getType().isF32())
      return failure();
    Location loc = op.getLoc();
    Value x = op.getOperand();
    auto i32 = b.getI32Type();
    auto f32 = b.getF32Type();
    auto fconst = [&](float v) {
      return arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(v)).getResult();
    };
    Value bits = arith::BitcastOp::create(b, loc, i32, x);
    Value half = arith::ShRUIOp::create(
        b, loc, bits, arith::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(1)));
    Value magic = arith::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0x5f3759df));
    Value y = arith::BitcastOp::create(b, loc, f32, arith::SubIOp::create(b, loc, magic, half));
    Value halfX = arith::MulFOp::create(b, loc, fconst(0.5f), x);
    for (int step = 0; step < 3; ++step) {
      Value yy = arith::MulFOp::create(b, loc, y, y);
      Value t =
          arith::SubFOp::create(b, loc, fconst(1.5f), arith::MulFOp::create(b, loc, halfX, yy));
      y = arith::MulFOp::create(b, loc, y, t);
    }
    b.replaceOpWithNewOp<arith::MulFOp>(op, x, y);
    return success();
  }
};

/// fma(a, b, c) = a * b + c, contractible (the NVPTX backend forms fma.rn):
/// NVVM would otherwise call libdevice's __nv_fmaf.
struct ScalarFma : OpRewritePattern<math::FmaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::FmaOp op, PatternRewriter &b) const override {
    auto contract = arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::contract);
    Value product = arith::MulFOp::create(b, op.getLoc(), op.getA(), op.getB(), contract);
    b.replaceOpWithNewOp<arith::AddFOp>(op, product, op.getC(), contract);
    return success();
  }
};

/// floor(x) = t - (x < t), t = x truncated through i32: exact for |x| < 2^31,
/// all the approximations above ask of it (their range reductions).
struct ScalarFloor : OpRewritePattern<math::FloorOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::FloorOp op, PatternRewriter &b) const override {
    Type type = op.getType();
    Type intType = b.getI32Type();
    if (auto vector = dyn_cast<VectorType>(type))
      intType = VectorType::get(vector.getShape(), intType);
    Location loc = op.getLoc();
    Value x = op.getOperand();
    Value t = arith::SIToFPOp::create(b, loc, type, arith::FPToSIOp::create(b, loc, intType, x));
    Value above = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, t);
    Value one =
        arith::ConstantOp::create(b, loc, type, b.getFloatAttr(getElementTypeOrSelf(type), 1.0));
    if (auto vector = dyn_cast<VectorType>(type))
      one = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vector, 1.0f));
    Value lower = arith::SubFOp::create(b, loc, t, one);
    b.replaceOpWithNewOp<arith::SelectOp>(op, above, lower, t);
    return success();
  }
};

struct ApproximateMathPass : mlir::quill::impl::ApproximateMathBase<ApproximateMathPass> {
  using ApproximateMathBase::ApproximateMathBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    math::populateExpansionPatterns(patterns, {"powf"});
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      name.consume_front("math.");
      return name == "exp" || name == "log" || name == "sin" || name == "cos";
    });
    patterns.add<ScalarSqrt, ScalarFma, ScalarFloor>(&getContext());
    FrozenRewritePatternSet frozen(std::move(patterns));
    if (everywhere) {
      if (failed(applyPatternsGreedily(getOperation(), frozen)))
        signalPassFailure();
      return;
    }
    for (auto gpuModule : getOperation().getOps<gpu::GPUModuleOp>())
      if (failed(applyPatternsGreedily(gpuModule, frozen)))
        return signalPassFailure();
  }
};
} // namespace
