// The reports' escaping: markup characters as entities (HTML's spelling of
// the double quote), ill-formed UTF-8 as U+FFFD, and the chat templates'
// escaper sharing the rules with Jinja's spelling of the quote.
#include "runtime/bench/ReportHtml.h"
#include "runtime/support/MarkupEscape.h"

#include <gtest/gtest.h>

namespace quill {
namespace {

TEST(ReportHtml, EscapesMarkupAndReplacesIllFormedUtf8) {
  EXPECT_EQ(htmlEscape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
  // A valid two-byte character passes; a lone continuation byte and a
  // truncated three-byte start become one U+FFFD each.
  EXPECT_EQ(htmlEscape("\xC3\xA9 \x80 \xE2\x82"), "\xC3\xA9 \xEF\xBF\xBD \xEF\xBF\xBD");
  EXPECT_EQ(escapeMarkup("\"<\"", "&#34;"), "&#34;&lt;&#34;");
  EXPECT_EQ(escapeMarkup("\x80&"), "\x80&amp;"); // Bytes pass as they are.
  EXPECT_EQ(stepTitle("step"), "decode");
  EXPECT_EQ(stepTitle("prefill"), "prefill");
}

} // namespace
} // namespace quill
