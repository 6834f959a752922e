// Chat template failures are one-line error values naming where and what:
// syntax errors with line and column, unknown filters and tests,
// raise_exception's message, and the limits that stop runaway templates.
#include "runtime/chat/ChatTemplate.h"

#include <gtest/gtest.h>

namespace {

using quill::ChatRenderInput;
using quill::ChatTemplate;

std::string parseError(const std::string &source) {
  auto t = ChatTemplate::parse(source, "test");
  return t ? "parsed" : t.message();
}

std::string renderError(const std::string &source, quill::jinja::RenderLimits limits = {}) {
  auto t = ChatTemplate::parse(source, "test");
  if (!t)
    return "parse error: " + t.message();
  auto r = t->render(ChatRenderInput{}, limits);
  return r ? "rendered: " + *r : r.message();
}

TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(parseError("a\n{% if x %}\nb\n{% endfor %}"),
            "test: line 4, column 4: unexpected 'endfor', expected 'elif', 'else' or 'endif' to "
            "close the 'if' from line 2");
  EXPECT_EQ(parseError("{{ 1 + }}"), "test: line 1, column 8: unexpected 'end of print statement'");
  EXPECT_EQ(parseError("ok\n  {% foo %}"), "test: line 2, column 6: unknown tag 'foo'");
  EXPECT_EQ(parseError("{% for x in %}{% endfor %}"),
            "test: line 1, column 13: expected an expression, got 'end of statement block'");
  EXPECT_EQ(parseError("{{ 'abc }}"), "test: line 1, column 4: unterminated string literal");
  EXPECT_EQ(parseError("{{ (1, 2] }}"), "test: line 1, column 9: unexpected ']', expected ')'");
  EXPECT_EQ(parseError("{% break %}"), "test: line 1, column 4: 'break' outside of a loop");
  EXPECT_EQ(parseError("{% include 'x' %}"),
            "test: line 1, column 4: the 'include' tag is not supported in chat templates");
}

TEST(JinjaErrors, UnterminatedBlocksAndTags) {
  EXPECT_EQ(parseError("{% if x %}\nabc"),
            "test: line 2, column 4: unexpected end of template, expected 'elif', 'else' or "
            "'endif' to close the 'if' from line 1");
  EXPECT_EQ(parseError("{% for x in y %}{% if x %}{% endfor %}"),
            "test: line 1, column 30: unexpected 'endfor', expected 'elif', 'else' or 'endif' to "
            "close the 'if' from line 1");
  EXPECT_EQ(parseError("text {{ x"),
            "test: line 1, column 6: unexpected end of template, expected '}}'");
  EXPECT_EQ(parseError("{% if x"),
            "test: line 1, column 1: unexpected end of template, expected '%}'");
  EXPECT_EQ(parseError("{# never closed"), "test: line 1, column 1: missing end of comment tag");
  EXPECT_EQ(parseError("{% macro m() %}x"),
            "test: line 1, column 17: unexpected end of template, expected 'endmacro' to close "
            "the 'macro' from line 1");
}

TEST(JinjaErrors, UnknownFilterOrTestIsOneLineAtParse) {
  EXPECT_EQ(parseError("a\n{{ x | nope }}"), "test: line 2, column 8: no filter named 'nope'");
  EXPECT_EQ(parseError("{% if x is shiny %}{% endif %}"),
            "test: line 1, column 9: no test named 'shiny'");
  EXPECT_EQ(parseError("{% set y %}{% endset %}{{ [1]|map('nope')|list }}"), "parsed");
  EXPECT_EQ(renderError("{{ [1]|map('nope')|list }}"), "test: line 1: no filter named 'nope'");
}

TEST(JinjaErrors, RaiseExceptionCarriesTheMessage) {
  EXPECT_EQ(renderError("\n\n{{ raise_exception('Roles must alternate user/assistant') }}"),
            "test: line 3: Roles must alternate user/assistant");
  EXPECT_EQ(renderError("{% if true %}{{ raise_exception('x' ~ 1) }}{% endif %}after"),
            "test: line 1: x1");
}

