// JSON string quoting for quill-run --json.
#include "runtime/support/Json.h"

#include <gtest/gtest.h>

namespace quill {
namespace {

TEST(Json, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(jsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(jsonQuote("say \"hi\"\\"), "\"say \\\"hi\\\"\\\\\"");
  EXPECT_EQ(jsonQuote("a\nb\tc\r"), "\"a\\nb\\tc\\r\"");
  EXPECT_EQ(jsonQuote(std::string("\x01", 1)), "\"\\u0001\"");
}

TEST(Json, KeepsValidUtf8AndEscapesStrayBytes) {
  EXPECT_EQ(jsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(jsonQuote("\xe2\x82\xac"), "\"\xe2\x82\xac\"");
  EXPECT_EQ(jsonQuote("\xc3"), "\"\\u00c3\""); // Truncated sequence.
  EXPECT_EQ(jsonQuote("\xff"
                      "a"),
            "\"\\u00ffa\""); // Never a lead byte.
}

} // namespace
} // namespace quill
