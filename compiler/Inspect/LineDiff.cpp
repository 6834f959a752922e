// Myers' O((N+M)D) shortest edit script over lines, grouped into hunks.
#include "compiler/Inspect/LineDiff.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace quill {

namespace {

std::vector<llvm::StringRef> splitLines(llvm::StringRef text) {
  std::vector<llvm::StringRef> lines;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    lines.push_back(line);
    text = rest;
  }
  return lines;
}

/// The edit script between a[lo, aHi) and b[lo, bHi), as ' ', '-', '+'
/// per line in order; empty when it needs more than `maxEdits` edits.
std::string editScript(const std::vector<llvm::StringRef> &a, const std::vector<llvm::StringRef> &b,
                       size_t lo, size_t aHi, size_t bHi, int maxEdits) {
  const long n = long(aHi - lo), m = long(bHi - lo);
  const long maxD = std::min<long>(n + m, maxEdits);
  const long offset = maxD + 1;
  std::vector<long> v(2 * offset + 1, 0);
  // v after each round d: the furthest x reached on every diagonal k = x - y.
  std::vector<std::vector<long>> trace;
  long found = -1;
  for (long d = 0; d <= maxD && found < 0; ++d) {
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]))
                   ? v[offset + k + 1]
                   : v[offset + k - 1] + 1;
      long y = x - k;
      while (x < n && y < m && a[lo + x] == b[lo + y])
        ++x, ++y;
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    // Round d only reached diagonals -d..d: keep that slice.
    trace.emplace_back(v.begin() + offset - d, v.begin() + offset + d + 1);
  }
  if (found < 0)
    return {};
  // Walk back from (n, m) through the rounds.
  std::string script;
  long x = n, y = m;
  for (long d = found; d > 0; --d) {
    const std::vector<long> &prev = trace[d - 1]; // Diagonal k at prev[k + d - 1].
    long k = x - y;
    bool down = k == -d || (k != d && prev[k - 1 + d - 1] < prev[k + 1 + d - 1]);
    long prevK = down ? k + 1 : k - 1;
    long prevX = prev[prevK + d - 1], prevY = prevX - prevK;
    while (x > prevX && y > prevY)
      script += ' ', --x, --y;
    script += down ? '+' : '-';
    x = prevX, y = prevY;
  }
  while (x > 0 && y > 0)
    script += ' ', --x, --y;
  std::reverse(script.begin(), script.end());
  return script;
}

bool isNameCharacter(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' ||
         c == '-';
}

/// The %value, ^block and #alias names of `line`, in order.
std::vector<llvm::StringRef> namesIn(llvm::StringRef line) {
  std::vector<llvm::StringRef> names;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '%' && line[i] != '^' && line[i] != '#')
      continue;
    size_t end = i + 1;
    while (end < line.size() && isNameCharacter(line[end]))
      ++end;
    names.push_back(line.slice(i, end));
    i = end - 1;
  }
  return names;
}

/// `{` minus `}` on `line`, outside string literals: how many regions
/// (or attribute dictionaries, balanced on one line) it opens.
int netBraces(llvm::StringRef line) {
  int net = 0;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else {
      net += (c == '{') - (c == '}');
    }
  }
  return net;
}

/// A one-to-one renaming of names between the two texts, scoped: MLIR
/// numbers each region's values from its parent's count, so sibling
/// regions reuse names, and a name renamed in one region says nothing of
/// the next. Each pair is kept with the region depth it belongs to and
/// dropped when that region closes.
class Renaming {
public:
  /// Adds `from` -> `to` at `depth`, unless it breaks the one-to-one
  /// mapping so far.
  bool add(llvm::StringRef from, llvm::StringRef to, int depth) {
    auto f = forward_.find(from);
    auto b = backward_.find(to);
    if ((f != forward_.end() && f->second != to) || (b != backward_.end() && b->second != from))
      return false;
    if (f == forward_.end()) {
      forward_.emplace(from, to);
      backward_.emplace(to, from);
      added_.push_back({from, to, depth});
    }
    return true;
  }
  size_t mark() const { return added_.size(); }
  /// Drops the pairs added since `mark`.
  void rollBack(size_t mark) {
    while (added_.size() > mark)
      drop();
  }
  /// Drops the pairs of regions deeper than `depth` (pairs lie in the
  /// order of their depths: a deeper region's are dropped as it closes).
  void leave(int depth) {
    while (!added_.empty() && added_.back().depth > depth)
      drop();
  }

private:
  struct Pair {
    llvm::StringRef from, to;
    int depth;
  };
  void drop() {
    forward_.erase(added_.back().from);
    backward_.erase(added_.back().to);
    added_.pop_back();
  }
  std::map<llvm::StringRef, llvm::StringRef> forward_, backward_;
  std::vector<Pair> added_;
};

