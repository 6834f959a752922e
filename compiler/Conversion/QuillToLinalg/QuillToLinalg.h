// Rewrite patterns from quill compute ops to linalg on tensors, by op family.
#pragma once

#include "compiler/Conversion/QuillToLinalg/LaneReduction.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::quill {

/// quill.linear, quill.logits and quill.project_qkv: matrix-vector
/// products, their reductions spread over a warp's lanes per `lanes`.
void populateLowerMatVecPatterns(RewritePatternSet &patterns, bool prefetchWeights,
                                 LaneMode lanes);
/// quill.rmsnorm; element tiles with the sum of squares spread per `lanes`.
void populateLowerNormPatterns(RewritePatternSet &patterns, LaneMode lanes);
/// quill.add, quill.swiglu, quill.rope.
void populateLowerElementwisePatterns(RewritePatternSet &patterns);
/// quill.embedding and quill.kv_write: reads and writes of state.
void populateLowerStatePatterns(RewritePatternSet &patterns);
/// quill.attention; query-row tiles (prefill on the GPU) a warp per row per
/// `lanes`.
void populateLowerAttentionPatterns(RewritePatternSet &patterns, LaneMode lanes);
/// quill.attention_partial and quill.attention_merge (flash-decoding); the
/// partials a warp per unit per `lanes`.
void populateLowerFlashAttentionPatterns(RewritePatternSet &patterns, LaneMode lanes);
/// quill.paged_attention: per row, through its block table.
void populateLowerPagedAttentionPatterns(RewritePatternSet &patterns);

} // namespace mlir::quill
