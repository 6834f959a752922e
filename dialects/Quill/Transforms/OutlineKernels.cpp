// quill-outline-kernels: @step (and @prefill, @batch) become schedules of
// kernel dispatches over a memory plan; each distinct op signature becomes
// one kernel function (see OutlineKernels.h for the parts).
#include "dialects/Quill/Transforms/OutlineKernels.h"
#include "dialects/Quill/IR/WeightFormats.h"
#include "dialects/Quill/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace mlir::quill {
#define GEN_PASS_DEF_OUTLINEKERNELS
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

struct OutlineKernelsPass : mlir::quill::impl::OutlineKernelsBase<OutlineKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};

void OutlineKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  // The decode step, and the prefill and batch steps when there are.
  SmallVector<func::FuncOp> steps;
  for (StringRef name : {"step", "prefill", "batch"})
    if (auto function = module.lookupSymbol<func::FuncOp>(name))
      steps.push_back(function);
  auto step = module.lookupSymbol<func::FuncOp>("step");
  if (!step || llvm::any_of(steps, [](func::FuncOp f) {
        return !f.getBody().hasOneBlock() ||
               f.getNumArguments() != (f.getName() == "batch" ? 5u : 2u);
      })) {
    module.emitError("quill-outline-kernels: expected func.func @step(token, "
                     "pos) (run quill-verify-step for details)");
    return signalPassFailure();
  }
  // Weights and caches are planned once for all steps (they share them);
  // every step has scratch and inputs of its own.
  MemoryPlan plan;
  SmallVector<int64_t> scratchBytes;
  SmallVector<SmallVector<Attribute>> inputs;
  for (func::FuncOp function : steps) {
    plan.scratchBytes = 0;
    if (failed(planMemory(function, plan)))
      return signalPassFailure();
    scratchBytes.push_back(plan.scratchBytes);
    inputs.push_back(plan.inputs);
  }

  SmallVector<NamedAttribute> offsets;
  SmallVector<NamedAttribute> encodings; // Of the weights not stored as f32.
  for (auto &entry : plan.weights)
    offsets.emplace_back(StringAttr::get(ctx, entry.getKey()),
                         IntegerAttr::get(IntegerType::get(ctx, 64), entry.getValue().first));
  SmallVector<NamedAttribute> rowGroups; // Of the named weights stored in row groups.
  for (auto &entry : plan.weightTypes) {
    WeightFormat format =
        *weightFormatOf(cast<RankedTensorType>(entry.getValue()).getElementType());
    if (format.name != "f32")
      encodings.emplace_back(StringAttr::get(ctx, entry.getKey()),
                             StringAttr::get(ctx, format.name));
    if (int64_t lanes = rowGroupsOf(entry.getValue()))
      rowGroups.emplace_back(StringAttr::get(ctx, entry.getKey()),
                             IntegerAttr::get(IntegerType::get(ctx, 64), lanes));
  }
  SymbolTable symbols(module);
  llvm::StringMap<std::string> kernelsByKey;
  for (auto [function, scratch, stepInputs] : llvm::zip(steps, scratchBytes, inputs)) {
    SmallVector<
        std::tuple<std::string, SmallVector<Attribute>, Tiling, SmallVector<int64_t>, Location>>
        launches;
    BindingAttr logits;
    for (Operation &op : function.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        logits = plan.bindings.lookup(ret.getOperand(0));
        continue;
      }
      if (isa<WeightOp, KVCacheOp, ConcatOp, SliceOp, RowOp>(op))
        continue;
      Tiling tiling = tilingOf(&op, matvecGrain);
      std::string &kernelName = kernelsByKey[kernelKey(&op)];
      if (kernelName.empty()) {
        func::FuncOp kernel = buildKernel(module, &op, kernelBaseName(&op), function, tiling);
        kernelName = symbols.insert(kernel).str(); // Renamed if taken.
      }
      // The bindings, and which of them the kernel writes: its result, or
      // the caches it updates in place.
      SmallVector<Attribute> bindings;
      SmallVector<int64_t> writes;
      llvm::SmallPtrSet<Value, 2> caches;
      bool ownResult = true;
      if (auto updates = dyn_cast<CacheUpdateOpInterface>(op)) {
        for (auto [result, cache] : updates.getUpdatedCaches())
          caches.insert(cache);
        ownResult = !updates.updatesOnlyCaches();
      }
      for (Value operand : op.getOperands())
        if (isa<RankedTensorType>(operand.getType())) {
          if (caches.contains(operand))
            writes.push_back(bindings.size());
          bindings.push_back(plan.bindings.lookup(operand));
        }
      if (ownResult) {
        writes.push_back(bindings.size());
        bindings.push_back(plan.bindings.lookup(op.getResult(0)));
      }
      // The op's location (its layer: loc("layer3")) stays with the launch.
      launches.emplace_back(kernelName, bindings, tiling, writes, op.getLoc());
    }
    if (!logits) {
      function.emitError("quill-outline-kernels: @") << function.getName() << " returns no logits";
      return signalPassFailure();
    }
    OpBuilder b(function);
    auto schedule = ScheduleOp::create(
        b, function.getLoc(), function.getName(), scratch, plan.kvBytes, plan.weightBytes, logits,
        DictionaryAttr::get(ctx, offsets),
        plan.packs.empty() ? ArrayAttr() : ArrayAttr::get(ctx, plan.packs),
        stepInputs.empty() ? ArrayAttr() : ArrayAttr::get(ctx, stepInputs),
        encodings.empty() ? DictionaryAttr() : DictionaryAttr::get(ctx, encodings),
        rowGroups.empty() ? DictionaryAttr() : DictionaryAttr::get(ctx, rowGroups));
    b.setInsertionPointToStart(&schedule.getBody().emplaceBlock());
    for (auto &[kernel, bindings, tiling, writes, loc] : launches)
      DispatchOp::create(b, loc, kernel, b.getArrayAttr(bindings), tiling.work, tiling.grain,
                         tiling.liveRows ? b.getI64IntegerAttr(tiling.splitRows) : IntegerAttr(),
                         b.getDenseI64ArrayAttr(writes));
  }
  for (func::FuncOp function : steps)
    function.erase();
}

} // namespace
