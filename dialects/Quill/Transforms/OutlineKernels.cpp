// quill-outline-kernels: @step becomes a schedule of kernel dispatches plus a
// memory plan; each distinct op signature becomes one kernel function.
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

#include <map>

namespace mlir::quill {
#define GEN_PASS_DEF_OUTLINEKERNELS
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

constexpr int64_t kAlignment = 64; // One cache line; a whole AVX-512 vector.

int64_t alignUp(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

int64_t byteSize(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.getNumElements() *
         tensor.getElementType().getIntOrFloatBitWidth() / 8;
}

/// Where every tensor value of @step lives at run time.
struct MemoryPlan {
  int64_t weightBytes = 0, kvBytes = 0, scratchBytes = 0;
  llvm::StringMap<std::pair<int64_t, Type>> weights;
  /// Packed weights by a key of their layout and parts -> offset.
  llvm::StringMap<int64_t> packOffsets;
  SmallVector<Attribute> packs;
  std::map<std::pair<std::string, int64_t>, std::pair<int64_t, Type>> caches;
  DenseMap<Value, BindingAttr> bindings;
  /// Where each tensor argument of the step being planned lives.
  SmallVector<Attribute> inputs;
};

/// How a kernel splits its work: `work` units, each `rowsPerUnit` output
/// elements, in chunks of `grain` units.
struct Tiling {
  int64_t work = 1, grain = 1, rowsPerUnit = 0; // rowsPerUnit 0: not tiled.
  bool leading = false; ///< Units are rows of the result, not columns.
  bool liveRows = false; ///< Units are a batch step's token rows: only live ones run.
  /// > 1: the [T, width] result is tiled as [T * splitRows, width /
  /// splitRows] (units are parts of rows, contiguous in memory).
  int64_t splitRows = 1;
};

Tiling tilingOf(Operation *op, int64_t matvecGrain, bool attentionRows, bool rowUnits) {
  Tiling tiling;
  // GPU units for what the CPU runs whole: a prefill's token rows (rope,
  // cache writes, embeddings), and the elements of merged attention, of a
  // vector's RMSNorm and of the decode embedding. On the GPU one unit is one
  // thread (or warp), and one thread for all of them is slow.
  if (rowUnits) {
    auto rows = [&](int64_t count) {
      tiling.work = count;
      tiling.rowsPerUnit = 1;
      tiling.leading = true;
      return tiling;
    };
    if (auto rope = dyn_cast<RoPEOp>(op); rope && !rope.getRows() && rope.getType().getRank() == 2)
      return rows(rope.getType().getDimSize(0));
    if (auto write = dyn_cast<KVWriteOp>(op); write && write.getRow().getType().getRank() == 2)
      return rows(write.getRow().getType().getDimSize(0));
    if (auto embeddings = dyn_cast<EmbeddingsOp>(op))
      return rows(embeddings.getType().getDimSize(0));
    if (auto merge = dyn_cast<AttentionMergeOp>(op))
      return rows(merge.getType().getDimSize(0));
    if (auto norm = dyn_cast<RMSNormOp>(op))
      return rows(norm.getType().getDimSize(0)); // Elements, or token rows.
    if (auto embedding = dyn_cast<EmbeddingOp>(op))
      return rows(embedding.getType().getDimSize(0));
  }
  if (isa<LinearOp, LogitsOp, ProjectQKVOp>(op)) {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t rows = resultType.getDimSize(resultType.getRank() - 1);
    // A QKV projection rotates pairs of rows: its unit is a pair, so no
    // split of the work (threads, GPU threads) can separate one.
    int64_t perUnit = isa<ProjectQKVOp>(op) ? 2 : 1;
    tiling.work = rows / perUnit;
    tiling.grain = std::max<int64_t>(1, std::min(matvecGrain, rows) / perUnit);
    tiling.rowsPerUnit = perUnit;
  } else if (auto partial = dyn_cast<AttentionPartialOp>(op)) {
    // One unit per kv head and chunk of positions: a row of the result.
    tiling.work = partial.getNumKvHeads() * partial.getChunks();
    tiling.rowsPerUnit = 1;
    tiling.leading = true;
  } else if (auto paged = dyn_cast<PagedAttentionOp>(op)) {
    // One unit per token row.
    tiling.work = paged.getQuery().getType().getDimSize(0);
    tiling.rowsPerUnit = 1;
    tiling.leading = true;
    tiling.liveRows = true;
  } else if (auto rope = dyn_cast<RoPEOp>(op); rope && rope.getRows()) {
    // A batch step's rows, split between threads.
    tiling.work = rope.getType().getDimSize(0);
    tiling.rowsPerUnit = 1;
    tiling.leading = true;
    tiling.liveRows = true;
  } else if (auto attention = dyn_cast<AttentionOp>(op);
             attention && attentionRows && attention.getQuery().getType().getRank() == 2) {
    // One unit per (query row, kv head) (tile_rows): row u / kv heads, the
    // query heads of kv head u mod kv heads.
    tiling.work = attention.getQuery().getType().getDimSize(0) * attention.getNumKvHeads();
    tiling.rowsPerUnit = 1;
    tiling.leading = true;
    tiling.splitRows = attention.getNumKvHeads();
  } else if (auto attention = dyn_cast<AttentionOp>(op)) {
    int64_t group = attention.getNumHeads() / attention.getNumKvHeads();
    tiling.work = attention.getNumKvHeads();
    tiling.rowsPerUnit = group * attention.getHeadDim();
  }
  return tiling;
}

/// Appends tile [begin, end) to `op` if it is one of `Ops`.
template <typename... Ops> bool appendTile(Operation *op, Value begin, Value end) {
  auto append = [&](auto tiled) {
    if (!tiled)
      return false;
    tiled.getTileMutable().append({begin, end});
    return true;
  };
  return (append(dyn_cast<Ops>(op)) || ...);
}

/// A readable kernel name from the op and its operand shapes.
std::string kernelBaseName(Operation *op) {
  std::string name = op->getName().stripDialect().str();
  for (Value operand : op->getOperands()) {
    auto tensor = dyn_cast<RankedTensorType>(operand.getType());
    if (!tensor)
      continue;
    name += "_";
    llvm::interleave(
        tensor.getShape(), [&](int64_t d) { name += std::to_string(d); },
        [&] { name += "x"; });
  }
  return name;
}

/// Two ops share a kernel when their names, types and attributes agree.
std::string kernelKey(Operation *op) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getName() << "|";
  for (Value operand : op->getOperands()) {
    os << operand.getType();
    // Index operands are step arguments (token or pos, rows or logit
    // rows): kernels read them from fixed parameters, so which one feeds
    // the op is part of the kernel.
    if (auto arg = dyn_cast<BlockArgument>(operand))
      os << "#arg" << arg.getArgNumber();
    os << ",";
  }
  os << "|" << op->getResult(0).getType() << "|" << op->getAttrDictionary();
  return key;
}

struct OutlineKernelsPass
    : mlir::quill::impl::OutlineKernelsBase<OutlineKernelsPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  LogicalResult planMemory(func::FuncOp step, MemoryPlan &plan);
  func::FuncOp buildKernel(Operation *op, StringRef name, func::FuncOp step,
                           const Tiling &tiling);
};

