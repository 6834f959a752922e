// Verifiers of the quill ops: reject ill-shaped graphs, naming the mismatch.
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <numeric>

using namespace mlir;
using namespace mlir::quill;

/// " 'NAME'" when `value` is a named weight, so diagnostics can say which.
static std::string weightName(Value value) {
  if (auto weight = value.getDefiningOp<WeightOp>())
    return (" '" + weight.getName() + "'").str();
  return "";
}

static int64_t dimOf(Value value, unsigned i) {
  return cast<RankedTensorType>(value.getType()).getDimSize(i);
}

/// The width of activations: their last dimension (one vector or T rows).
static int64_t widthOf(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getDimSize(type.getRank() - 1);
}

/// Activations of one token per row keep their row count through an op.
static LogicalResult verifySameRows(Operation *op, Value input, Value result) {
  auto in = cast<RankedTensorType>(input.getType());
  auto out = cast<RankedTensorType>(result.getType());
  if (in.getRank() != out.getRank() || (in.getRank() == 2 && in.getDimSize(0) != out.getDimSize(0)))
    return op->emitOpError("result ") << out << " must have the input's rows " << in;
  return success();
}

/// Sizes must agree unless one is dynamic (tiled kernel forms).
static bool mismatch(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

/// Every tensor of a step op has a static shape; only the result of a tiled
/// (kernel) form may be dynamic.
static LogicalResult verifyStaticShapes(Operation *op, bool tiled = false) {
  for (Value operand : op->getOperands())
    if (auto type = dyn_cast<RankedTensorType>(operand.getType()); type && !type.hasStaticShape())
      return op->emitOpError("operands must have static shapes, got ") << type;
  if (!tiled)
    for (Type type : op->getResultTypes())
      if (auto tensor = dyn_cast<RankedTensorType>(type); tensor && !tensor.hasStaticShape())
        return op->emitOpError("results must have static shapes, got ") << tensor;
  return success();
}

static LogicalResult verifyTile(Operation *op, ValueRange tile) {
  if (!tile.empty() && tile.size() != 2)
    return op->emitOpError("tile takes a begin and an end, got ") << tile.size() << " values";
  return success();
}

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty weight name");
  auto type = cast<RankedTensorType>(getType());
  if (!type.hasStaticShape())
    return emitOpError("weight '") << getName() << "' must have a static shape";
  WeightFormat format = *weightFormatOf(type.getElementType());
  if (type.getShape().back() % format.blockElements != 0)
    return emitOpError("weight '")
           << getName() << "' has " << type.getShape().back() << " columns, not a whole number of "
           << format.name << " blocks of " << format.blockElements;
  return success();
}

/// Whether `bytes` is the storage of the block-quantized `typed`.
static LogicalResult verifyStorageOf(Operation *op, Type bytes, Type typed) {
  auto weight = cast<RankedTensorType>(typed);
  if (!isBlockQuantized(weight))
    return op->emitOpError("views bytes as a block-quantized tensor, not ") << weight;
  if (bytes != storageBytesType(weight))
    return op->emitOpError("bytes ")
           << bytes << " do not hold " << weight << " (need " << storageBytesType(weight) << ")";
  return success();
}

LogicalResult WeightViewOp::verify() {
  return verifyStorageOf(*this, getBytes().getType(), getResult().getType());
}

LogicalResult StorageBytesOp::verify() {
  return verifyStorageOf(*this, getBytes().getType(), getTyped().getType());
}

OpFoldResult StorageBytesOp::fold(FoldAdaptor) {
  if (auto view = getTyped().getDefiningOp<WeightViewOp>())
    return view.getBytes();
  return {};
}

/// A block-quantized cache's blocks each lie inside one head, so that
/// attention reads a head as whole blocks.
static LogicalResult verifyCacheBlocks(Operation *op, Value cache, int64_t headDim) {
  auto type = cast<RankedTensorType>(cache.getType());
  std::optional<WeightFormat> format = weightFormatOf(type.getElementType());
  if (!format || !format->isBlockQuantized() || headDim % format->blockElements == 0)
    return success();
  return op->emitOpError("a ") << format->name << " cache needs heads of a multiple of "
                               << format->blockElements << " elements, got head_dim " << headDim;
}