/// Turns each kept pair of `script` (lines equal as keys) whose names would
/// break a one-to-one renaming between the texts into a removed and an
/// added line: an operand swap (`subf %1, %2` against `subf %2, %1`) is a
/// change even though its key is the same. Values and blocks are renamed
/// per region (by `before`'s braces), aliases across the module.
std::string splitInconsistentRenames(const std::string &script,
                                     const std::vector<llvm::StringRef> &a,
                                     const std::vector<llvm::StringRef> &b) {
  std::string out;
  out.reserve(script.size());
  Renaming values, aliases;
  int depth = 0; // Of `before`, before the line.
  size_t ai = 0, bi = 0;
  for (char kind : script) {
    if (kind == '+') {
      out += kind;
      ++bi;
      continue;
    }
    const int net = netBraces(a[ai]);
    if (kind == ' ') {
      // A line that opens a region names its arguments (and results) there.
      const int at = depth + std::max(net, 0);
      const std::vector<llvm::StringRef> from = namesIn(a[ai]), to = namesIn(b[bi]);
      const size_t valuesMark = values.mark(), aliasesMark = aliases.mark();
      bool consistent = from.size() == to.size();
      for (size_t i = 0; consistent && i < from.size(); ++i)
        consistent = (from[i][0] == '#' ? aliases : values).add(from[i], to[i], at);
      if (!consistent) {
        values.rollBack(valuesMark);
        aliases.rollBack(aliasesMark);
      }
      out += consistent ? " " : "-+";
      ++bi;
    } else {
      out += kind;
    }
    ++ai;
    depth = std::max(0, depth + net);
    values.leave(depth);
  }
  return out;
}

} // namespace

std::string withoutNameNumbers(llvm::StringRef line) {
  std::string key;
  key.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    key += line[i];
    if (line[i] != '%' && line[i] != '^' && line[i] != '#')
      continue;
    for (; i + 1 < line.size() && isNameCharacter(line[i + 1]); ++i)
      if (!std::isdigit(static_cast<unsigned char>(line[i + 1])))
        key += line[i + 1];
  }
  return key;
}

std::vector<DiffHunk> lineDiff(llvm::StringRef before, llvm::StringRef after, int context,
                               int maxEdits, bool *minimal, LineMatch match) {
  const std::vector<llvm::StringRef> lineA = splitLines(before), lineB = splitLines(after);
  // The lines compared: the texts', or their keys.
  std::vector<std::string> keysA, keysB;
  std::vector<llvm::StringRef> a = lineA, b = lineB;
  if (match == LineMatch::IgnoringNames) {
    for (llvm::StringRef line : lineA)
      keysA.push_back(withoutNameNumbers(line));
    for (llvm::StringRef line : lineB)
      keysB.push_back(withoutNameNumbers(line));
    a.assign(keysA.begin(), keysA.end());
    b.assign(keysB.begin(), keysB.end());
  }
  // The common head and tail cost nothing and are most of a pass's output.
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head])
    ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  const size_t aHi = a.size() - tail, bHi = b.size() - tail;
  std::string middle = editScript(a, b, head, aHi, bHi, maxEdits);
  const bool rewritten = middle.empty() && (aHi > head || bHi > head);
  if (rewritten)
    middle = std::string(aHi - head, '-') + std::string(bHi - head, '+');
  if (minimal)
    *minimal = !rewritten;
  std::string script = std::string(head, ' ') + middle + std::string(tail, ' ');
  if (match == LineMatch::IgnoringNames)
    script = splitInconsistentRenames(script, lineA, lineB);

  // Hunks: changes with `context` kept lines each side, merged when close.
  std::vector<DiffHunk> hunks;
  const size_t size = script.size();
  std::vector<size_t> aAt(size + 1), bAt(size + 1);
  for (size_t i = 0, ai = 0, bi = 0; i <= size; ++i) {
    aAt[i] = ai, bAt[i] = bi;
    if (i < size) {
      ai += script[i] != '+';
      bi += script[i] != '-';
    }
  }
  size_t i = 0;
  while (i < size) {
    if (script[i] == ' ') {
      ++i;
      continue;
    }
    size_t begin = i >= size_t(context) ? i - context : 0;
    size_t end = i;
    // Extend while the next change lies within 2 * context kept lines.
    while (end < size) {
      size_t next = end;
      while (next < size && script[next] != ' ')
        ++next;
      size_t kept = next;
      while (kept < size && script[kept] == ' ' && kept - next <= size_t(2 * context))
        ++kept;
      end = next;
      if (kept < size && script[kept] != ' ' && kept - next <= size_t(2 * context))
        end = kept;
      else
        break;
    }
    end = std::min(size, end + context);
    DiffHunk hunk;
    hunk.beforeLine = aAt[begin] + 1;
    hunk.afterLine = bAt[begin] + 1;
    for (size_t j = begin; j < end; ++j)
      hunk.lines.push_back({script[j], script[j] == '+' ? lineB[bAt[j]] : lineA[aAt[j]]});
    hunks.push_back(std::move(hunk));
    i = end;
  }
  return hunks;
}

std::pair<size_t, size_t> diffCounts(const std::vector<DiffHunk> &hunks) {
  size_t removed = 0, added = 0;
  for (const DiffHunk &hunk : hunks)
    for (const DiffLine &line : hunk.lines) {
      removed += line.kind == '-';
      added += line.kind == '+';
    }
  return {removed, added};
}

} // namespace quill
