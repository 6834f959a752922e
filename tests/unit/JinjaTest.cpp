// placeholder
#include "runtime/chat/ChatTemplate.h"
#include <gtest/gtest.h>
TEST(Jinja, Smoke) {
  auto t = quill::ChatTemplate::parse("{{ 1 + 2 }}");
  ASSERT_TRUE(t) << t.message();
  auto r = t->render({});
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(*r, "3");
}