LogicalResult KVCacheOp::verify() {
  if (getKind() != "key" && getKind() != "value")
    return emitOpError("kind must be \"key\" or \"value\", got \"") << getKind() << "\"";
  if (getLayerAttr().getInt() < 0)
    return emitOpError("layer must be non-negative, got ") << getLayerAttr().getInt();
  auto type = cast<RankedTensorType>(getType());
  if (!type.hasStaticShape())
    return emitOpError("cache must have a static shape");
  WeightFormat format = *weightFormatOf(type.getElementType());
  if (type.getShape().back() % format.blockElements != 0)
    return emitOpError("cache rows of ") << type.getShape().back() << " are not whole "
                                         << format.name << " blocks of " << format.blockElements;
  return success();
}

/// The block tables and positions of a batch step: one row each per token
/// row, tables at least one entry wide.
static LogicalResult verifyBatchRows(Operation *op, Value rows, Value tables, Value positions) {
  int64_t count = dimOf(rows, 0);
  if (mismatch(dimOf(tables, 0), count) || mismatch(dimOf(positions, 0), count))
    return op->emitOpError("tables and positions need one row per token row (")
           << count << "), got " << dimOf(tables, 0) << " and " << dimOf(positions, 0);
  if (dimOf(tables, 1) < 1)
    return op->emitOpError("block tables need at least one entry per row");
  return success();
}

LogicalResult PagedKVWriteOp::verify() {
  if (failed(verifyStaticShapes(*this)))
    return failure();
  if (mismatch(widthOf(getRows()), dimOf(getCache(), 2)))
    return emitOpError("rows have ")
           << widthOf(getRows()) << " elements but the cache rows have " << dimOf(getCache(), 2);
  return verifyBatchRows(*this, getRows(), getTables(), getPositions());
}

LogicalResult KVWriteOp::verify() {
  if (failed(verifyTile(*this, getTile())) || failed(verifyStaticShapes(*this)))
    return failure();
  if (isTiled() && getRow().getType().getRank() != 2)
    return emitOpError("only T rows are tiled");
  if (mismatch(widthOf(getRow()), dimOf(getCache(), 1)))
    return emitOpError("row has ")
           << widthOf(getRow()) << " elements but the cache rows have " << dimOf(getCache(), 1);
  return success();
}

LogicalResult EmbeddingOp::verify() {
  if (failed(verifyTile(*this, getTile())) || failed(verifyStaticShapes(*this, isTiled())))
    return failure();
  if (isTiled() && getResult().getType().getRank() != 1)
    return emitOpError("a tile's result must be elements of the row, got ")
           << getResult().getType();
  if (!isTiled() && mismatch(dimOf(getTable(), 1), dimOf(getResult(), 0)))
    return emitOpError("table") << weightName(getTable()) << " rows have " << dimOf(getTable(), 1)
                                << " elements but the result has " << dimOf(getResult(), 0);
  return success();
}

LogicalResult EmbeddingsOp::verify() {
  if (failed(verifyTile(*this, getTile())) || failed(verifyStaticShapes(*this, isTiled())))
    return failure();
  if (dimOf(getTable(), 1) != dimOf(getResult(), 1) ||
      (!isTiled() && dimOf(getTokens(), 0) != dimOf(getResult(), 0)))
    return emitOpError("result must be [tokens, table width] = [")
           << dimOf(getTokens(), 0) << ", " << dimOf(getTable(), 1) << "], got " << getType();
  return success();
}

LogicalResult RowOp::verify() {
  if (failed(verifyStaticShapes(*this)))
    return failure();
  int64_t index = getIndexAttr().getInt();
  if (index < 0 || index >= dimOf(getInput(), 0))
    return emitOpError("row ") << index << " is outside the " << dimOf(getInput(), 0) << " rows";
  if (dimOf(getInput(), 1) != dimOf(getResult(), 0))
    return emitOpError("result must have the input's width ") << dimOf(getInput(), 1);
  return success();
}

