// The steps of a Llama-family model, as llama2.c's forward() computes them
// with the other families' features where the config has them (Qwen2's QKV
// biases, Qwen3's q/k norms and head width, scaled RoPE frequencies): the decode step of one token,
// the prefill step of a chunk of tokens (the same layers on [T, width] activations), and the batch
// step (token rows of many sequences over a paged KV cache).
#include "compiler/Import/StepBuilder.h"

#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace quill {

using namespace mlir;
namespace q = mlir::quill;

namespace {

enum class StepKind { Decode, Prefill, Batch };

/// Builds one step function: the decode step on vectors (`rows` 0), or a
/// prefill or batch step on [rows, width] activations.
void buildStepFunction(OpBuilder &b, Location loc, const ModelConfig &config,
                       const WeightEncodings &encodings, StepKind kind, int64_t rows,
                       int64_t blockSize = 0) {
  const bool batch = kind == StepKind::Batch;
  Type f32 = b.getF32Type();
  auto vec = [&](int64_t n) { return RankedTensorType::get({n}, f32); };
  auto mat = [&](int64_t r, int64_t c) { return RankedTensorType::get({r, c}, f32); };
  // The caches hold the compile-time KV type; attention widens what it reads.
  Type kvElement = mlir::quill::weightElementType(b.getContext(), kvTypeName(config.kvType));
  auto cacheMatrix = [&](int64_t r, int64_t c) { return RankedTensorType::get({r, c}, kvElement); };
  // Activations: one vector, or one row per token.
  auto act = [&](int64_t n) { return rows ? mat(rows, n) : vec(n); };
  const int64_t dim = config.dim, hidden = config.hiddenDim, kvDim = config.kvDim();
  const int64_t vocab = config.vocabSize, context = config.seqLen;

  Type index = b.getIndexType();
  auto rowInts = RankedTensorType::get({rows}, b.getI32Type());
  const int64_t tableWidth = batch ? (context + blockSize - 1) / blockSize : 0;
  SmallVector<Type> inputs;
  if (batch)
    inputs = {rowInts, rowInts, RankedTensorType::get({rows, tableWidth}, b.getI32Type()), index,
              index};
  else
    inputs = {rows ? Type(rowInts) : index, index};
  Type result = batch ? mat(rows, vocab) : vec(vocab);
  const char *name = batch ? "batch" : rows ? "prefill" : "step";
  auto function = func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, {result}));
  Block *entry = function.addEntryBlock();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  // Decode and prefill: (token(s), pos). Batch: per-row positions and block
  // tables, the live row count and the count of rows that need logits.
  Value token = entry->getArgument(0), pos = entry->getArgument(1);
  Value tables = batch ? entry->getArgument(2) : Value();
  Value liveRows = batch ? entry->getArgument(3) : Value();
  Value logitRows = batch ? entry->getArgument(4) : Value();

  // A matrix in the encoding it keeps; vectors (norm weights) in f32.
  auto weight = [&](const std::string &name, RankedTensorType type) -> Value {
    auto encoding = encodings.find(name);
    if (type.getRank() == 2 && encoding != encodings.end())
      type = RankedTensorType::get(type.getShape(),
                                   q::weightElementType(b.getContext(), encoding->second));
    return q::WeightOp::create(b, NameLoc::get(b.getStringAttr(name)), type, name);
  };
  auto eps = b.getF32FloatAttr(config.normEps);
  auto theta = b.getF32FloatAttr(config.ropeTheta);
  auto headDim = b.getI64IntegerAttr(config.headDim());
  const int64_t qDim = config.qDim();
  // A RoPE scaling's inverse frequencies, computed at import, and YaRN's
  // attention factor.
  Value freqs = config.ropeFrequencies.empty()
                    ? Value()
                    : weight("rope_freqs", vec(int64_t(config.ropeFrequencies.size())));
  // Mistral's sliding window, where it is shorter than the context.
  IntegerAttr window = config.slidingWindow > 0 && config.slidingWindow < config.seqLen
                           ? b.getI64IntegerAttr(config.slidingWindow)
                           : IntegerAttr();
  FloatAttr attentionFactor = config.ropeAttentionFactor != 1.0f
                                  ? b.getF32FloatAttr(config.ropeAttentionFactor)
                                  : FloatAttr();

  Value embeddings = weight("tok_embeddings", mat(vocab, dim));
  Value x =
      rows ? q::EmbeddingsOp::create(b, loc, act(dim), embeddings, token, /*tile=*/ValueRange{})
                 .getResult()
           : q::EmbeddingOp::create(b, loc, vec(dim), embeddings, token, /*tile=*/ValueRange{})
                 .getResult();
  for (int layer = 0; layer < config.nLayers; ++layer) {
    std::string p = "layers." + std::to_string(layer) + ".";
    Location l = NameLoc::get(b.getStringAttr("layer" + std::to_string(layer)));
    auto linear = [&](Value input, const std::string &name, int64_t out, int64_t in,
                      const std::string &biasName = "") -> Value {
      Value bias = biasName.empty() ? Value() : weight(p + biasName, vec(out));
      return q::LinearOp::create(b, l, act(out), input, weight(p + name, mat(out, in)),
                                 /*residual=*/Value(), bias, /*tile=*/ValueRange{}, liveRows,
                                 /*swiglu=*/UnitAttr(), /*normEps=*/FloatAttr(),
                                 /*q8Input=*/UnitAttr(), /*bf16Input=*/UnitAttr());
    };
    auto rope = [&](Value input, int64_t width) -> Value {
      return q::RoPEOp::create(b, l, act(width), input, pos, liveRows, freqs,
                               /*tile=*/ValueRange{}, headDim, theta, attentionFactor);
    };
    // Attention block: norm, q/k/v (with Qwen2's biases), Qwen3's per-head
    // q/k norms, rotary, cache, attention, output, residual.
    Value h = q::RMSNormOp::create(b, l, act(dim), x, weight(p + "attention_norm", vec(dim)), eps,
                                   liveRows, /*tile=*/ValueRange{}, /*group=*/IntegerAttr());
    const bool bias = config.qkvBias;
    Value qv = linear(h, "wq", qDim, dim, bias ? "bq" : "");
    Value k = linear(h, "wk", kvDim, dim, bias ? "bk" : "");
    Value v = linear(h, "wv", kvDim, dim, bias ? "bv" : "");
    if (config.qkNorm) {
      int64_t width = config.headDim();
      qv = q::RMSNormOp::create(b, l, act(qDim), qv, weight(p + "q_norm", vec(width)), eps,
                                /*rows=*/Value(), /*tile=*/ValueRange{}, headDim);
      k = q::RMSNormOp::create(b, l, act(kvDim), k, weight(p + "k_norm", vec(width)), eps,
                               /*rows=*/Value(), /*tile=*/ValueRange{}, headDim);
    }
    qv = rope(qv, qDim);
    k = rope(k, kvDim);
    Value attended;
    if (batch) {
      auto pool = RankedTensorType::get({kMaxKVBlocks, blockSize, kvDim}, kvElement);
      Value keys = q::KVCacheOp::create(b, l, pool, "key", layer);
      Value values = q::KVCacheOp::create(b, l, pool, "value", layer);
      keys = q::PagedKVWriteOp::create(b, l, pool, k, keys, tables, pos, liveRows);
      values = q::PagedKVWriteOp::create(b, l, pool, v, values, tables, pos, liveRows);
      attended = q::PagedAttentionOp::create(b, l, act(qDim), qv, keys, values, tables, pos,
                                             config.nHeads, config.nKvHeads, ValueRange{}, window);
    } else {
      auto cache = cacheMatrix(context, kvDim);
      Value keys = q::KVCacheOp::create(b, l, cache, "key", layer);
      Value values = q::KVCacheOp::create(b, l, cache, "value", layer);
      keys = q::KVWriteOp::create(b, l, cache, k, keys, pos, /*tile=*/ValueRange{});
      values = q::KVWriteOp::create(b, l, cache, v, values, pos, /*tile=*/ValueRange{});
      attended = q::AttentionOp::create(b, l, act(qDim), qv, keys, values, pos, config.nHeads,
                                        config.nKvHeads, ValueRange{}, /*tile_rows=*/false, window);
    }
    x = q::AddOp::create(b, l, act(dim), x, linear(attended, "wo", dim, qDim));
    // Feed-forward block: norm, SwiGLU(w1, w3), w2, residual.
    h = q::RMSNormOp::create(b, l, act(dim), x, weight(p + "ffn_norm", vec(dim)), eps, liveRows,
                             /*tile=*/ValueRange{}, /*group=*/IntegerAttr());
    Value gate = linear(h, "w1", hidden, dim);
    Value up = linear(h, "w3", hidden, dim);
    Value activated = q::SwiGLUOp::create(b, l, act(hidden), gate, up);
    x = q::AddOp::create(b, l, act(dim), x, linear(activated, "w2", dim, hidden));
  }
  // A prefill needs only the last token's logits: the next token follows
  // it. A batch step computes them for its first logit_rows rows.
  if (kind == StepKind::Prefill)
    x = q::RowOp::create(b, loc, vec(dim), x, rows - 1);
  Type finalType = batch ? mat(rows, dim) : vec(dim);
  x = q::RMSNormOp::create(b, loc, finalType, x, weight("norm", vec(dim)), eps, liveRows,
                           /*tile=*/ValueRange{}, /*group=*/IntegerAttr());
  Value classifier = config.sharedClassifier ? embeddings : weight("output", mat(vocab, dim));
  Value logits = q::LogitsOp::create(
      b, loc, result, x, classifier, /*residual=*/Value(),
      /*bias=*/Value(), /*tile=*/ValueRange{}, logitRows, /*swiglu=*/UnitAttr(),
      /*normEps=*/FloatAttr(), /*q8Input=*/UnitAttr(), /*bf16Input=*/UnitAttr());
  func::ReturnOp::create(b, loc, logits);
}

} // namespace

OwningOpRef<ModuleOp> buildStep(MLIRContext &context, const ModelConfig &config,
                                llvm::StringRef modelName, int64_t prefillTokens,
                                BatchStepShape batch, const WeightEncodings &encodings) {
  context.loadDialect<q::QuillDialect, func::FuncDialect>();
  OpBuilder b(&context);
  Location loc = NameLoc::get(b.getStringAttr(modelName));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc, modelName);
  b.setInsertionPointToEnd(module->getBody());
  buildStepFunction(b, loc, config, encodings, StepKind::Decode, /*rows=*/0);
  if (prefillTokens > 0)
    buildStepFunction(b, loc, config, encodings, StepKind::Prefill, prefillTokens);
  if (batch.rows > 0)
    buildStepFunction(b, loc, config, encodings, StepKind::Batch, batch.rows, batch.blockSize);
  return module;
}

} // namespace quill
