// Line diffs of IR between passes, in the unified format's hunks, for the
// lowering report's before/after views.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace quill {

/// One line of a hunk: kept (' '), removed ('-') or added ('+').
struct DiffLine {
  char kind = ' ';
  llvm::StringRef text;
};

/// A run of changes with up to `context` kept lines around it, and where
/// it starts in each text (1-based, as `diff -u` numbers lines).
struct DiffHunk {
  size_t beforeLine = 0, afterLine = 0;
  std::vector<DiffLine> lines;
};

/// How lines are compared.
enum class LineMatch {
  Exact,
  /// As IR: equal but for the numbers in SSA value names, block labels and
  /// attribute aliases (%12, %cst_3, ^bb2, #map4), which a pass that
  /// inserts one op shifts for the rest of the function, as long as the
  /// kept lines rename one to one (values and blocks per function,
  /// aliases across the module): a line that breaks that, such as an
  /// operand swap, is removed and added.
  IgnoringNames,
};

/// `line` with the digits of every %value, ^block and #alias name dropped:
/// what LineMatch::IgnoringNames compares.
std::string withoutNameNumbers(llvm::StringRef line);

/// The hunks that turn `before` into `after` (their lines point into the
/// texts). A shortest edit script (Myers) while it needs at most
/// `maxEdits` lines changed; past that, the differing middle is given
/// whole as removed then added, which a reader of a rewrite wants anyway,
/// and `minimal` (when given) is set false. Kept lines show `before`'s text.
std::vector<DiffHunk> lineDiff(llvm::StringRef before, llvm::StringRef after, int context = 3,
                               int maxEdits = 1000, bool *minimal = nullptr,
                               LineMatch match = LineMatch::Exact);

/// Lines removed and added over all `hunks`.
std::pair<size_t, size_t> diffCounts(const std::vector<DiffHunk> &hunks);

} // namespace quill