LogicalResult RMSNormOp::verify() {
  if (failed(verifyTile(*this, getTile())) || failed(verifyStaticShapes(*this, isTiled())))
    return failure();
  if (!isTiled() && getResult().getType() != getInput().getType())
    return emitOpError("result must have the input's type ") << getInput().getType();
  // Tiled: some elements of a vector, or some rows of [T, width].
  if (isTiled() &&
      (getResult().getType().getRank() != getInput().getType().getRank() ||
       (getInput().getType().getRank() == 2 && dimOf(getResult(), 1) != widthOf(getInput()))))
    return emitOpError("a tile's result must be elements of the vector or whole rows, got ")
           << getResult().getType();
  if (getRows() && (getInput().getType().getRank() != 2 || getGroup()))
    return emitOpError("only T rows (not grouped) have live rows");
  if (std::optional<int64_t> group = getGroup()) {
    if (isTiled())
      return emitOpError("a grouped norm is never tiled");
    if (*group <= 0 || widthOf(getInput()) % *group != 0)
      return emitOpError("group of ")
             << *group << " does not divide the input's " << widthOf(getInput()) << " elements";
    if (dimOf(getWeight(), 0) != *group)
      return emitOpError("weight") << weightName(getWeight()) << " has " << dimOf(getWeight(), 0)
                                   << " elements but the group has " << *group;
  } else if (mismatch(widthOf(getInput()), dimOf(getWeight(), 0))) {
    return emitOpError("weight") << weightName(getWeight()) << " has " << dimOf(getWeight(), 0)
                                 << " elements but the input has " << widthOf(getInput());
  }
  if (!(getEps().convertToFloat() > 0.0f))
    return emitOpError("eps must be positive");
  return success();
}

/// q8_input rounds the input to Q8_0 blocks of 32 for a block-quantized
/// weight (Q8_0, Q4_0, Q4_K, Q6_K), whose blocks are multiples of 32.
/// bf16_input rounds the input to bf16 for a bf16 weight.
static LogicalResult verifyInputRounding(Operation *op, bool q8Input, bool bf16Input,
                                         Value weight) {
  Type element = cast<RankedTensorType>(weight.getType()).getElementType();
  if (q8Input && !isBlockQuantized(weight.getType()))
    return op->emitOpError("q8_input needs a block-quantized weight, but")
           << weightName(weight) << " is " << element;
  if (bf16Input && !element.isBF16())
    return op->emitOpError("bf16_input needs a bf16 weight, but")
           << weightName(weight) << " is " << element;
  return success();
}

/// Shared by quill.linear and quill.logits.
template <typename OpTy> static LogicalResult verifyMatVec(OpTy op) {
  Value input = op.getInput(), weight = op.getWeight(), result = op.getResult();
  bool tiled = op.isTiled();
  if (failed(verifyTile(op, op.getTile())) || failed(verifyStaticShapes(op, tiled)))
    return failure();
  if (mismatch(dimOf(weight, 1), widthOf(input)))
    return op->emitOpError("weight")
           << weightName(weight) << " has " << dimOf(weight, 1) << " columns but the input has "
           << widthOf(input) << " elements";
  if (failed(verifySameRows(op, input, result)))
    return failure();
  int64_t perOutput = op.getRowsPerOutput();
  if (!tiled && mismatch(dimOf(weight, 0), perOutput * widthOf(result)))
    return op->emitOpError("weight")
           << weightName(weight) << " has " << dimOf(weight, 0) << " rows but the result has "
           << widthOf(result) << " elements"
           << (perOutput == 2 ? " (swiglu: need twice as many rows)" : "");
  if (Value residual = op.getResidual()) {
    if (!tiled && residual.getType() != result.getType())
      return op->emitOpError("residual of type ")
             << residual.getType() << " does not match the result " << result.getType();
    if (tiled && mismatch(widthOf(residual), dimOf(weight, 0) / perOutput))
      return op->emitOpError("residual has ") << widthOf(residual) << " elements but the op has "
                                              << dimOf(weight, 0) / perOutput << " outputs";
  }
  if (Value bias = op.getBias()) {
    if (perOutput != 1)
      return op->emitOpError("a bias does not combine with the swiglu epilogue");
    if (mismatch(dimOf(bias, 0), dimOf(weight, 0)))
      return op->emitOpError("bias")
             << weightName(bias) << " has " << dimOf(bias, 0) << " elements but the weight has "
             << dimOf(weight, 0) << " rows";
  }
  return verifyInputRounding(op, op.getQ8Input(), op.getBf16Input(), weight);
}

LogicalResult LinearOp::verify() { return verifyMatVec(*this); }

LogicalResult LogitsOp::verify() { return verifyMatVec(*this); }

