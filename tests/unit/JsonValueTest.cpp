// The importers' JSON reader: values, escapes, numbers, one-line errors with
// positions, the depth limit, and truncated or bit-flipped documents.
#include "compiler/Import/JsonValue.h"

#include <gtest/gtest.h>

#include <random>

using namespace quill;

TEST(JsonValue, ParsesEveryKind) {
  auto v = parseJson(R"( {"a": [1, -2.5e1, true, false, null, "x"],
                          "b": {"c": {}}, "d": [] } )",
                     "doc");
  ASSERT_TRUE(v.isOk()) << v.message();
  const JsonArray *a = v->find("a")->asArray();
  ASSERT_TRUE(a);
  ASSERT_EQ(a->size(), 6u);
  EXPECT_EQ((*a)[0].asInteger(), 1);
  EXPECT_EQ((*a)[1].asNumber()->value, -25.0);
  EXPECT_FALSE((*a)[1].asInteger().has_value());
  EXPECT_TRUE(*(*a)[2].asBool());
  EXPECT_FALSE(*(*a)[3].asBool());
  EXPECT_TRUE((*a)[4].isNull());
  EXPECT_EQ(*(*a)[5].asString(), "x");
  EXPECT_TRUE(v->find("b")->find("c")->isObject());
  EXPECT_TRUE(v->find("d")->asArray()->empty());
  EXPECT_EQ(v->find("zz"), nullptr);
  EXPECT_EQ((*a)[0].find("a"), nullptr); // Not an object.
}

TEST(JsonValue, StringEscapes) {
  auto v = parseJson(R"(["\"\\\/\b\f\n\r\t", "\u00e9\u4e2d", "\ud83d\ude42",
                        "\u2581t", "raw \u0000 nul"])",
                     "s");
  ASSERT_TRUE(v.isOk()) << v.message();
  const JsonArray &a = *v->asArray();
  EXPECT_EQ(*a[0].asString(), "\"\\/\b\f\n\r\t");
  EXPECT_EQ(*a[1].asString(), "\xC3\xA9\xE4\xB8\xAD");
  EXPECT_EQ(*a[2].asString(), "\xF0\x9F\x99\x82");
  EXPECT_EQ(*a[3].asString(), "\xE2\x96\x81t");
  EXPECT_EQ(*a[4].asString(), std::string("raw \0 nul", 9));
}

TEST(JsonValue, NumbersAndRepeatedKeys) {
  auto v = parseJson(R"({"n": 9007199254740993, "big": 1e400, "k": 1, "k": 2,
                         "neg": -0, "f": 0.5})",
                     "n");
  ASSERT_TRUE(v.isOk()) << v.message();
  EXPECT_EQ(v->find("n")->asInteger(), 9007199254740993);
  EXPECT_FALSE(v->find("big")->asInteger().has_value());
  EXPECT_EQ(v->find("k")->asInteger(), 2); // The last one, like Python.
  EXPECT_EQ(v->find("neg")->asInteger(), 0);
  EXPECT_EQ(v->find("f")->asNumber()->value, 0.5);
}

TEST(JsonValue, ErrorsNameTheSourceAndPosition) {
  struct Case {
    const char *text, *expected;
  };
  for (const Case &c :
       {Case{"{\"a\": 1,\n  \"b\" 2}", "doc: invalid JSON at line 2, column 7: "
                                       "expected ':' after an object key"},
        Case{"[1, 2", "unexpected end of input in an array"},
        Case{"{\"a\": 01}", "expected ',' or '}'"}, Case{"[1.]", "no digits after '.'"},
        Case{"[\"\\x\"]", "bad escape"}, Case{"[\"\\ud800\"]", "unpaired UTF-16 surrogate"},
        Case{"[\"a\nb\"]", "control character"},
        Case{"{} x", "unexpected text after the JSON value"},
        Case{"[tru]", "unexpected character 't'"}, Case{"", "unexpected end of input"},
        Case{"{\"a\":1,}", "expected a string key"}}) {
    auto v = parseJson(c.text, "doc");
    ASSERT_FALSE(v.isOk()) << c.text;
    EXPECT_NE(v.message().find(c.expected), std::string::npos) << v.message();
    EXPECT_EQ(v.message().rfind("doc: invalid JSON at line ", 0), 0u);
    EXPECT_EQ(v.message().find('\n'), std::string::npos) << v.message();
  }
}

TEST(JsonValue, DepthIsBounded) {
  std::string deep(kMaxJsonDepth + 1, '[');
  deep += std::string(kMaxJsonDepth + 1, ']');
  EXPECT_TRUE(parseJson(deep, "ok").isOk());
  std::string tooDeep(100000, '[');
  auto v = parseJson(tooDeep, "deep");
  ASSERT_FALSE(v.isOk());
  EXPECT_NE(v.message().find("nesting deeper than 64"), std::string::npos);
}

TEST(JsonValue, TruncationsAndBitFlipsNeverCrash) {
  const std::string doc = R"({"model": {"type": "BPE", "vocab": {"a": 0, "\u00e9": 1},)"
                          R"( "merges": ["a b", ["c", "d"]]}, "x": [1.5e3, -2, true, null]})";
  for (size_t size = 0; size < doc.size(); ++size) {
    std::string prefix = doc.substr(0, size);
    ASSERT_FALSE(parseJson(prefix, "cut").isOk()) << prefix;
  }
  std::mt19937 rng(99);
  for (int round = 0; round < 3000; ++round) {
    std::string bad = doc;
    for (int flips = 1 + int(rng() % 3); flips > 0; --flips)
      bad[rng() % bad.size()] ^= char(1u << (rng() % 8));
    auto v = parseJson(bad, "flip");
    if (!v.isOk()) {
      EXPECT_EQ(v.message().find('\n'), std::string::npos);
    }
  }
}
