// Unit tests for the stop-string matcher on its own: matches inside and
// across pieces, the text it holds back and when it lets go, and a
// randomized check that streamed output, however the text is split, equals
// the text cut where the first stop string completes.
#include "runtime/decode/StopMatcher.h"

#include "runtime/sampling/Random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace quill;

namespace {

/// Feeds pieces; returns what each push released, then the flush (or
/// "<stop>" after a stop).
std::vector<std::string> feed(StopMatcher &matcher, const std::vector<std::string> &pieces) {
  std::vector<std::string> out;
  for (const std::string &piece : pieces) {
    StopMatcher::Outcome outcome = matcher.push(piece);
    out.emplace_back(outcome.release);
    if (outcome.stopped) {
      out.emplace_back("<stop>");
      return out;
    }
  }
  out.emplace_back(matcher.flush());
  return out;
}

using Lines = std::vector<std::string>;

} // namespace

TEST(StopMatcher, WithoutStopsEverythingPassesAtOnce) {
  StopMatcher matcher({});
  EXPECT_TRUE(matcher.empty());
  EXPECT_EQ(feed(matcher, {"Once", " upon", ""}), Lines({"Once", " upon", "", ""}));
  StopMatcher emptyOnly({""});
  EXPECT_TRUE(emptyOnly.empty()); // an empty stop string would match anywhere
}

TEST(StopMatcher, StopsInsideOnePiece) {
  StopMatcher matcher({"STOP"});
  EXPECT_FALSE(matcher.empty());
  EXPECT_EQ(feed(matcher, {"Hello STOP world"}), Lines({"Hello ", "<stop>"}));
}

TEST(StopMatcher, StopsAcrossPiecesAndHoldsBackThePrefix) {
  // "S", then "STO", are held back: they may begin the stop string.
  StopMatcher matcher({"STOP"});
  EXPECT_EQ(feed(matcher, {"Hel", "lo S", "TO", "P more"}),
            Lines({"Hel", "lo ", "", "", "<stop>"}));
}

TEST(StopMatcher, ReleasesAHeldPrefixThatDoesNotContinue) {
  StopMatcher matcher({"STOP"});
  EXPECT_EQ(feed(matcher, {"ST", "AR", "S"}), Lines({"", "STAR", "", "S"}));
}

TEST(StopMatcher, AStopStringAtTheVeryStart) {
  StopMatcher matcher({"Once"});
  EXPECT_EQ(feed(matcher, {"On", "ce upon"}), Lines({"", "", "<stop>"}));
}

TEST(StopMatcher, TheEarliestOfSeveralStopsWins) {
  StopMatcher matcher({"def", "XYZ"});
  EXPECT_EQ(feed(matcher, {"abcXYZdef"}), Lines({"abc", "<stop>"}));
  StopMatcher spanning({"defg", "cd"});
  // "cd" completes first, although "defg" began inside the held text too.
  EXPECT_EQ(feed(spanning, {"abc", "defg"}), Lines({"ab", "", "<stop>"}));
}

TEST(StopMatcher, TheFirstStopToCompleteWinsWhateverTheSplit) {
  // In "xabcd", "b" completes at byte 3, before "abcd" at byte 5: the cut is
  // at "b" whether the text comes in one piece or byte by byte.
  StopMatcher whole({"abcd", "b"});
  EXPECT_EQ(feed(whole, {"xabcd"}), Lines({"xa", "<stop>"}));
  StopMatcher bytes({"abcd", "b"});
  // ("a" waits: it may begin "abcd".)
  EXPECT_EQ(feed(bytes, {"x", "a", "b"}), Lines({"x", "", "a", "<stop>"}));
  // Two stops completing at the same byte: the longer one starts first.
  StopMatcher sameEnd({"cd", "bcd"});
  EXPECT_EQ(feed(sameEnd, {"abcde"}), Lines({"a", "<stop>"}));
}

TEST(StopMatcher, SelfOverlappingStopStrings) {
  // Text "aaab" with stop "aab": the match starts at 1, so the output is "a".
  StopMatcher matcher({"aab"});
  EXPECT_EQ(feed(matcher, {"a", "a", "a", "b"}), Lines({"", "", "a", "", "<stop>"}));
}

TEST(StopMatcher, PushesAfterAStopAreIgnored) {
  StopMatcher matcher({"x"});
  EXPECT_TRUE(matcher.push("axb").stopped);
  StopMatcher::Outcome again = matcher.push("more");
  EXPECT_TRUE(again.stopped);
  EXPECT_EQ(again.release, "");
  EXPECT_EQ(matcher.flush(), "");
}

TEST(StopMatcher, MultiByteCharactersAreMatchedAsBytes) {
  // "é" is two bytes; a stop string may start in the middle of a token's
  // bytes and the held-back part is released whole when it is not a match.
  StopMatcher matcher({"\xC3\xA9t\xC3\xA9"}); // "été"
  EXPECT_EQ(feed(matcher, {"l'\xC3", "\xA9t", "\xC3\xA9!"}), Lines({"l'", "", "", "<stop>"}));
  StopMatcher no({"\xC3\xA9t\xC3\xA9"});
  EXPECT_EQ(feed(no, {"l'\xC3", "\xA9tait"}), Lines({"l'", "\xC3\xA9tait", ""}));
}

TEST(StopMatcher, StreamedOutputEqualsTheTextCutAtTheFirstStop) {
  // Random texts over a tiny alphabet (so stop strings occur often and
  // overlap), split at random points.
  Random rng(2024);
  auto randomText = [&](size_t length) {
    std::string text;
    for (size_t i = 0; i < length; ++i)
      text += "abc "[rng.nextU32() % 4];
    return text;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops;
    for (uint32_t s = 0, n = 1 + rng.nextU32() % 3; s < n; ++s)
      stops.push_back(randomText(1 + rng.nextU32() % 4));
    std::string text = randomText(rng.nextU32() % 40);

    // The reference: grow the text a byte at a time and stop at the first
    // length where some stop string is a suffix (the longest, if several).
    size_t cut = std::string::npos;
    for (size_t end = 1; end <= text.size() && cut == std::string::npos; ++end)
      for (const std::string &stop : stops)
        if (stop.size() <= end && text.compare(end - stop.size(), stop.size(), stop) == 0)
          cut = std::min(cut, end - stop.size());
    std::string expected = text.substr(0, cut);

    StopMatcher matcher(stops);
    std::string streamed;
    bool stopped = false;
    size_t at = 0;
    while (at < text.size() && !stopped) {
      size_t length = std::min<size_t>(text.size() - at, rng.nextU32() % 5);
      StopMatcher::Outcome outcome = matcher.push(text.substr(at, length));
      at += length;
      streamed += outcome.release;
      stopped = outcome.stopped;
      // Never shows text that a later match would have to take back.
      ASSERT_EQ(expected.compare(0, streamed.size(), streamed), 0)
          << "trial " << trial << " text '" << text << "'";
    }
    if (!stopped)
      streamed += matcher.flush();
    EXPECT_EQ(stopped, cut != std::string::npos) << "text '" << text << "'";
    EXPECT_EQ(streamed, expected) << "trial " << trial << " text '" << text << "'";
  }
}
