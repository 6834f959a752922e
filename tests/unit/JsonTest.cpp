// JSON string quoting for quill-run --json, and well-formed UTF-8 streams.
#include "runtime/support/Json.h"
#include "runtime/support/Utf8.h"

#include <gtest/gtest.h>

namespace quill {
namespace {

TEST(Json, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(jsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(jsonQuote("say \"hi\"\\"), "\"say \\\"hi\\\"\\\\\"");
  EXPECT_EQ(jsonQuote("a\nb\tc\r"), "\"a\\nb\\tc\\r\"");
  EXPECT_EQ(jsonQuote(std::string("\x01", 1)), "\"\\u0001\"");
}

TEST(Json, KeepsValidUtf8AndReplacesIllFormedBytes) {
  EXPECT_EQ(jsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(jsonQuote("\xe2\x82\xac"), "\"\xe2\x82\xac\"");
  EXPECT_EQ(jsonQuote("\xf0\x9f\x99\x82"), "\"\xf0\x9f\x99\x82\""); // U+1F642.
  // U+FFFD (EF BF BD) per maximal subpart, as Python's errors="replace".
  EXPECT_EQ(jsonQuote("\xc3"), "\"\xef\xbf\xbd\""); // Truncated sequence.
  EXPECT_EQ(jsonQuote("\xff"
                      "a"),
            "\"\xef\xbf\xbd"
            "a\""); // Never a lead byte.
  // Overlong "/" (C0 AF) and 3-byte NUL (E0 80 80): one U+FFFD per byte.
  EXPECT_EQ(jsonQuote("\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\"");
  EXPECT_EQ(jsonQuote("\xe0\x80\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
  // A surrogate (ED A0 80) and a code point past U+10FFFF (F4 90 80 80).
  EXPECT_EQ(jsonQuote("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
  EXPECT_EQ(jsonQuote("\xf4\x90\x80\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
  // E2 82 then 'x': the two bytes are one maximal subpart, one U+FFFD.
  EXPECT_EQ(jsonQuote("\xe2\x82x"), "\"\xef\xbf\xbdx\"");
}

TEST(Utf8Stream, AnIncompleteCharacterWaitsForItsLastByte) {
  Utf8Stream stream;
  // U+20AC in three pieces, then U+1F642 split 1 + 3.
  EXPECT_EQ(stream.push("a\xe2"), "a");
  EXPECT_EQ(stream.push("\x82"), "");
  EXPECT_EQ(stream.push("\xac"
                        "b"),
            "\xe2\x82\xac"
            "b");
  EXPECT_EQ(stream.push("\xf0"), "");
  EXPECT_EQ(stream.push("\x9f\x99\x82"), "\xf0\x9f\x99\x82");
  EXPECT_EQ(stream.finish(), "");
}

TEST(Utf8Stream, IllFormedBytesBecomeReplacementCharacters) {
  Utf8Stream stream;
  // C0 B3 (an overlong) as soon as it is seen; a lead byte then ASCII.
  EXPECT_EQ(stream.push("\xc0\xb3"), "\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(stream.push("\xe2\x82"), "");
  EXPECT_EQ(stream.push("z"), "\xef\xbf\xbdz");
  // A character still incomplete at the end.
  EXPECT_EQ(stream.push("\xf0\x9f"), "");
  EXPECT_EQ(stream.finish(), "\xef\xbf\xbd");
  EXPECT_EQ(stream.finish(), "");
}

} // namespace
} // namespace quill
