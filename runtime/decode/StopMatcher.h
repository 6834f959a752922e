// Stop strings over streamed text: finds where the first stop string
// completes in the generated text, even when it spans tokens, and releases
// text only once no stop string can still begin inside it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace quill {

/// Matches stop strings (bytes, compared exactly) against text that arrives
/// in pieces. Text that could be the start of a stop string is held back
/// until the next pieces settle it; everything else is released at once, so
/// streamed output never shows part of a stop string nor lags further than
/// the longest stop string.
///
/// Memory: the buffers keep their capacity; after the first pieces, push()
/// allocates nothing. Not thread-safe.
class StopMatcher {
public:
  /// Empty stop strings would match everywhere: they are ignored.
  explicit StopMatcher(std::vector<std::string> stops);

  /// True when there are no stop strings: push() then releases every piece
  /// whole, and callers may skip the matcher.
  bool empty() const { return stops_.empty(); }

  struct Outcome {
    /// Text now safe to show; valid until the next push() or flush().
    std::string_view release;
    /// A stop string completed: `release` ends right before it, and the
    /// text from the stop string on is dropped. The first stop string to
    /// complete wins (the longest, if several complete at the same byte),
    /// exactly as if the text had arrived one byte at a time.
    bool stopped = false;
  };

  /// Appends a piece of generated text. After a stop, further pieces are
  /// ignored (released as nothing, stopped again).
  Outcome push(std::string_view piece);

  /// The text held back, to release when generation ends for another
  /// reason (no stop string can complete any more). Empty after a stop.
  std::string_view flush();

private:
  /// The length of the longest suffix of pending_ that is a proper prefix
  /// of some stop string.
  size_t heldBackLength() const;

  std::vector<std::string> stops_;
  std::string pending_; ///< Received, not yet released.
  std::string released_;
  bool stopped_ = false;
};

} // namespace quill