LogicalResult OutlineKernelsPass::planMemory(func::FuncOp step,
                                             MemoryPlan &plan) {
  MLIRContext *ctx = &getContext();
  auto bind = [&](Value value, StringRef space, int64_t offset) {
    plan.bindings[value] =
        BindingAttr::get(ctx, space, offset, byteSize(value.getType()));
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
      auto [it, inserted] = plan.weights.try_emplace(
          weight.getName(), plan.weightBytes, weight.getType());
      if (inserted)
        plan.weightBytes += alignUp(byteSize(weight.getType()));
      else if (it->second.second != weight.getType())
        return weight.emitOpError("weight '")
               << weight.getName() << "' is used with two shapes: "
               << it->second.second << " and " << weight.getType();
      bind(weight, "weights", it->second.first);
    } else if (auto cache = dyn_cast<KVCacheOp>(op);
               cache && cast<RankedTensorType>(cache.getType()).getRank() == 3) {
      // A section of the paged cache: the runtime sizes and places it.
      auto type = cast<RankedTensorType>(cache.getType());
      int64_t section = 2 * cache.getLayer() + (cache.getKind() == "value" ? 1 : 0);
      plan.bindings[cache] = BindingAttr::get(ctx, "kv_pool", section,
                                              type.getDimSize(1) * type.getDimSize(2) * 4);
    } else if (auto cache = dyn_cast<KVCacheOp>(op)) {
      auto key = std::make_pair(cache.getKind().str(), int64_t(cache.getLayer()));
      auto [it, inserted] =
          plan.caches.try_emplace(key, plan.kvBytes, cache.getType());
      if (inserted)
        plan.kvBytes += alignUp(byteSize(cache.getType()));
      else if (it->second.second != cache.getType())
        return cache.emitOpError("the ")
               << cache.getKind() << " cache of layer " << cache.getLayer()
               << " is used with two shapes: " << it->second.second << " and "
               << cache.getType();
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
            ArrayAttr::get(ctx, parts), scale));
        plan.weightBytes += alignUp(byteSize(concat.getType()));
      }
      bind(concat, "weights", it->second);
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      // A view into its input's memory: no kernel, no copy.
      BindingAttr parent = plan.bindings.lookup(slice.getInput());
      plan.bindings[slice] = BindingAttr::get(
          ctx, parent.getSpace(), parent.getOffset() + slice.getOffsetAttr().getInt() * 4,
          byteSize(slice.getType()));
    } else if (auto row = dyn_cast<RowOp>(op)) {
      // Row `index` of [T, width] activations: a view of its memory.
      BindingAttr parent = plan.bindings.lookup(row.getInput());
      plan.bindings[row] = BindingAttr::get(
          ctx, parent.getSpace(),
          parent.getOffset() + row.getIndexAttr().getInt() * byteSize(row.getType()),
          byteSize(row.getType()));
    } else if (auto write = dyn_cast<KVWriteOp>(op)) {
      plan.bindings[write.getResult()] = plan.bindings.lookup(write.getCache());
    } else if (auto write = dyn_cast<PagedKVWriteOp>(op)) {
      plan.bindings[write.getResult()] = plan.bindings.lookup(write.getCache());
    } else if (auto project = dyn_cast<ProjectQKVOp>(op)) {
      bind(project.getResult(), "scratch", plan.scratchBytes);
      plan.scratchBytes += alignUp(byteSize(project.getResult().getType()));
      plan.bindings[project.getNewKeys()] = plan.bindings.lookup(project.getKeys());
      plan.bindings[project.getNewValues()] = plan.bindings.lookup(project.getValues());
    } else if (!isa_and_nonnull<QuillDialect>(op.getDialect()) &&
               !isa<func::ReturnOp>(op)) {
      return op.emitOpError("quill-outline-kernels: only quill ops can be "
                            "outlined (run quill-verify-step first)");
    } else if (op.getNumResults() == 1) {
      bind(op.getResult(0), "scratch", plan.scratchBytes);
      plan.scratchBytes += alignUp(byteSize(op.getResult(0).getType()));
    }
  }
  return success();
}

