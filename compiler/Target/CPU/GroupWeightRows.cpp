// quill-cpu-group-weight-rows: the Q8_0, Q4_0, Q4_K and Q6_K weights that
// only the int8 products read get the row-group layout
// (#quill.row_groups<L>), in which a block of L rows is their f16 scales
// and then whole vectors of the rest of their blocks' words: decode, prefill and the batch step
// read it without transposes or horizontal sums, from the one copy the artifact holds.
//
// A weight's layout is one for the whole artifact, so it is decided per
// stored weight (a named weight, or a pack) over every step: grouped only
// where every use in every step takes it that way.
#include "compiler/Target/CPU/CpuKernelBuilder.h"
#include "compiler/Target/CPU/Passes.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "llvm/ADT/StringMap.h"

#include <string>

namespace mlir::quill {
#define GEN_PASS_DEF_CPUGROUPWEIGHTROWS
#include "compiler/Target/CPU/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

/// Which stored weight `value` (a quill.weight or quill.concat result) is:
/// the same key in every step.
std::string storedWeightKey(Operation *op) {
  if (auto weight = dyn_cast<WeightOp>(op))
    return "weight:" + weight.getName().str();
  auto concat = cast<ConcatOp>(op);
  std::string key = concat.getInterleave() ? "interleave:" : "concat:";
  for (Value part : concat.getParts())
    if (auto weight = part.getDefiningOp<WeightOp>())
      key += weight.getName().str() + ",";
  if (Value scale = concat.getScale())
    if (auto weight = scale.getDefiningOp<WeightOp>())
      key += "scale:" + weight.getName().str();
  return key;
}

/// Whether `type` is a matrix the int8 products take (fitsInt8Dot) of
/// whole groups of `lanes` rows.
bool groupable(Type type, int64_t lanes) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 2 &&
         isa<Q8_0Type, Q4_0Type, Q4_KType, Q6_KType>(tensor.getElementType()) &&
         fitsInt8Dot(tensor) && tensor.getDimSize(0) % lanes == 0 && !tensor.getEncoding();
}

/// Whether `weight` is read by anything but the packs that copy it.
bool readDirectly(Value weight) {
  return llvm::any_of(weight.getUsers(), [](Operation *user) { return !isa<ConcatOp>(user); });
}

/// Whether every use of `weight` reads it as the int8 products do: the
/// weight of a linear, logits or QKV projection that takes Q8_0 inputs,
/// or a slice of whole groups read so. A pack that copies it (concat) is
/// a stored weight of its own and does not count.
bool onlyInt8Products(Value weight, int64_t lanes) {
  for (OpOperand &use : weight.getUses()) {
    Operation *user = use.getOwner();
    if (isa<ConcatOp>(user))
      continue;
    if (auto slice = dyn_cast<SliceOp>(user)) {
      auto type = cast<RankedTensorType>(slice.getType());
      if (slice.getOffset() % lanes != 0 || type.getDimSize(0) % lanes != 0 ||
          !onlyInt8Products(slice.getResult(), lanes))
        return false;
      continue;
    }
    bool int8 = false;
    if (auto linear = dyn_cast<LinearOp>(user))
      int8 = use.getOperandNumber() == 1 && linear.getQ8Input() &&
             lanes % linear.getRowsPerOutput() == 0;
    else if (auto logits = dyn_cast<LogitsOp>(user))
      int8 = use.getOperandNumber() == 1 && logits.getQ8Input() && !logits.getSwiglu();
    else if (auto project = dyn_cast<ProjectQKVOp>(user))
      int8 = use.getOperandNumber() == 1 && project.getQ8Input();
    if (!int8)
      return false;
  }
  return true;
}

/// `value` and the slices of it retyped with the row-group encoding.
void setRowGroups(Value value, RowGroupsAttr groups) {
  auto type = cast<RankedTensorType>(value.getType());
  value.setType(RankedTensorType::get(type.getShape(), type.getElementType(), groups));
  for (Operation *user : value.getUsers())
    if (auto slice = dyn_cast<SliceOp>(user))
      setRowGroups(slice.getResult(), groups);
}

struct CpuGroupWeightRowsPass : mlir::quill::impl::CpuGroupWeightRowsBase<CpuGroupWeightRowsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (lanes != 8 && lanes != 16) {
      getOperation().emitError("quill-cpu-group-weight-rows: lanes must be 8 or 16, not ")
          << static_cast<int64_t>(lanes);
      return signalPassFailure();
    }
    // Every stored weight's verdict over all steps.
    llvm::StringMap<bool> grouped;
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (!isa<WeightOp, ConcatOp>(op))
        return;
      Value value = op->getResult(0);
      if (!readDirectly(value))
        return; // Stored only inside packs: no layout of its own.
      bool ok = groupable(value.getType(), lanes) && onlyInt8Products(value, lanes);
      auto [it, inserted] = grouped.try_emplace(storedWeightKey(op), ok);
      it->second = it->second && ok;
      if (ok)
        candidates.push_back(op);
    });
    auto groups = RowGroupsAttr::get(&getContext(), lanes);
    for (Operation *op : candidates)
      if (grouped.lookup(storedWeightKey(op)))
        setRowGroups(op->getResult(0), groups);
  }
};

} // namespace
