// Rewrite patterns from quill compute ops to linalg on tensors, by op family.
#pragma once

#include "mlir/IR/PatternMatch.h"

namespace mlir::quill {

/// quill.linear and quill.logits: matrix-vector products.
void populateLowerMatVecPatterns(RewritePatternSet &patterns, bool prefetchWeights);
/// quill.rmsnorm.
void populateLowerNormPatterns(RewritePatternSet &patterns);
/// quill.add, quill.swiglu, quill.rope.
void populateLowerElementwisePatterns(RewritePatternSet &patterns);
/// quill.embedding and quill.kv_write: reads and writes of state.
void populateLowerStatePatterns(RewritePatternSet &patterns);
/// quill.attention.
void populateLowerAttentionPatterns(RewritePatternSet &patterns);
/// quill.attention_partial and quill.attention_merge (flash-decoding).
void populateLowerFlashAttentionPatterns(RewritePatternSet &patterns);
/// quill.paged_attention: per row, through its block table.
void populateLowerPagedAttentionPatterns(RewritePatternSet &patterns);

} // namespace mlir::quill