TEST(JinjaErrors, PythonErrorsReadAsPythonsDo) {
  EXPECT_EQ(renderError("{{ foo.bar }}"), "test: line 1: 'foo' is undefined");
  EXPECT_EQ(renderError("{{ {'a': 1}.b.c }}"), "test: line 1: 'dict object' has no attribute 'b'");
  EXPECT_EQ(renderError("{{ 'a' + 1 }}"),
            "test: line 1: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(renderError("{{ 1 / 0 }}"), "test: line 1: division by zero");
  EXPECT_EQ(renderError("{{ [1].append(2) }}"),
            "test: line 1: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(renderError("{{ 'x' in none }}"),
            "test: line 1: argument of type 'NoneType' is not iterable");
  EXPECT_EQ(renderError("{{ {'a': foo}|tojson }}"),
            "test: line 1: Object of type Undefined is not JSON serializable");
  EXPECT_EQ(renderError("{% set a, b = [1] %}"),
            "test: line 1: not enough values to unpack (expected 2, got 1)");
  EXPECT_EQ(renderError("{% set x = 1 %}{% set x.y = 2 %}"),
            "test: line 1: cannot assign attribute on non-namespace object");
}

TEST(JinjaErrors, RunawayTemplatesStopWithAClearError) {
  EXPECT_EQ(renderError("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
            "test: line 1: macro calls nested too deeply (more than 200, runaway recursion?)");
  quill::jinja::RenderLimits small;
  small.maxSteps = 10000;
  EXPECT_EQ(renderError("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}"
                        "{% endfor %}",
                        small),
            "test: line 1: template ran too long (more than 10000 steps)");
  small.maxOutputBytes = 1000;
  EXPECT_EQ(renderError("{% for i in range(100) %}{{ 'abcdefghijklmnop' }}{% endfor %}", small),
            "test: line 1: output too large (more than 1000 bytes)");
  EXPECT_EQ(renderError("{{ 'x' * 1000000000000 }}"),
            "test: line 1: output too large (more than 67108864 bytes)");
  EXPECT_EQ(renderError("{{ range(1000000)|length }}"),
            "test: line 1: Range too big. The sandbox blocks ranges larger than MAX_RANGE "
            "(100000).");
  EXPECT_EQ(renderError("{% set ns = namespace(a=[]) %}{% for i in range(100000) %}"
                        "{% set ns.a = [ns.a] %}{% endfor %}"),
            "test: line 1: value nested too deeply (more than 512 levels)");
  EXPECT_EQ(renderError("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                        "{% endfor %}"),
            "test: line 1: template ran too long (more than 5000000 steps)");
  std::string deep = std::string(2000, '(') + "1" + std::string(2000, ')');
  EXPECT_NE(parseError("{{ " + deep + " }}").find("expression nested too deeply"),
            std::string::npos);
  std::string deepList = std::string(2000, '[') + std::string(2000, ']');
  EXPECT_NE(parseError("{{ " + deepList + " }}").find("expression nested too deeply"),
            std::string::npos);
}

TEST(JinjaErrors, MessagesJsonIsCheckedOnOneLine) {
  auto bad = quill::parseChatRequest("[{\"role\": \"user\", \"content\": }]");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.message().find('\n'), std::string::npos);
  EXPECT_EQ(bad.message().rfind("messages JSON: parse error at line 1, column 30", 0), 0u)
      << bad.message();
  EXPECT_EQ(quill::parseChatRequest("[{\"content\": \"hi\"}]").message(),
            "messages JSON: message 0: \"role\" must be a string");
  EXPECT_EQ(quill::parseChatRequest("[1]").message(),
            "messages JSON: message 0: expected an object");
  EXPECT_EQ(quill::parseChatRequest("{\"tools\": []}").message(),
            "messages JSON: the object has no \"messages\" array");
  EXPECT_EQ(quill::parseChatRequest("\"hi\"").message(),
            "messages JSON: expected an array of messages or an object with \"messages\"");
  EXPECT_EQ(quill::parseChatRequest(std::string(5000, '[') + std::string(5000, ']')).message(),
            "messages JSON: JSON nested more than 256 deep");
}

TEST(ChatRequest, ArrayAndObjectForms) {
  auto tmpl = ChatTemplate::parse(
      "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
      "{% if tools %}[{{ tools|length }} tools]{% endif %}{% if add_generation_prompt %}<a>"
      "{% endif %}{{ enable_thinking }}");
  ASSERT_TRUE(tmpl) << tmpl.message();
  auto array = quill::parseChatRequest(R"([{"role": "user", "content": "hi"}])");
  ASSERT_TRUE(array) << array.message();
  EXPECT_EQ(*tmpl->render(*array), "<user>hi<a>");
  auto object = quill::parseChatRequest(
      R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "é"}],
          "tools": [{"type": "function"}], "add_generation_prompt": false,
          "enable_thinking": false})");
  ASSERT_TRUE(object) << object.message();
  EXPECT_FALSE(object->addGenerationPrompt);
  EXPECT_EQ(*tmpl->render(*object), "<system>s<user>é[1 tools]False");
}

} // namespace