LogicalResult ConcatOp::verify() {
  if (getParts().empty())
    return emitOpError("needs at least one part");
  int64_t rows = 0, partRows = dimOf(getParts()[0], 0);
  auto resultType = cast<RankedTensorType>(getResult().getType());
  Type element = resultType.getElementType();
  if (resultType.getRank() == 1) {
    // Vectors (biases): f32 elements one part after another.
    for (Value part : getParts()) {
      if (!part.getDefiningOp<WeightOp>() || cast<RankedTensorType>(part.getType()).getRank() != 1)
        return emitOpError("vector parts must be quill.weight vectors");
      rows += dimOf(part, 0);
    }
    if (getScale() || getInterleave())
      return emitOpError("vector parts are neither scaled nor interleaved");
    if (rows != dimOf(getResult(), 0))
      return emitOpError("parts have ")
             << rows << " elements in all but the result has " << dimOf(getResult(), 0);
    return success();
  }
  for (Value part : getParts()) {
    if (!part.getDefiningOp<WeightOp>())
      return emitOpError("parts must be quill.weight ops: packing happens at compile time");
    if (cast<RankedTensorType>(part.getType()).getElementType() != element)
      return emitOpError("part") << weightName(part) << " is "
                                 << cast<RankedTensorType>(part.getType()).getElementType()
                                 << " but the result is " << element
                                 << ": packed parts keep one encoding";
    if (cast<RankedTensorType>(part.getType()).getRank() != 2)
      return emitOpError("part") << weightName(part) << " is not a matrix like the result";
    if (dimOf(part, 1) != dimOf(getResult(), 1))
      return emitOpError("part") << weightName(part) << " has " << dimOf(part, 1)
                                 << " columns but the result has " << dimOf(getResult(), 1);
    if (getInterleave() && dimOf(part, 0) != partRows)
      return emitOpError("interleaved parts must have the same number of rows");
    rows += dimOf(part, 0);
  }
  if (rows != dimOf(getResult(), 0))
    return emitOpError("parts have ")
           << rows << " rows in all but the result has " << dimOf(getResult(), 0);
  if (Value scale = getScale()) {
    if (!scale.getDefiningOp<WeightOp>())
      return emitOpError("scale must be a quill.weight: packing happens at compile time");
    if (!element.isF32())
      return emitOpError("a scale folds only into f32 parts: ")
             << element << " weights would be re-rounded";
    if (dimOf(scale, 0) != dimOf(getResult(), 1))
      return emitOpError("scale") << weightName(scale) << " has " << dimOf(scale, 0)
                                  << " elements but the parts have " << dimOf(getResult(), 1)
                                  << " columns";
  }
  return success();
}

LogicalResult SliceOp::verify() {
  if (failed(verifyStaticShapes(*this)))
    return failure();
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (input.getRank() != result.getRank())
    return emitOpError("a slice keeps its input's rank");
  const char *what = input.getRank() == 1 ? "elements [" : "rows [";
  if (input.getRank() == 2) {
    // Whole rows of a packed weight: the bytes of one part of the pack.
    if (!getInput().getDefiningOp<ConcatOp>())
      return emitOpError("rows are sliced from a quill.concat: packing happens at compile time");
    if (input.getElementType() != result.getElementType() ||
        input.getDimSize(1) != result.getDimSize(1))
      return emitOpError("rows keep the pack's columns and encoding: ")
             << input << " -> " << result;
  }
  int64_t offset = getOffsetAttr().getInt();
  if (offset < 0 || offset + dimOf(getResult(), 0) > dimOf(getInput(), 0))
    return emitOpError(what) << offset << ", " << offset + dimOf(getResult(), 0)
                             << ") lie outside the input of " << dimOf(getInput(), 0);
  return success();
}

/// A rotary frequency table of one inverse frequency per pair of a head,
/// and a positive attention factor.
static LogicalResult verifyRopeFrequencies(Operation *op, Value freqs, int64_t headDim,
                                           std::optional<APFloat> attentionFactor) {
  if (freqs && dimOf(freqs, 0) * 2 != headDim)
    return op->emitOpError("freqs")
           << weightName(freqs) << " has " << dimOf(freqs, 0) << " entries but a " << headDim
           << "-wide head has " << headDim / 2 << " pairs";
  if (attentionFactor && !(attentionFactor->convertToFloat() > 0.0f))
    return op->emitOpError("attention_factor must be positive");
  return success();
}

