// quill-cpu-expand-bf16-rounding: f32 -> bf16 rounding as integer arithmetic,
// for CPUs without AVX512_BF16. LLVM lowers such an fptrunc to a call of
// __truncsfbf2 (compiler-rt's or libgcc's), which the kernel library, loaded
// by a runtime that links neither, cannot resolve; and its code generator
// makes such calls of its own where bf16 values live in registers across
// blocks (it carries them as f32). So the module also defines the function.
#include "compiler/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::quill {
#define GEN_PASS_DEF_CPUEXPANDBF16ROUNDING
#include "compiler/Target/CPU/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;

namespace {

/// The name LLVM's code generator calls to round f32 to bf16.
constexpr const char *kRoundingFunction = "__truncsfbf2";

/// `bf16 __truncsfbf2(f32)`, as one truncf that the patterns then expand.
void defineRoundingFunction(ModuleOp module) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  auto function = func::FuncOp::create(b, loc, kRoundingFunction,
                                       b.getFunctionType({b.getF32Type()}, {b.getBF16Type()}));
  Block *body = function.addEntryBlock();
  b.setInsertionPointToStart(body);
  Value rounded = arith::TruncFOp::create(b, loc, b.getBF16Type(), body->getArgument(0));
  func::ReturnOp::create(b, loc, rounded);
}

struct CpuExpandBf16RoundingPass
    : mlir::quill::impl::CpuExpandBf16RoundingBase<CpuExpandBf16RoundingPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool usesBf16 = false;
    module.walk([&](Operation *op) {
      auto isBf16 = [](Type t) { return getElementTypeOrSelf(t).isBF16(); };
      usesBf16 = usesBf16 || llvm::any_of(op->getResultTypes(), isBf16) ||
                 llvm::any_of(op->getOperandTypes(), isBf16);
      return usesBf16 ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (!usesBf16)
      return;
    // A declaration of it (nothing else should be there) gives way to the
    // definition.
    auto existing = module.lookupSymbol<func::FuncOp>(kRoundingFunction);
    if (existing && existing.isExternal()) {
      existing.erase();
      existing = nullptr;
    }
    if (!existing && !module.lookupSymbol(kRoundingFunction))
      defineRoundingFunction(module);
    // Only the bf16 conversions: the rest of arith-expand would rewrite
    // min/max and divisions this target lowers well as they are. One walk,
    // without the greedy driver's folding, so nothing else changes.
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    walkAndApplyPatterns(module, std::move(patterns));
  }
};

} // namespace
