// The row-group layout of a Q8_0, Q4_0, Q4_K or Q6_K weight
// (#quill.row_groups in QuillAttrs.td), made from the file's rows when the
// artifact is written.
#pragma once

#include "compiler/Import/TensorConversion.h"
#include "dialects/Quill/IR/RowGroupLayout.h"
#include "runtime/support/Error.h"

#include <cstdint>
#include <vector>

namespace quill {

/// `rows` rows of `encoding` (Q8_0, Q4_0, Q4_K or Q6_K) blocks in `bytes`,
/// rearranged in place into groups of `lanes` rows: per block of a group,
/// the rows' f16 scales (Q8_0, Q4_0: the block's first two bytes; Q6_K: its
/// last two; Q4_K: none), then each 4-byte word of the rest of the block
/// for every row (Q8_0's sign bits flipped), in the file's order except
/// Q6_K's (q6kFileWord). `rows` must be whole groups.
Status groupWeightRows(std::vector<uint8_t> &bytes, SourceDType encoding, uint64_t rows,
                       int64_t lanes);

} // namespace quill