LogicalResult RoPEOp::verify() {
  if (failed(verifyTile(*this, getTile())) || failed(verifyStaticShapes(*this, isTiled())))
    return failure();
  if (!isTiled() && getResult().getType() != getInput().getType())
    return emitOpError("result must have the input's type ") << getInput().getType();
  if (isTiled() && getInput().getType().getRank() != 2)
    return emitOpError("only the rows of a [T, width] input are tiled");
  int64_t headDim = getHeadDim();
  if (headDim <= 0 || headDim % 2 != 0)
    return emitOpError("head_dim must be positive and even, got ") << headDim;
  if (mismatch(widthOf(getInput()) % headDim, 0))
    return emitOpError("input of ") << widthOf(getInput()) << " elements is not a whole number of "
                                    << headDim << "-wide heads";
  if (!(getTheta().convertToFloat() > 0.0f))
    return emitOpError("theta must be positive");
  if (failed(verifyRopeFrequencies(*this, getFreqs(), headDim, getAttentionFactor())))
    return failure();
  if (auto positions = dyn_cast<RankedTensorType>(getPos().getType()))
    if (getInput().getType().getRank() != 2 ||
        mismatch(positions.getDimSize(0), dimOf(getInput(), 0)))
      return emitOpError("per-row positions need [T, width] input of as many rows, got ")
             << getInput().getType() << " and " << positions;
  return success();
}

/// quill.rope's position type: nothing for an index, `, tensor<Txi32>` for
/// per-row positions.
static ParseResult parseRowPositions(OpAsmParser &parser, Type &type) {
  if (succeeded(parser.parseOptionalComma()))
    return parser.parseType(type);
  type = parser.getBuilder().getIndexType();
  return success();
}
static void printRowPositions(OpAsmPrinter &printer, Operation *, Type type) {
  if (!type.isIndex())
    printer << ", " << type;
}

/// quill.rope's result type: the input's, or `-> type` when tiled.
static ParseResult parseTiledResult(OpAsmParser &parser, Type input, Type &result) {
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(result);
  result = input;
  return success();
}
static void printTiledResult(OpAsmPrinter &printer, Operation *, Type input, Type result) {
  if (result != input)
    printer << "-> " << result;
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyTile(*this, getTile())) || failed(verifyStaticShapes(*this, isTiled())))
    return failure();
  if (std::optional<int64_t> window = getWindow(); window && *window <= 0)
    return emitOpError("window must be positive, got ") << *window;
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads();
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
    return emitOpError("num_heads (")
           << heads << ") must be a positive multiple of num_kv_heads (" << kvHeads << ")";
  int64_t width = widthOf(getQuery());
  if (ShapedType::isDynamic(width) || width % heads != 0)
    return emitOpError("query of ")
           << width << " elements does not split into " << heads << " heads";
  int64_t headDim = width / heads;
  if (getKeys().getType() != getValues().getType())
    return emitOpError("keys and values caches differ in shape");
  if (mismatch(dimOf(getKeys(), 1), headDim * kvHeads))
    return emitOpError("cache rows have ")
           << dimOf(getKeys(), 1) << " elements but " << kvHeads << " kv heads of " << headDim
           << " need " << headDim * kvHeads;
  if (failed(verifyCacheBlocks(*this, getKeys(), headDim)))
    return failure();
  if (getTileRows()) {
    // Units [b, e) of (query row, kv head): each a row of the result, the
    // query heads of one kv head.
    auto result = cast<RankedTensorType>(getResult().getType());
    if (!isTiled() || getQuery().getType().getRank() != 2 || result.getRank() != 2)
      return emitOpError("tile_rows needs a tile and a [T, width] query");
    if (mismatch(result.getDimSize(1), width / kvHeads))
      return emitOpError("result rows have ")
             << result.getDimSize(1) << " elements but a kv head's query heads have "
             << width / kvHeads;
    return success();
  }
  if (failed(verifySameRows(*this, getQuery(), getResult())))
    return failure();
  if (!isTiled() && mismatch(widthOf(getResult()), width))
    return emitOpError("result has ")
           << widthOf(getResult()) << " elements but the query has " << width;
  return success();
}

