// quill-outline-kernels' memory plan: weights (and packed weights) at
// aligned offsets of the weight blob, one cache region per (layer, kind),
// scratch per step, the step's tensor arguments in the input buffer.
#include "dialects/Quill/IR/WeightFormats.h"
#include "dialects/Quill/Transforms/OutlineKernels.h"

namespace mlir::quill {

namespace {

constexpr int64_t kAlignment = 64; // One cache line; a whole AVX-512 vector.

int64_t alignUp(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

/// Bytes of one element of a tensor type.
int64_t elementBytes(Type type) {
  return cast<RankedTensorType>(type).getElementType().getIntOrFloatBitWidth() / 8;
}

/// Bytes of a tensor type, in its weight encoding where it has one.
int64_t byteSize(Type type) { return storageBytes(cast<RankedTensorType>(type)); }

} // namespace

LogicalResult planMemory(func::FuncOp step, MemoryPlan &plan) {
  MLIRContext *ctx = step.getContext();
  auto bind = [&](Value value, StringRef space, int64_t offset) {
    plan.bindings[value] = BindingAttr::get(ctx, space, offset, byteSize(value.getType()));
  };
  // Tensor arguments (token ids; a batch's positions and block tables) live
  // in the runtime's input buffer, one after the other.
  plan.inputs.clear();
  int64_t inputBytes = 0;
  for (BlockArgument arg : step.getArguments())
    if (isa<RankedTensorType>(arg.getType())) {
      bind(arg, "input", inputBytes);
      plan.inputs.push_back(plan.bindings[arg]);
      inputBytes += alignUp(byteSize(arg.getType()));
    }
  for (Operation &op : step.getBody().front()) {
    if (auto weight = dyn_cast<WeightOp>(op)) {
      auto [type, known] = plan.weightTypes.try_emplace(weight.getName(), weight.getType());
      if (!known && type->second != weight.getType())
        return weight.emitOpError("weight '")
               << weight.getName() << "' is used with two shapes: " << type->second << " and "
               << weight.getType();
      // A weight only packed into others (or unused) has no bytes of its
      // own: the packs hold it.
      if (llvm::all_of(weight->getUsers(), [](Operation *user) { return isa<ConcatOp>(user); }))
        continue;
      auto [it, inserted] =
          plan.weights.try_emplace(weight.getName(), plan.weightBytes, weight.getType());
      if (inserted)
        plan.weightBytes += alignUp(byteSize(weight.getType()));
      bind(weight, "weights", it->second.first);
    } else if (auto cache = dyn_cast<KVCacheOp>(op);
               cache && cast<RankedTensorType>(cache.getType()).getRank() == 3) {
      // A section of the paged cache: the runtime sizes and places it.
      auto type = cast<RankedTensorType>(cache.getType());
      int64_t section = 2 * cache.getLayer() + (cache.getKind() == "value" ? 1 : 0);
      plan.bindings[cache] =
          BindingAttr::get(ctx, "kv_pool", section, type.getDimSize(1) * rowStorageBytes(type));
    } else if (auto cache = dyn_cast<KVCacheOp>(op)) {
      auto key = std::make_pair(cache.getKind().str(), int64_t(cache.getLayer()));
      auto [it, inserted] = plan.caches.try_emplace(key, plan.kvBytes, cache.getType());
      if (inserted)
        plan.kvBytes += alignUp(byteSize(cache.getType()));
      else if (it->second.second != cache.getType())
        return cache.emitOpError("the ")
               << cache.getKind() << " cache of layer " << cache.getLayer()
               << " is used with two shapes: " << it->second.second << " and " << cache.getType();
      bind(cache, "kv", it->second.first);
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      // A weight packed at compile time from named weights.
      SmallVector<Attribute> parts;
      std::string key = concat.getInterleave() ? "interleave:" : "concat:";
      for (Value part : concat.getParts()) {
        StringRef name = part.getDefiningOp<WeightOp>().getName();
        parts.push_back(StringAttr::get(ctx, name));
        key += name.str() + ",";
      }
      StringAttr scale;
      if (Value g = concat.getScale()) {
        scale = StringAttr::get(ctx, g.getDefiningOp<WeightOp>().getName());
        key += "scale:" + scale.str();
      }
      auto [it, inserted] = plan.packOffsets.try_emplace(key, plan.weightBytes);
      if (inserted) {
        plan.packs.push_back(WeightPackAttr::get(
            ctx, plan.weightBytes, concat.getInterleave() ? "interleave" : "concat",
            ArrayAttr::get(ctx, parts), scale, rowGroupsOf(concat.getType())));
        plan.weightBytes += alignUp(byteSize(concat.getType()));
      }
      bind(concat, "weights", it->second);
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      // A view into its input's memory: no kernel, no copy. Its offset
      // counts elements of a vector, rows of a packed weight.
      BindingAttr parent = plan.bindings.lookup(slice.getInput());
      auto type = cast<RankedTensorType>(slice.getType());
      int64_t unitBytes = type.getRank() == 1 ? elementBytes(type) : rowStorageBytes(type);
      plan.bindings[slice] = BindingAttr::get(
          ctx, parent.getSpace(), parent.getOffset() + slice.getOffsetAttr().getInt() * unitBytes,
          byteSize(slice.getType()));
    } else if (auto row = dyn_cast<RowOp>(op)) {
      // Row `index` of [T, width] activations: a view of its memory.
      BindingAttr parent = plan.bindings.lookup(row.getInput());
      plan.bindings[row] = BindingAttr::get(ctx, parent.getSpace(),
                                            parent.getOffset() + row.getIndexAttr().getInt() *
                                                                     byteSize(row.getType()),
                                            byteSize(row.getType()));
    } else if (auto updates = dyn_cast<CacheUpdateOpInterface>(op)) {
      // Updated caches live where the caches do; a result of the op's own
      // (the QKV projection's) in scratch.
      if (!updates.updatesOnlyCaches()) {
        bind(op.getResult(0), "scratch", plan.scratchBytes);
        plan.scratchBytes += alignUp(byteSize(op.getResult(0).getType()));
      }
      for (auto [result, cache] : updates.getUpdatedCaches())
        plan.bindings[op.getResult(result)] = plan.bindings.lookup(cache);
    } else if (!isa_and_nonnull<QuillDialect>(op.getDialect()) && !isa<func::ReturnOp>(op)) {
      return op.emitOpError("quill-outline-kernels: only quill ops can be "
                            "outlined (run quill-verify-step first)");
    } else if (op.getNumResults() == 1) {
      bind(op.getResult(0), "scratch", plan.scratchBytes);
      plan.scratchBytes += alignUp(byteSize(op.getResult(0).getType()));
    }
  }
  return success();
}

} // namespace mlir::quill
