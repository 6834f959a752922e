// The step of a Llama-architecture model, as llama2.c's forward() computes it.
#include "compiler/Import/StepBuilder.h"

#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace quill {

using namespace mlir;

OwningOpRef<ModuleOp> buildStep(MLIRContext &context, const ModelConfig &config,
                                llvm::StringRef modelName) {
  context.loadDialect<mlir::quill::QuillDialect, func::FuncDialect>();
  OpBuilder b(&context);
  Location loc = NameLoc::get(b.getStringAttr(modelName));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc, modelName);
  b.setInsertionPointToEnd(module->getBody());

  Type f32 = b.getF32Type();
  auto vec = [&](int64_t n) { return RankedTensorType::get({n}, f32); };
  auto mat = [&](int64_t rows, int64_t cols) { return RankedTensorType::get({rows, cols}, f32); };
  const int64_t dim = config.dim, hidden = config.hiddenDim, kvDim = config.kvDim();
  const int64_t vocab = config.vocabSize, context_ = config.seqLen;

  auto index = b.getIndexType();
  auto step = func::FuncOp::create(b, loc, "step",
                                   b.getFunctionType({index, index}, {vec(vocab)}));
  Block *entry = step.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value token = entry->getArgument(0), pos = entry->getArgument(1);

  auto weight = [&](const std::string &name, RankedTensorType type) -> Value {
    return mlir::quill::WeightOp::create(b, NameLoc::get(b.getStringAttr(name)), type, name);
  };
  auto eps = b.getF32FloatAttr(config.normEps);
  auto theta = b.getF32FloatAttr(config.ropeTheta);

  Value embeddings = weight("tok_embeddings", mat(vocab, dim));
  Value x = mlir::quill::EmbeddingOp::create(b, loc, vec(dim), embeddings, token);
  for (int layer = 0; layer < config.nLayers; ++layer) {
    std::string p = "layers." + std::to_string(layer) + ".";
    Location l = NameLoc::get(b.getStringAttr("layer" + std::to_string(layer)));
    auto linear = [&](Value input, const std::string &name, int64_t rows, int64_t cols) -> Value {
      return mlir::quill::LinearOp::create(b, l, vec(rows), input, weight(p + name, mat(rows, cols)),
                                           /*residual=*/Value(), /*tile=*/ValueRange{},
                                           /*swiglu=*/false);
    };
    // Attention block: norm, q/k/v, rotary, cache, attention, output, residual.
    Value h = mlir::quill::RMSNormOp::create(b, l, vec(dim), x, weight(p + "attention_norm", vec(dim)), eps);
    Value q = linear(h, "wq", dim, dim);
    Value k = linear(h, "wk", kvDim, dim);
    Value v = linear(h, "wv", kvDim, dim);
    q = mlir::quill::RoPEOp::create(b, l, vec(dim), q, pos, b.getI64IntegerAttr(config.headDim()), theta);
    k = mlir::quill::RoPEOp::create(b, l, vec(kvDim), k, pos, b.getI64IntegerAttr(config.headDim()), theta);
    Value keys = mlir::quill::KVCacheOp::create(b, l, mat(context_, kvDim), "key", layer);
    Value values = mlir::quill::KVCacheOp::create(b, l, mat(context_, kvDim), "value", layer);
    keys = mlir::quill::KVWriteOp::create(b, l, mat(context_, kvDim), k, keys, pos);
    values = mlir::quill::KVWriteOp::create(b, l, mat(context_, kvDim), v, values, pos);
    Value attended = mlir::quill::AttentionOp::create(b, l, vec(dim), q, keys, values, pos,
                                                config.nHeads, config.nKvHeads, ValueRange{});
    x = mlir::quill::AddOp::create(b, l, vec(dim), x, linear(attended, "wo", dim, dim));
    // Feed-forward block: norm, SwiGLU(w1, w3), w2, residual.
    h = mlir::quill::RMSNormOp::create(b, l, vec(dim), x, weight(p + "ffn_norm", vec(dim)), eps);
    Value gate = linear(h, "w1", hidden, dim);
    Value up = linear(h, "w3", hidden, dim);
    Value act = mlir::quill::SwiGLUOp::create(b, l, vec(hidden), gate, up);
    x = mlir::quill::AddOp::create(b, l, vec(dim), x, linear(act, "w2", dim, hidden));
  }
  x = mlir::quill::RMSNormOp::create(b, loc, vec(dim), x, weight("norm", vec(dim)), eps);
  Value classifier = config.sharedClassifier ? embeddings : weight("output", mat(vocab, dim));
  Value logits = mlir::quill::LogitsOp::create(b, loc, vec(vocab), x, classifier,
                                               /*residual=*/Value(), /*tile=*/ValueRange{},
                                               /*swiglu=*/false);
  func::ReturnOp::create(b, loc, logits);
  return module;
}

} // namespace quill
