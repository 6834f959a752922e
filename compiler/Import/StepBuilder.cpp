// The steps of a Llama-architecture model, as llama2.c's forward() computes
// them: the decode step of one token, and the prefill step of a chunk of
// tokens (the same layers on [T, width] activations).
#include "compiler/Import/StepBuilder.h"

#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace quill {

using namespace mlir;
namespace q = mlir::quill;

namespace {

/// Builds one step function: `rows` 0 for the decode step on vectors, T for
/// a prefill step on [T, width] activations.
void buildStepFunction(OpBuilder &b, Location loc, const ModelConfig &config, int64_t rows) {
  Type f32 = b.getF32Type();
  auto vec = [&](int64_t n) { return RankedTensorType::get({n}, f32); };
  auto mat = [&](int64_t r, int64_t c) { return RankedTensorType::get({r, c}, f32); };
  // Activations: one vector, or one row per token.
  auto act = [&](int64_t n) { return rows ? mat(rows, n) : vec(n); };
  const int64_t dim = config.dim, hidden = config.hiddenDim, kvDim = config.kvDim();
  const int64_t vocab = config.vocabSize, context = config.seqLen;

  Type index = b.getIndexType();
  Type tokenType = rows ? Type(RankedTensorType::get({rows}, b.getI32Type())) : index;
  auto function = func::FuncOp::create(b, loc, rows ? "prefill" : "step",
                                       b.getFunctionType({tokenType, index}, {vec(vocab)}));
  Block *entry = function.addEntryBlock();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  Value token = entry->getArgument(0), pos = entry->getArgument(1);

  auto weight = [&](const std::string &name, RankedTensorType type) -> Value {
    return q::WeightOp::create(b, NameLoc::get(b.getStringAttr(name)), type, name);
  };
  auto eps = b.getF32FloatAttr(config.normEps);
  auto theta = b.getF32FloatAttr(config.ropeTheta);
  auto headDim = b.getI64IntegerAttr(config.headDim());

  Value embeddings = weight("tok_embeddings", mat(vocab, dim));
  Value x = rows ? q::EmbeddingsOp::create(b, loc, act(dim), embeddings, token).getResult()
                 : q::EmbeddingOp::create(b, loc, vec(dim), embeddings, token).getResult();
  for (int layer = 0; layer < config.nLayers; ++layer) {
    std::string p = "layers." + std::to_string(layer) + ".";
    Location l = NameLoc::get(b.getStringAttr("layer" + std::to_string(layer)));
    auto linear = [&](Value input, const std::string &name, int64_t out, int64_t in) -> Value {
      return q::LinearOp::create(b, l, act(out), input, weight(p + name, mat(out, in)),
                                 /*residual=*/Value(), /*tile=*/ValueRange{}, /*swiglu=*/UnitAttr(), /*normEps=*/FloatAttr());
    };
    // Attention block: norm, q/k/v, rotary, cache, attention, output, residual.
    Value h = q::RMSNormOp::create(b, l, act(dim), x, weight(p + "attention_norm", vec(dim)), eps);
    Value qv = linear(h, "wq", dim, dim);
    Value k = linear(h, "wk", kvDim, dim);
    Value v = linear(h, "wv", kvDim, dim);
    qv = q::RoPEOp::create(b, l, act(dim), qv, pos, headDim, theta);
    k = q::RoPEOp::create(b, l, act(kvDim), k, pos, headDim, theta);
    Value keys = q::KVCacheOp::create(b, l, mat(context, kvDim), "key", layer);
    Value values = q::KVCacheOp::create(b, l, mat(context, kvDim), "value", layer);
    keys = q::KVWriteOp::create(b, l, mat(context, kvDim), k, keys, pos);
    values = q::KVWriteOp::create(b, l, mat(context, kvDim), v, values, pos);
    Value attended = q::AttentionOp::create(b, l, act(dim), qv, keys, values, pos, config.nHeads,
                                            config.nKvHeads, ValueRange{});
    x = q::AddOp::create(b, l, act(dim), x, linear(attended, "wo", dim, dim));
    // Feed-forward block: norm, SwiGLU(w1, w3), w2, residual.
    h = q::RMSNormOp::create(b, l, act(dim), x, weight(p + "ffn_norm", vec(dim)), eps);
    Value gate = linear(h, "w1", hidden, dim);
    Value up = linear(h, "w3", hidden, dim);
    Value activated = q::SwiGLUOp::create(b, l, act(hidden), gate, up);
    x = q::AddOp::create(b, l, act(dim), x, linear(activated, "w2", dim, hidden));
  }
  // Only the last token's logits are needed: the next token follows it.
  if (rows)
    x = q::RowOp::create(b, loc, vec(dim), x, rows - 1);
  x = q::RMSNormOp::create(b, loc, vec(dim), x, weight("norm", vec(dim)), eps);
  Value classifier = config.sharedClassifier ? embeddings : weight("output", mat(vocab, dim));
  Value logits = q::LogitsOp::create(b, loc, vec(vocab), x, classifier, /*residual=*/Value(),
                                     /*tile=*/ValueRange{}, /*swiglu=*/UnitAttr(), /*normEps=*/FloatAttr());
  func::ReturnOp::create(b, loc, logits);
}

} // namespace

OwningOpRef<ModuleOp> buildStep(MLIRContext &context, const ModelConfig &config,
                                llvm::StringRef modelName, int64_t prefillTokens) {
  context.loadDialect<q::QuillDialect, func::FuncDialect>();
  OpBuilder b(&context);
  Location loc = NameLoc::get(b.getStringAttr(modelName));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc, modelName);
  b.setInsertionPointToEnd(module->getBody());
  buildStepFunction(b, loc, config, /*rows=*/0);
  if (prefillTokens > 0)
    buildStepFunction(b, loc, config, prefillTokens);
  return module;
}

} // namespace quill