LogicalResult PagedAttentionOp::verify() {
  if (failed(verifyTile(*this, getTile())) || failed(verifyStaticShapes(*this, isTiled())))
    return failure();
  if (std::optional<int64_t> window = getWindow(); window && *window <= 0)
    return emitOpError("window must be positive, got ") << *window;
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads();
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
    return emitOpError("num_heads (")
           << heads << ") must be a positive multiple of num_kv_heads (" << kvHeads << ")";
  int64_t width = widthOf(getQuery());
  if (width % heads != 0)
    return emitOpError("query of ")
           << width << " elements does not split into " << heads << " heads";
  if (getKeys().getType() != getValues().getType())
    return emitOpError("keys and values caches differ in shape");
  if (mismatch(dimOf(getKeys(), 2), width / heads * kvHeads))
    return emitOpError("cache rows have ")
           << dimOf(getKeys(), 2) << " elements but " << kvHeads << " kv heads of " << width / heads
           << " need " << width / heads * kvHeads;
  if (failed(verifyCacheBlocks(*this, getKeys(), width / heads)))
    return failure();
  if (!isTiled() && getResult().getType() != getQuery().getType())
    return emitOpError("result must have the query's type ") << getQuery().getType();
  if (isTiled()) {
    // A unit's row is a slice of whole kv heads, the same for every unit.
    const int64_t perKvHead = width / kvHeads;
    const int64_t out = getResult().getType().getDimSize(1);
    if (ShapedType::isDynamic(out) || out <= 0 || out % perKvHead != 0 ||
        kvHeads % (out / perKvHead) != 0)
      return emitOpError("a tile's result rows of ") << out << " elements are no equal slice of "
                                                     << kvHeads << " kv heads of " << perKvHead;
  }
  return verifyBatchRows(*this, getQuery(), getTables(), getPositions());
}

LogicalResult SwiGLUOp::verify() { return verifyStaticShapes(*this); }

LogicalResult AddOp::verify() { return verifyStaticShapes(*this); }

LogicalResult ProjectQKVOp::verify() {
  if (failed(verifyTile(*this, getTile())) || failed(verifyStaticShapes(*this, isTiled())))
    return failure();
  int64_t headDim = getHeadDim(), rows = dimOf(getWeight(), 0);
  if (headDim <= 0 || headDim % 2 != 0)
    return emitOpError("head_dim must be positive and even, got ") << headDim;
  if (mismatch(dimOf(getWeight(), 1), dimOf(getInput(), 0)))
    return emitOpError("weight") << weightName(getWeight()) << " has " << dimOf(getWeight(), 1)
                                 << " columns but the input has " << dimOf(getInput(), 0);
  int64_t queryRows = getQueryRows();
  if (queryRows <= 0 || queryRows % headDim != 0 || getKvWidth() % headDim != 0)
    return emitOpError("weight rows (") << rows << ") are not Q heads then K and V rows of "
                                        << getKvWidth() << " in " << headDim << "-wide heads";
  if (!isTiled() && mismatch(dimOf(getResult(), 0), rows))
    return emitOpError("result has ")
           << dimOf(getResult(), 0) << " elements but the weight has " << rows << " rows";
  if (Value bias = getBias(); bias && dimOf(bias, 0) != rows)
    return emitOpError("bias") << weightName(bias) << " has " << dimOf(bias, 0)
                               << " elements but the weight has " << rows << " rows";
  if (failed(verifyInputRounding(*this, getQ8Input(), getBf16Input(), getWeight())) ||
      failed(verifyCacheBlocks(*this, getKeys(), headDim)))
    return failure();
  return verifyRopeFrequencies(*this, getFreqs(), headDim, getAttentionFactor());
}

namespace {

/// Result elements per tile unit of a product over `weight`: a row group's
/// (L weight rows) where it is stored so, otherwise one.
int64_t outputsPerTileUnit(Type weight, int64_t rowsPerOutput) {
  return std::max<int64_t>(1, rowGroupsOf(weight) / rowsPerOutput);
}

} // namespace

int64_t LinearOp::getOutputsPerUnit() {
  return outputsPerTileUnit(getWeight().getType(), getRowsPerOutput());
}

int64_t LogitsOp::getOutputsPerUnit() {
  return outputsPerTileUnit(getWeight().getType(), getRowsPerOutput());
}

