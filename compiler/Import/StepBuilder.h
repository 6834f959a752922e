// Builds the quill dialect module of one transformer step from a model
// configuration; weights are referenced by their canonical names.
#pragma once

#include "runtime/artifact/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>

namespace quill {

/// `func.func @step(%token: index, %pos: index) -> tensor<VOCABxf32>`: the
/// logits after feeding `token` at position `pos`, reading and extending the
/// KV cache. With `prefillTokens` = T > 0 also `func.func @prefill(%tokens:
/// tensor<Txi32>, %pos: index)`: T tokens at positions pos .. pos + T - 1 in
/// one pass over the weights, returning the last token's logits. Names:
/// tok_embeddings, layers.N.{attention_norm,wq,wk,wv,wo,ffn_norm,w1,w2,w3},
/// norm, and output when the classifier is not shared.
///
/// With `batch.rows` = R > 0 also the batch step over a paged KV cache:
/// `func.func @batch(%tokens: tensor<Rxi32>, %positions: tensor<Rxi32>,
/// %tables: tensor<RxMBxi32>, %rows: index, %logit_rows: index) ->
/// tensor<RxVOCABxf32>`: R token rows, each of any sequence at its own
/// position with its own block table (MB = context / block size, rounded
/// up); only the first %rows rows are live, and only the first %logit_rows
/// get logits.
struct BatchStepShape {
  int64_t rows = 0;       ///< Token rows per batch step; 0: no batch step.
  int64_t blockSize = 16; ///< Positions per KV-cache block.
};

/// The bound on the block count in the types of paged caches; the runtime
/// allocates what its budget allows, at most this many.
constexpr int64_t kMaxKVBlocks = 1 << 16;

/// The encoding each weight matrix keeps, by canonical name: "f16", "bf16",
/// "q8_0", "q4_0", "q4_k" or "q6_k" (WeightFormats.h); matrices not named
/// are f32, and so are all vectors.
using WeightEncodings = std::map<std::string, std::string>;

mlir::OwningOpRef<mlir::ModuleOp> buildStep(mlir::MLIRContext &context, const ModelConfig &config,
                                            llvm::StringRef modelName, int64_t prefillTokens = 0,
                                            BatchStepShape batch = {},
                                            const WeightEncodings &encodings = {});

} // namespace quill
