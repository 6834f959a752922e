// quill-outline-kernels' outlining: the kernel function a compute op
// becomes, and the key under which ops share one.
#include "dialects/Quill/IR/QuillMarkers.h"
#include "dialects/Quill/IR/WeightFormats.h"
#include "dialects/Quill/Transforms/OutlineKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::quill {

/// A readable kernel name from the op and its operand shapes.
std::string kernelBaseName(Operation *op) {
  std::string name = op->getName().stripDialect().str();
  for (Value operand : op->getOperands()) {
    auto tensor = dyn_cast<RankedTensorType>(operand.getType());
    if (!tensor)
      continue;
    name += "_";
    llvm::interleave(
        tensor.getShape(), [&](int64_t d) { name += std::to_string(d); }, [&] { name += "x"; });
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

/// The part of the kernel's destination that units [begin, end) of
/// `tiling` write; `resultType` becomes the shape it is tiled in, and
/// `tiledDim` the dimension the units run along.
static Value tiledDestination(OpBuilder &b, Location loc, Value destination, const Tiling &tiling,
                              Value begin, Value end, RankedTensorType &resultType,
                              unsigned &tiledDim) {
  if (tiling.splitRows > 1) {
    // [T, width] viewed as [T * s, width / s]: a unit's part of a row is a
    // row of the view.
    const int64_t rows = resultType.getDimSize(0), width = resultType.getDimSize(1);
    const int64_t s = tiling.splitRows;
    auto split = MemRefType::get({rows, s, width / s}, b.getF32Type());
    Value expanded = memref::ExpandShapeOp::create(b, loc, split, destination,
                                                   SmallVector<ReassociationIndices>{{0}, {1, 2}});
    destination = memref::CollapseShapeOp::create(b, loc, expanded,
                                                  SmallVector<ReassociationIndices>{{0, 1}, {2}});
    resultType = RankedTensorType::get({rows * s, width / s}, b.getF32Type());
  }
  tiledDim = tiling.leading ? 0 : resultType.getRank() - 1;
  if (tiling.rowsPerUnit > 0) {
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
  return destination;
}

func::FuncOp buildKernel(ModuleOp module, Operation *op, StringRef name, func::FuncOp step,
                         const Tiling &tiling) {
  MLIRContext *ctx = module.getContext();
  Location loc = op->getLoc();
  // A block-quantized weight arrives as its bytes, [rows, row bytes].
  auto memrefOf = [](Type type) {
    auto tensor = cast<RankedTensorType>(type);
    if (isBlockQuantized(tensor))
      tensor = storageBytesType(tensor);
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  };
  // A cache update's results are its cache operands, updated in place
  // (kv_write has no other; a QKV projection also has its own result).
  SmallVector<std::pair<unsigned, Value>> aliased; // (result, cache operand)
  bool inPlace = false;
  if (auto updates = dyn_cast<CacheUpdateOpInterface>(op)) {
    aliased = updates.getUpdatedCaches();
    inPlace = updates.updatesOnlyCaches();
  }
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
  auto kernel =
      func::FuncOp::create(moduleBuilder, loc, name, FunctionType::get(ctx, argTypes, {}));
  setKernel(kernel);
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
    Type tensorType = operand.getType();
    if (isBlockQuantized(tensorType))
      tensorType = storageBytesType(cast<RankedTensorType>(tensorType));
    Value tensor = bufferization::ToTensorOp::create(b, loc, tensorType, arg, b.getUnitAttr(),
                                                     writable ? b.getUnitAttr() : UnitAttr());
    if (tensorType != operand.getType())
      tensor = WeightViewOp::create(b, loc, operand.getType(), tensor);
    mapping.map(operand, tensor);
  }

  // The destination first, so that it dominates everything the op lowers
  // to (bufferization can then build temporaries in place inside it).
  Value destination = inPlace ? Value() : entry->getArgument(argIndex);
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  unsigned tiledDim = 0;
  if (!inPlace)
    destination = tiledDestination(b, loc, destination, tiling, begin, end, resultType, tiledDim);

  Operation *clone = b.clone(*op, mapping);
  setUnitSplit(clone, UnitSplit::Default); // Consumed by the tiling above.
  if (tiling.rowsPerUnit > 0) {
    cast<TiledOpInterface>(clone).getTileMutable().append({begin, end});
    if (auto attention = dyn_cast<AttentionOp>(clone))
      attention.setTileRows(tiling.leading);
    // An in-place write's result stays the whole cache.
    if (!inPlace) {
      SmallVector<int64_t> shape(resultType.getShape());
      shape[tiledDim] = ShapedType::kDynamic;
      clone->getResult(0).setType(RankedTensorType::get(shape, b.getF32Type()));
    }
  }
  auto storeInto = [&](Value result, Value buffer) {
    // A Q8_0 cache goes back as its bytes (folded once the update is lowered).
    if (isBlockQuantized(result.getType()))
      result = StorageBytesOp::create(
          b, loc, storageBytesType(cast<RankedTensorType>(result.getType())), result);
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

} // namespace mlir::quill