int64_t ProjectQKVOp::getRowsPerUnit() {
  std::optional<WeightFormat> format = weightFormatOf(getKeys().getType().getElementType());
  const int64_t rows = format && format->isBlockQuantized() ? format->blockElements : 2;
  return std::lcm(rows, std::max<int64_t>(1, rowGroupsOf(getWeight().getType())));
}

LogicalResult AttentionPartialOp::verify() {
  if (failed(verifyTile(*this, getTile())) || failed(verifyStaticShapes(*this, isTiled())))
    return failure();
  if (std::optional<int64_t> window = getWindow(); window && *window <= 0)
    return emitOpError("window must be positive, got ") << *window;
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads(), width = dimOf(getQuery(), 0);
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0 || width % heads != 0)
    return emitOpError("num_heads (") << heads << ") must be a positive multiple of num_kv_heads ("
                                      << kvHeads << ") dividing the query's " << width;
  if (getChunk() <= 0)
    return emitOpError("chunk must be positive");
  if (getKeys().getType() != getValues().getType() || dimOf(getKeys(), 1) != getHeadDim() * kvHeads)
    return emitOpError("caches must be [context, ") << getHeadDim() * kvHeads << "]";
  if (failed(verifyCacheBlocks(*this, getKeys(), getHeadDim())))
    return failure();
  int64_t rowWidth = getGroup() * (getHeadDim() + 2);
  if (mismatch(dimOf(getResult(), 1), rowWidth) ||
      (!isTiled() && mismatch(dimOf(getResult(), 0), kvHeads * getChunks())))
    return emitOpError("result must be [kv heads x chunks, group x (head_dim + 2)] = [")
           << kvHeads * getChunks() << ", " << rowWidth << "]";
  return success();
}

LogicalResult AttentionMergeOp::verify() {
  if (failed(verifyTile(*this, getTile())) || failed(verifyStaticShapes(*this, isTiled())))
    return failure();
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads();
  // Tiled, the result is some elements: the partials' width gives the whole.
  int64_t width =
      isTiled() ? heads * (dimOf(getPartials(), 1) * kvHeads / heads - 2) : dimOf(getResult(), 0);
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0 || width % heads != 0)
    return emitOpError("num_heads must be a positive multiple of num_kv_heads dividing the result");
  int64_t headDim = width / heads, group = heads / kvHeads;
  if (dimOf(getPartials(), 1) != group * (headDim + 2) || dimOf(getPartials(), 0) % kvHeads != 0)
    return emitOpError("partials must be [kv heads x chunks, ") << group * (headDim + 2) << "]";
  return success();
}

LogicalResult DispatchOp::verify() {
  if (getWork() <= 0 || getGrain() <= 0)
    return emitOpError("work and grain must be positive");
  if (std::optional<int64_t> units = getLiveRows();
      units && (*units <= 0 || getWork() % *units != 0))
    return emitOpError("live_rows must be a positive divisor of the work: ")
           << *units << " units per row of " << getWork();
  for (Attribute attr : getBindings()) {
    auto binding = cast<BindingAttr>(attr);
    StringRef space = binding.getSpace();
    if (space != "weights" && space != "kv" && space != "scratch" && space != "input" &&
        space != "kv_pool")
      return emitOpError("unknown memory space \"") << space << "\"";
    if (binding.getOffset() < 0 || binding.getBytes() <= 0)
      return emitOpError("binding range must be non-negative and non-empty");
  }
  if (std::optional<ArrayRef<int64_t>> writes = getWrites())
    for (int64_t index : *writes)
      if (index < 0 || index >= int64_t(getBindings().size()))
        return emitOpError("writes binding ") << index << " of " << getBindings().size();
  return success();
}

//===----------------------------------------------------------------------===//
// Caches updated in place (CacheUpdateOpInterface)
//===----------------------------------------------------------------------===//

SmallVector<std::pair<unsigned, Value>> KVWriteOp::getUpdatedCaches() { return {{0, getCache()}}; }

SmallVector<std::pair<unsigned, Value>> PagedKVWriteOp::getUpdatedCaches() {
  return {{0, getCache()}};
}

SmallVector<std::pair<unsigned, Value>> ProjectQKVOp::getUpdatedCaches() {
  return {{1, getKeys()}, {2, getValues()}};
}

#include "dialects/Quill/IR/QuillInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/Quill/IR/QuillOps.cpp.inc"
