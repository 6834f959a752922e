// quill-share-weight-packs: a projection whose weight (or bias) is a run of
// the parts of a pack some step streams reads those rows of the pack, so the
// artifact holds every weight once.
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::quill {
#define GEN_PASS_DEF_SHAREWEIGHTPACKS
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

/// A packed weight as the memory plan keys it: its parts one after another,
/// and the RMSNorm weight folded into them, if any.
struct Pack {
  SmallVector<std::string> parts;
  SmallVector<Type> partTypes;
  std::string scale; ///< Empty: none.
  Type scaleType;
  Type type;
};

/// The parts and scale of a weight operand: a named weight is a pack of
/// one. Interleaved packs and other values have none.
std::optional<Pack> packOf(Value value) {
  Pack pack;
  pack.type = value.getType();
  if (auto weight = value.getDefiningOp<WeightOp>()) {
    pack.parts.push_back(weight.getName().str());
    pack.partTypes.push_back(weight.getType());
    return pack;
  }
  auto concat = value.getDefiningOp<ConcatOp>();
  if (!concat || concat.getInterleave())
    return std::nullopt;
  for (Value part : concat.getParts()) {
    pack.parts.push_back(part.getDefiningOp<WeightOp>().getName().str());
    pack.partTypes.push_back(part.getType());
  }
  if (Value scale = concat.getScale()) {
    pack.scale = scale.getDefiningOp<WeightOp>().getName().str();
    pack.scaleType = scale.getType();
  }
  return pack;
}

/// Where `run`'s parts start in `pack`'s, if they are a proper sub-run of
/// them with the same scale: the offset in rows (elements of a vector).
std::optional<int64_t> offsetWithin(const Pack &run, const Pack &pack) {
  if (run.scale != pack.scale || run.parts.size() >= pack.parts.size())
    return std::nullopt;
  for (size_t first = 0; first + run.parts.size() <= pack.parts.size(); ++first) {
    if (!std::equal(run.parts.begin(), run.parts.end(), pack.parts.begin() + first))
      continue;
    int64_t offset = 0;
    for (size_t i = 0; i < first; ++i)
      offset += cast<RankedTensorType>(pack.partTypes[i]).getDimSize(0);
    return offset;
  }
  return std::nullopt;
}

struct ShareWeightPacksPass : mlir::quill::impl::ShareWeightPacksBase<ShareWeightPacksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The packs of two parts or more, in every step.
    std::vector<Pack> packs;
    module.walk([&](ConcatOp concat) {
      std::optional<Pack> pack = packOf(concat);
      if (pack && pack->parts.size() >= 2)
        packs.push_back(*pack);
    });
    if (packs.empty())
      return;
    module.walk([&](func::FuncOp function) {
      // One copy of each pack per function, built at its entry.
      std::map<size_t, Value> built;
      bool changed = false;
      function.walk([&](LinearOp linear) {
        SmallVector<OpOperand *, 2> operands = {&linear.getWeightMutable()};
        if (MutableOperandRange bias = linear.getBiasMutable(); !bias.empty())
          operands.push_back(&bias[0]);
        for (OpOperand *operand : operands) {
          std::optional<Pack> run = packOf(operand->get());
          for (size_t i = 0; run && i < packs.size(); ++i) {
            std::optional<int64_t> offset = offsetWithin(*run, packs[i]);
            if (!offset)
              continue;
            OpBuilder b = OpBuilder::atBlockBegin(&function.getBody().front());
            Value &pack = built[i];
            if (!pack)
              pack = buildPack(b, linear.getLoc(), packs[i]);
            b.setInsertionPointAfterValue(pack);
            operand->set(
                SliceOp::create(b, linear.getLoc(), operand->get().getType(), pack, *offset));
            changed = true;
            break;
          }
        }
      });
      if (!changed)
        return;
      // The weights and packs no op reads any more, users before what they
      // use.
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(function.getBody().front())))
        if (isa<WeightOp, ConcatOp>(op) && op.use_empty())
          op.erase();
    });
  }

  /// `pack` as named weights and their concat, at `b`.
  static Value buildPack(OpBuilder &b, Location loc, const Pack &pack) {
    SmallVector<Value> parts;
    for (auto [name, type] : llvm::zip(pack.parts, pack.partTypes))
      parts.push_back(WeightOp::create(b, loc, type, name));
    Value scale;
    if (!pack.scale.empty())
      scale = WeightOp::create(b, loc, pack.scaleType, pack.scale);
    return ConcatOp::create(b, loc, pack.type, parts, scale, /*interleave=*/false);
  }
};

} // namespace
