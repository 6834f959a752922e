// Builds the quill dialect module of one transformer step from a model
// configuration; weights are referenced by their canonical names.
#pragma once

#include "runtime/artifact/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace quill {

/// `func.func @step(%token: index, %pos: index) -> tensor<VOCABxf32>`: the
/// logits after feeding `token` at position `pos`, reading and extending the
/// KV cache. With `prefillTokens` = T > 0 also `func.func @prefill(%tokens:
/// tensor<Txi32>, %pos: index)`: T tokens at positions pos .. pos + T - 1 in
/// one pass over the weights, returning the last token's logits. Names:
/// tok_embeddings, layers.N.{attention_norm,wq,wk,wv,wo,ffn_norm,w1,w2,w3},
/// norm, and output when the classifier is not shared.
mlir::OwningOpRef<mlir::ModuleOp> buildStep(mlir::MLIRContext &context,
                                            const ModelConfig &config,
                                            llvm::StringRef modelName,
                                            int64_t prefillTokens = 0);

} // namespace quill
