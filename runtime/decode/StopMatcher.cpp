// The stop-string matcher.
#include "runtime/decode/StopMatcher.h"

#include <algorithm>

namespace quill {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (std::string &stop : stops)
    if (!stop.empty())
      stops_.push_back(std::move(stop));
}

size_t StopMatcher::heldBackLength() const {
  // Longest first: the first suffix that starts some stop string is the one
  // to hold. Suffixes longer than the longest stop string minus one cannot
  // be proper prefixes, so the work is bounded by the stop strings.
  size_t longest = 0;
  for (const std::string &stop : stops_)
    longest = std::max(longest, stop.size() - 1);
  const std::string_view text = pending_;
  for (size_t length = std::min(longest, text.size()); length > 0; --length) {
    std::string_view suffix = text.substr(text.size() - length);
    for (const std::string &stop : stops_)
      if (stop.size() > length && std::string_view(stop).substr(0, length) == suffix)
        return length;
  }
  return 0;
}

StopMatcher::Outcome StopMatcher::push(std::string_view piece) {
  released_.clear();
  if (stopped_)
    return {released_, true};
  pending_.append(piece);
  // Generation stops where the first stop string completes, as if the text
  // came one byte at a time, so the result cannot depend on how the text
  // is split into tokens. pending_ held no whole stop string before this
  // piece (it would have stopped), and each stop string's first occurrence
  // is also the first to end; among them the earliest end wins, then the
  // earliest start (the longest stop string ending there).
  size_t first = std::string::npos, firstEnd = std::string::npos;
  for (const std::string &stop : stops_) {
    size_t at = pending_.find(stop);
    if (at == std::string::npos)
      continue;
    size_t end = at + stop.size();
    if (end < firstEnd || (end == firstEnd && at < first)) {
      first = at;
      firstEnd = end;
    }
  }
  if (first != std::string::npos) {
    released_.assign(pending_, 0, first);
    pending_.clear();
    stopped_ = true;
    return {released_, true};
  }
  size_t keep = heldBackLength();
  released_.assign(pending_, 0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return {released_, false};
}

std::string_view StopMatcher::flush() {
  released_.clear();
  released_.swap(pending_);
  return released_;
}

} // namespace quill