func::FuncOp OutlineKernelsPass::buildKernel(Operation *op, StringRef name,
                                             func::FuncOp step,
                                             const Tiling &tiling) {
  MLIRContext *ctx = &getContext();
  ModuleOp module = getOperation();
  Location loc = op->getLoc();
  auto memrefOf = [](Type type) {
    auto tensor = cast<RankedTensorType>(type);
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  };
  // kv_write's only result is its cache operand, updated in place; a QKV
  // projection also updates its two caches in place besides its result.
  bool inPlace = isa<KVWriteOp, PagedKVWriteOp>(op);
  SmallVector<std::pair<unsigned, Value>> aliased; // (result, cache operand)
  if (auto write = dyn_cast<KVWriteOp>(op))
    aliased.push_back({0, write.getCache()});
  if (auto write = dyn_cast<PagedKVWriteOp>(op))
    aliased.push_back({0, write.getCache()});
  if (auto project = dyn_cast<ProjectQKVOp>(op))
    aliased.append({{1, project.getKeys()}, {2, project.getValues()}});
  auto isCache = [&](Value operand) {
    return llvm::any_of(aliased, [&](auto &pair) { return pair.second == operand; });
  };

  SmallVector<Type> argTypes;
  for (Value operand : op->getOperands())
    if (isa<RankedTensorType>(operand.getType()))
      argTypes.push_back(memrefOf(operand.getType()));
  if (!inPlace)
    argTypes.push_back(memrefOf(op->getResult(0).getType()));
  auto index = IndexType::get(ctx);
  argTypes.append({index, index, index, index}); // token, pos, begin, end

  OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
  auto kernel = func::FuncOp::create(moduleBuilder, loc, name,
                                     FunctionType::get(ctx, argTypes, {}));
  kernel->setAttr("quill.kernel", UnitAttr::get(ctx));
  Block *entry = kernel.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  unsigned numArgs = entry->getNumArguments();
  Value token = entry->getArgument(numArgs - 4);
  Value pos = entry->getArgument(numArgs - 3);
  Value begin = entry->getArgument(numArgs - 2);
  Value end = entry->getArgument(numArgs - 1);

  IRMapping mapping;
  // A step's index arguments feed the two scalar parameters: (token, pos)
  // of the decode step, (rows, logit rows) of the batch step; a prefill's
  // only one is its pos. Tensor arguments are bound like any operand.
  SmallVector<Value> indexArgs;
  for (BlockArgument arg : step.getArguments())
    if (arg.getType().isIndex())
      indexArgs.push_back(arg);
  if (indexArgs.size() == 2) {
    mapping.map(indexArgs[0], token);
    mapping.map(indexArgs[1], pos);
  } else if (indexArgs.size() == 1) {
    mapping.map(indexArgs[0], pos);
  }
  unsigned argIndex = 0;
  DenseMap<Value, Value> cacheArgs; // Cache operand -> its kernel argument.
  for (Value operand : op->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    Value arg = entry->getArgument(argIndex++);
    bool writable = isCache(operand);
    if (writable)
      cacheArgs[operand] = arg;
    auto tensor = bufferization::ToTensorOp::create(
        b, loc, operand.getType(), arg, b.getUnitAttr(),
        writable ? b.getUnitAttr() : UnitAttr());
    mapping.map(operand, tensor.getResult());
  }

  // The destination first, so that it dominates everything the op lowers
  // to (bufferization can then build temporaries in place inside it).
  Value destination = inPlace ? Value() : entry->getArgument(argIndex);
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (tiling.splitRows > 1 && !inPlace) {
    // [T, width] viewed as [T * s, width / s]: a unit's part of a row is a
    // row of the view.
    const int64_t rows = resultType.getDimSize(0), width = resultType.getDimSize(1);
    const int64_t s = tiling.splitRows;
    auto split = MemRefType::get({rows, s, width / s}, b.getF32Type());
    Value expanded = memref::ExpandShapeOp::create(
        b, loc, split, destination, SmallVector<ReassociationIndices>{{0}, {1, 2}});
    destination = memref::CollapseShapeOp::create(
        b, loc, expanded, SmallVector<ReassociationIndices>{{0, 1}, {2}});
    resultType = RankedTensorType::get({rows * s, width / s}, b.getF32Type());
  }
  unsigned tiledDim = tiling.leading ? 0 : resultType.getRank() - 1;
  if (tiling.rowsPerUnit > 0 && !inPlace) {
    // The kernel computes output columns [begin, end) * rowsPerUnit only
    // (of every token row, for [T, width] activations).
    Value unit = arith::ConstantIndexOp::create(b, loc, tiling.rowsPerUnit);
    Value offset = arith::MulIOp::create(b, loc, begin, unit);
    Value units = arith::SubIOp::create(b, loc, end, begin);
    Value size = arith::MulIOp::create(b, loc, units, unit);
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (auto [dim, extent] : llvm::enumerate(resultType.getShape())) {
      bool tiled = dim == tiledDim;
      offsets.push_back(tiled ? OpFoldResult(offset) : b.getIndexAttr(0));
      sizes.push_back(tiled ? OpFoldResult(size) : b.getIndexAttr(extent));
      strides.push_back(b.getIndexAttr(1));
    }
    destination = memref::SubViewOp::create(b, loc, destination, offsets, sizes, strides);
  }

  Operation *clone = b.clone(*op, mapping);
  if (tiling.rowsPerUnit > 0) {
    if (!appendTile<LinearOp, LogitsOp, ProjectQKVOp, AttentionPartialOp, PagedAttentionOp,
                    RoPEOp, KVWriteOp, EmbeddingsOp, AttentionMergeOp, RMSNormOp, EmbeddingOp>(
            clone, begin, end)) {
      auto attention = cast<AttentionOp>(clone);
      attention.getTileMutable().append({begin, end});
      attention.setTileRows(tiling.leading);
    }
    // An in-place write's result stays the whole cache.
    if (!inPlace) {
      SmallVector<int64_t> shape(resultType.getShape());
      shape[tiledDim] = ShapedType::kDynamic;
      clone->getResult(0).setType(RankedTensorType::get(shape, b.getF32Type()));
    }
  }
  auto storeInto = [&](Value result, Value buffer) {
    auto store = bufferization::MaterializeInDestinationOp::create(b, loc, result, buffer);
    store.setRestrict(true);
    store.setWritable(true);
  };
  if (!inPlace)
    storeInto(clone->getResult(0), destination);
  for (auto [result, cache] : aliased)
    storeInto(clone->getResult(result), cacheArgs.lookup(cache));
  func::ReturnOp::create(b, loc);
  return kernel;
}

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
  for (auto &entry : plan.weights)
    offsets.emplace_back(StringAttr::get(ctx, entry.getKey()),
                         IntegerAttr::get(IntegerType::get(ctx, 64), entry.getValue().first));
  SymbolTable symbols(module);
  llvm::StringMap<std::string> kernelsByKey;
  for (auto [function, scratch, stepInputs] : llvm::zip(steps, scratchBytes, inputs)) {
    SmallVector<std::tuple<std::string, SmallVector<Attribute>, Tiling, SmallVector<int64_t>>>
        launches;
    BindingAttr logits;
    for (Operation &op : function.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        logits = plan.bindings.lookup(ret.getOperand(0));
        continue;
      }
      if (isa<WeightOp, KVCacheOp, ConcatOp, SliceOp, RowOp>(op))
        continue;
      Tiling tiling = tilingOf(&op, matvecGrain, attentionRows, rowUnits);
      std::string &kernelName = kernelsByKey[kernelKey(&op)];
      if (kernelName.empty()) {
        func::FuncOp kernel = buildKernel(&op, kernelBaseName(&op), function, tiling);
        kernelName = symbols.insert(kernel).str(); // Renamed if taken.
      }
      // The bindings, and which of them the kernel writes: its result, or
      // the caches it updates in place.
      SmallVector<Attribute> bindings;
      SmallVector<int64_t> writes;
      Value keys, values;
      if (auto write = dyn_cast<KVWriteOp>(op))
        keys = write.getCache();
      if (auto write = dyn_cast<PagedKVWriteOp>(op))
        keys = write.getCache();
      if (auto project = dyn_cast<ProjectQKVOp>(op))
        keys = project.getKeys(), values = project.getValues();
      for (Value operand : op.getOperands())
        if (isa<RankedTensorType>(operand.getType())) {
          if (operand == keys || operand == values)
            writes.push_back(bindings.size());
          bindings.push_back(plan.bindings.lookup(operand));
        }
      if (!isa<KVWriteOp, PagedKVWriteOp>(op)) {
        writes.push_back(bindings.size());
        bindings.push_back(plan.bindings.lookup(op.getResult(0)));
      }
      launches.emplace_back(kernelName, bindings, tiling, writes);
    }
    if (!logits) {
      function.emitError("quill-outline-kernels: @") << function.getName() << " returns no logits";
      return signalPassFailure();
    }
    OpBuilder b(function);
    auto schedule = ScheduleOp::create(
        b, function.getLoc(), function.getName(), scratch, plan.kvBytes, plan.weightBytes,
        logits, DictionaryAttr::get(ctx, offsets),
        plan.packs.empty() ? ArrayAttr() : ArrayAttr::get(ctx, plan.packs),
        stepInputs.empty() ? ArrayAttr() : ArrayAttr::get(ctx, stepInputs));
    b.setInsertionPointToStart(&schedule.getBody().emplaceBlock());
    for (auto &[kernel, bindings, tiling, writes] : launches)
      DispatchOp::create(b, function.getLoc(), kernel, b.getArrayAttr(bindings), tiling.work,
                         tiling.grain, tiling.liveRows, b.getDenseI64ArrayAttr(writes));
  }
  for (func::FuncOp function : steps)
    function.erase();
}

} // namespace
