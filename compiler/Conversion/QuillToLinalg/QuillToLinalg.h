// Rewrite patterns from quill compute ops to linalg on tensors, by op family.
// Patterns whose ops reduce (products, norms, attention) build their
// reductions through a KernelBuilder: genericKernelBuilder() for the
// target-neutral lowering, a target's own in its lowering passes.
#pragma once

#include "compiler/Conversion/QuillToLinalg/KernelBuilder.h"

#include "mlir/IR/PatternMatch.h"

#include <memory>

namespace mlir::quill {

/// quill.linear, quill.logits and quill.project_qkv: matrix-vector and
/// matrix-matrix products with their epilogues.
void populateLowerMatVecPatterns(RewritePatternSet &patterns,
                                 std::shared_ptr<const KernelBuilder> builder);
/// quill.rmsnorm.
void populateLowerNormPatterns(RewritePatternSet &patterns,
                               std::shared_ptr<const KernelBuilder> builder);
/// quill.add, quill.swiglu, quill.rope.
void populateLowerElementwisePatterns(RewritePatternSet &patterns);
/// quill.rope alone; with `vectorForm` (the CPU target's form), a batch
/// step's table of cos and sin is built row by row in vectors (every row
/// the same code, whatever the live row count), and the rotation runs on
/// vectors of each head's pairs instead of a generic that gathers them.
void populateLowerRoPEPatterns(RewritePatternSet &patterns, bool vectorForm);
/// quill.embedding and quill.kv_write: reads and writes of state.
void populateLowerStatePatterns(RewritePatternSet &patterns);
/// quill.attention (one query, or T query rows).
void populateLowerAttentionPatterns(RewritePatternSet &patterns,
                                    std::shared_ptr<const KernelBuilder> builder);
/// quill.attention_partial and quill.attention_merge (flash-decoding).
void populateLowerFlashAttentionPatterns(RewritePatternSet &patterns,
                                         std::shared_ptr<const KernelBuilder> builder);
/// quill.paged_attention: per row, through its block table.
void populateLowerPagedAttentionPatterns(RewritePatternSet &patterns,
                                         std::shared_ptr<const KernelBuilder> builder);
/// Every pattern above, the reducing ones with `builder`.
void populateQuillToLinalgPatterns(RewritePatternSet &patterns,
                                   std::shared_ptr<const KernelBuilder> builder);

/// Ops that may remain after lowering to linalg: the schedule, its
/// dispatches, and the references to weights and caches.
bool isLoweredQuillOp(Operation *op);

} // namespace mlir::quill
