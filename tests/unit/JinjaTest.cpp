// The Jinja constructs chat templates use, one small case each. Every
// expected string is what Python's jinja2 renders in HF's environment;
// tests/chat/check_jinja_cases.py re-derives them all from jinja2 (run it
// after editing a case).
#include "runtime/chat/ChatTemplate.h"
#include "runtime/chat/JinjaJson.h"

#include <gtest/gtest.h>

namespace {

struct Case {
  const char *source;
  const char *variables; ///< A JSON object of template variables.
  const char *expected;
};

std::string render(const std::string &source, const std::string &variables) {
  auto tmpl = quill::ChatTemplate::parse(source, "test");
  if (!tmpl)
    return "PARSE ERROR: " + tmpl.message();
  quill::ChatRenderInput input;
  input.messages = quill::jinja::Value::list({});
  input.now = 1721952000;
  auto vars = quill::jinja::valueFromJson(variables);
  if (!vars)
    return "BAD VARIABLES: " + vars.message();
  for (const auto &[k, v] : vars->asDict().entries)
    input.extraVariables.emplace_back(k.asString(), v);
  auto out = tmpl->render(input);
  return out ? *out : "RENDER ERROR: " + out.message();
}

void check(const std::vector<Case> &cases) {
  for (const Case &c : cases)
    EXPECT_EQ(render(c.source, c.variables), c.expected) << "template: " << c.source;
}

TEST(Jinja, TextAndComments) {
  check({
      {R"J(plain text)J", R"J({})J", R"J(plain text)J"},
      {R"J(a{# comment #}b)J", R"J({})J", R"J(ab)J"},
      {R"J(a {#- comment -#} b)J", R"J({})J", R"J(ab)J"},
      {R"J(line
)J",
       R"J({})J", R"J(line)J"},
      {R"J(two

)J",
       R"J({})J", R"J(two
)J"},
      {R"J(a{% raw %}{{ x }}{% endraw %}b)J", R"J({})J", R"J(a{{ x }}b)J"},
      {R"J({{ '{{' }}x{{ '}}' }})J", R"J({})J", R"J({{x}})J"},
  });
}

TEST(Jinja, WhitespaceControl) {
  check({
      {R"J(a  {{- 'b' -}}  c)J", R"J({})J", R"J(abc)J"},
      {R"J(a
{% if true %}
b
{% endif %}
c)J",
       R"J({})J", R"J(a
b
c)J"},
      {R"J(  {% if true %}x{% endif %}
y)J",
       R"J({})J", R"J(xy)J"},
      {R"J(  {%+ if true %}x{% endif %})J", R"J({})J", R"J(  x)J"},
      {R"J({% if true +%}
x{% endif %})J",
       R"J({})J", R"J(
x)J"},
      {R"J(  {{ 'v' }}
w)J",
       R"J({})J", R"J(  v
w)J"},
      {R"J(a
    {#- note #}
b)J",
       R"J({})J", R"J(ab)J"},
      {R"J({% for i in [1, 2] %}
  {{ i }}
{% endfor %})J",
       R"J({})J", R"J(  1
  2
)J"},
      {R"J(x {%- if true %} y {% endif -%} z)J", R"J({})J", R"J(x y z)J"},
  });
}

TEST(Jinja, Literals) {
  check({
      {R"J({{ 'a\'b' }}|{{ "q\"q" }}|{{ 'tab\there' }}|{{ 'nl\nx' }})J", R"J({})J",
       "a'b|q\"q|tab\there|nl\nx"},
      {R"J({{ '\u00e9\x41\\' }})J", R"J({})J", R"J(éA\)J"},
      {R"J({{ 'a' 'b' }})J", R"J({})J", R"J(ab)J"},
      {R"J({{ 42 }} {{ -7 }} {{ 1_000 }} {{ 0x1F }} {{ 0b101 }} {{ 0o17 }})J", R"J({})J",
       R"J(42 -7 1000 31 5 15)J"},
      {R"J({{ 1.5 }} {{ 1.0 }} {{ 2e3 }} {{ 1e16 }} {{ 1e-5 }} {{ 0.1 + 0.2 }} {{ 1/3 }})J",
       R"J({})J", R"J(1.5 1.0 2000.0 1e+16 1e-05 0.30000000000000004 0.3333333333333333)J"},
      {R"J({{ true }} {{ False }} {{ none }} {{ None }})J", R"J({})J", R"J(True False None None)J"},
      {R"J({{ [1, 'a', none, true, 1.5] }})J", R"J({})J", R"J([1, 'a', None, True, 1.5])J"},
      {R"J({{ {'a': 1, "b": [2]} }})J", R"J({})J", R"J({'a': 1, 'b': [2]})J"},
      {R"J({{ (1,) }} {{ (1, 2) }} {{ () }})J", R"J({})J", R"J((1,) (1, 2) ())J"},
      {R"J({{ "it's" }} {{ ["it's", 'say "hi"', 'both \' "'] }})J", R"J({})J",
       R"J(it's ["it's", 'say "hi"', 'both \' "'])J"},
      {R"J({{ {'k': 'v'}['k'] }}{{ [10, 20][1] }})J", R"J({})J", R"J(v20)J"},
  });
}

TEST(Jinja, Arithmetic) {
  check({
      {R"J({{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 10 }} {{ 2 ** 3 ** 2 }})J", R"J({})J",
       R"J(7 9 1024 64)J"},
      {R"J({{ 7 / 2 }} {{ 10 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }})J",
       R"J({})J", R"J(3.5 5.0 3 -4 1 2)J"},
      {R"J({{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 2 ** -1 }} {{ 1 + 1.5 }} {{ true + 1 }})J", R"J({})J",
       R"J(3.0 0.5 0.5 2.5 2)J"},
      {R"J({{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 2 * 'xy' }} {{ [1] + [2, 3] }} {{ [0] * 3 }})J",
       R"J({})J", R"J(abcd ababab xyxy [1, 2, 3] [0, 0, 0])J"},
      {R"J({{ 'a' ~ 1 ~ none ~ true ~ undefined_thing }})J", R"J({})J", R"J(a1NoneTrue)J"},
      {R"J({{ -x }} {{ +x }} {{ - -x }})J", R"J({"x": 3})J", R"J(-3 3 3)J"},
      {R"J({{ '%s is %d' % ('x', 4) }})J", R"J({})J", R"J(x is 4)J"},
  });
}

TEST(Jinja, ComparisonsAndLogic) {
  check({
      {R"J({{ 1 == 1.0 }} {{ 1 != 2 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }})J",
       R"J({})J", R"J(True True True False True)J"},
      {R"J({{ [1, 2] == [1, 2] }} {{ {'a': 1} == {'a': 1} }} {{ (1, 2) == [1, 2] }})J", R"J({})J",
       R"J(True True False)J"},
      {R"J({{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }})J",
       R"J({})J", R"J(True True True True)J"},
      {R"J({{ true and 'x' }} {{ 0 or 'y' }} {{ not 0 }} {{ '' and 1 }}|{{ none or [] }})J",
       R"J({})J", R"J(x y True |[])J"},
      {R"J({{ not x is defined }} {{ not (1 == 2) and 2 == 2 }})J", R"J({})J", R"J(True True)J"},
      {R"J({{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }} [{{ 'yes' if 0 }}])J", R"J({})J",
       R"J(yes no [])J"},
      {R"J({{ true == 1 }} {{ none == none }} {{ missing == missing }} {{ missing == none }})J",
       R"J({})J", R"J(True True True False)J"},
  });
}

TEST(Jinja, AttributesAndSubscripts) {
  check({
      {R"J({{ m.role }} {{ m['content'] }} {{ m.missing }}|{{ m.missing is defined }})J",
       R"J({"m": {"role": "user", "content": "hi"}})J", R"J(user hi |False)J"},
      {R"J({{ xs[0] }} {{ xs[-1] }} {{ xs[1:] }} {{ xs[:2] }} {{ xs[::-1] }} {{ xs[::2] }})J",
       R"J({"xs": [1, 2, 3, 4]})J", R"J(1 4 [2, 3, 4] [1, 2] [4, 3, 2, 1] [1, 3])J"},
      {R"J({{ xs[10] }}|{{ xs[-10:] }}|{{ xs[5:1] }}|{{ xs.0 }})J", R"J({"xs": [1, 2]})J",
       R"J(|[1, 2]|[]|1)J"},
      {R"J({{ s[0] }} {{ s[-1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s|length }})J",
       R"J({"s": "héllo"})J", R"J(h o él olléh 5)J"},
      {R"J({{ d['items'] }} {{ d.items()|list }})J", R"J({"d": {"items": 5}})J",
       R"J(5 [('items', 5)])J"},
      {R"J({{ m.content.content is defined }} {{ none.x is defined }})J",
       R"J({"m": {"content": "text"}})J", R"J(False False)J"},
  });
}

TEST(Jinja, IfStatements) {
  check({
      {R"J({% if x %}a{% elif y %}b{% else %}c{% endif %})J", R"J({"x": 0, "y": 1})J", R"J(b)J"},
      {R"J({% if x %}a{% elif y %}b{% else %}c{% endif %})J", R"J({"x": 0, "y": 0})J", R"J(c)J"},
      {R"J({% if [] %}a{% endif %}{% if {} %}b{% endif %}{% if '0' %}c{% endif %})J", R"J({})J",
       R"J(c)J"},
      {R"J({% if undefined_var %}a{% else %}b{% endif %})J", R"J({})J", R"J(b)J"},
      {R"J({% if (a == 1) or (b == 2 and not c) %}ok{% endif %})J", R"J({"a": 0, "b": 2})J",
       R"J(ok)J"},
  });
}

TEST(Jinja, ForLoops) {
  check({
      {R"J({% for x in xs %}{{ x }},{% endfor %})J", R"J({"xs": [1, 2, 3]})J", R"J(1,2,3,)J"},
      {R"J({% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %})J",
       R"J({"xs": ["a", "b"]})J", R"J(1021TrueFalse2;2110FalseTrue2;)J"},
      {R"J({% for x in xs %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %})J",
       R"J({"xs": [1, 2, 3]})J", R"J(-2;1-3;2-;)J"},
      {R"J({% for x in xs %}{{ x }}{% else %}empty{% endfor %})J", R"J({"xs": []})J", R"J(empty)J"},
      {R"J({% for x in missing %}{{ x }}{% else %}none{% endfor %})J", R"J({})J", R"J(none)J"},
      {R"J({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %})J",
       R"J({"d": {"z": 1, "a": 2}})J", R"J(z=1;a=2;)J"},
      {R"J({% for k in d %}{{ k }}{% endfor %}{% for k, v in d|items %}{{ v }}{% endfor %})J",
       R"J({"d": {"z": 1, "a": 2}})J", R"J(za12)J"},
      {R"J({% for x in xs if x % 2 %}{{ x }}{{ loop.index }}{{ loop.length }} {% endfor %})J",
       R"J({"xs": [1, 2, 3, 4, 5]})J", R"J(113 323 533 )J"},
      {R"J({% for c in 'hé!' %}[{{ c }}]{% endfor %})J", R"J({})J", R"J([h][é][!])J"},
      {R"J({% for x in [1, 2] %}{% for y in 'ab' %}{{ loop.index }}{{ x }}{{ y }} {% endfor %}{{ loop.last }} {% endfor %})J",
       R"J({})J", R"J(11a 21b False 12a 22b True )J"},
      {R"J({% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %})J",
       R"J({})J", R"J(13)J"},
      {R"J({% for a, b in [(1, 2), [3, 4]] %}{{ a + b }} {% endfor %})J", R"J({})J", R"J(3 7 )J"},
      {R"J({% for x in xs %}{{ loop.cycle('odd', 'even') }} {% endfor %})J",
       R"J({"xs": [1, 2, 3]})J", R"J(odd even odd )J"},
      {R"J({% for m in messages %}{{ m }}{% endfor %}[{{ messages|length }}])J", R"J({})J",
       R"J([0])J"},
  });
}

TEST(Jinja, Scoping) {
  check({
      {R"J({% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }})J", R"J({})J",
       R"J(1)J"},
      {R"J({% set x = 5 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{% endfor %}{{ x }})J",
       R"J({})J", R"J(555)J"},
      {R"J({% if true %}{% set x = 'leaks' %}{% endif %}{{ x }})J", R"J({})J", R"J(leaks)J"},
      {R"J({% set ns = namespace(found=false, n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }} {{ ns.n }})J",
       R"J({})J", R"J(True 6)J"},
      {R"J({% set ns = namespace() %}{% set ns.a = 'x' %}{{ ns.a }}{{ ns.b is defined }})J",
       R"J({})J", R"J(xFalse)J"},
      {R"J({% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }})J", R"J({})J", R"J(12)J"},
      {R"J({% set a, b = 1, 2 %}{{ b }}{{ a }})J", R"J({})J", R"J(21)J"},
      {R"J({% set ns = namespace(x=1) %}{% set ns.self = ns %}{{ ns }})J", R"J({})J",
       R"J(<Namespace {'x': 1, 'self': <Namespace {...}>}>)J"},
      {R"J({% set x %}block {{ 1 + 1 }}{% endset %}[{{ x }}])J", R"J({})J", R"J([block 2])J"},
      {R"J({% set x | upper %}shout{% endset %}{{ x }})J", R"J({})J", R"J(SHOUT)J"},
      {R"J({% set messages = messages + [1] %}{{ messages }})J", R"J({})J", R"J([1])J"},
      {R"J({% with a = 1 %}{{ a }}{% endwith %}[{{ a }}])J", R"J({})J", R"J(1[])J"},
      {R"J({% filter upper %}a{{ 'b' }}{% endfilter %})J", R"J({})J", R"J(AB)J"},
  });
}

TEST(Jinja, Macros) {
  check({
      {R"J({% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', greeting='Hi') }} {{ greet('C', 'Yo') }})J",
       R"J({})J", R"J(Hello, Ann! Hi, Bob! Yo, C!)J"},
      {R"J({% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }}{{ m(1) ~ m(2) }})J", R"J({})J",
       R"J([][1][2])J"},
      {R"J({% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }})J",
       R"J({})J", R"J(120)J"},
      {R"J({% set g = 'global' %}{% macro m() %}{{ g }}{% endmacro %}{{ m() }})J", R"J({})J",
       R"J(global)J"},
      {R"J({% macro render(item) %}{% for k, v in item.items() %}{{ k }}:{{ v }}{% if not loop.last %},{% endif %}{% endfor %}{% endmacro %}{{ render({'a': 1, 'b': 2}) }})J",
       R"J({})J", R"J(a:1,b:2)J"},
      {R"J({% generation %}gen {{ 1 }}{% set inner = 1 %}{% endgeneration %}[{{ inner }}])J",
       R"J({})J", R"J(gen 1[])J"},
  });
}

// A render frees everything it made, reference cycles included: a macro's
// closure holds the scope that holds the macro, and a namespace can hold
// itself. A value handed in that the cycles capture must be released once
// the caller lets go of it (quill-serve renders a template per request).
TEST(Jinja, RenderingFreesItsReferenceCycles) {
  const char *sources[] = {
      "{% macro m() %}{{ f() }}{% endmacro %}{{ m() }}",
      "{% set ns = namespace(f=f) %}{% set ns.self = ns %}{{ ns.f() }}",
      "{% set ns = namespace() %}{% macro m() %}{{ ns.x() }}{% endmacro %}"
      "{% set ns.m = m %}{% set ns.x = f %}{{ ns.m() }}",
      "{% for i in [1, 2] %}{% macro m() %}{{ f() }}{% endmacro %}{{ m() }}{% endfor %}",
      "{% macro outer() %}{% macro inner() %}{{ f() }}{% endmacro %}{{ inner() }}{% endmacro %}"
      "{{ outer() }}{{ raise_exception('stop') }}",
  };
  for (const char *source : sources) {
    auto tmpl = quill::ChatTemplate::parse(source, "cycles");
    ASSERT_TRUE(tmpl) << tmpl.message();
    auto sentinel = std::make_shared<int>(7);
    std::weak_ptr<int> watched = sentinel;
    {
      quill::ChatRenderInput input;
      input.messages = quill::jinja::Value::list({});
      input.extraVariables.emplace_back(
          "f", quill::jinja::Value::function(
                   "f", [held = std::move(sentinel)](quill::jinja::Interpreter &,
                                                     quill::jinja::CallArgs &) {
                     return quill::jinja::Value(static_cast<int64_t>(*held));
                   }));
      auto out = tmpl->render(input);
      if (out)
        EXPECT_NE(out->find('7'), std::string::npos) << source;
    }
    EXPECT_TRUE(watched.expired()) << "a render kept a value alive: " << source;
  }
}

TEST(Jinja, Tests) {
  check({
      {R"J({{ x is defined }}{{ y is defined }}{{ y is undefined }}{{ x is not none }})J",
       R"J({"x": null})J", R"J(TrueFalseTrueFalse)J"},
      {R"J({{ 'a' is string }}{{ 1 is string }}{{ 1 is number }}{{ 1.5 is number }}{{ true is number }})J",
       R"J({})J", R"J(TrueFalseTrueTrueTrue)J"},
      {R"J({{ 1 is integer }}{{ 1.0 is integer }}{{ true is integer }}{{ 1.0 is float }})J",
       R"J({})J", R"J(TrueFalseFalseTrue)J"},
      {R"J({{ {} is mapping }}{{ [] is mapping }}{{ [] is iterable }}{{ 'x' is iterable }}{{ 1 is iterable }}{{ u is iterable }})J",
       R"J({})J", R"J(TrueFalseTrueTrueFalseTrue)J"},
      {R"J({{ [] is sequence }}{{ 'x' is sequence }}{{ {} is sequence }}{{ 3 is sequence }})J",
       R"J({})J", R"J(TrueTrueTrueFalse)J"},
      {R"J({{ true is boolean }}{{ 1 is boolean }}{{ true is true }}{{ 1 is true }}{{ false is false }})J",
       R"J({})J", R"J(TrueFalseTrueFalseTrue)J"},
      {R"J({{ 4 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }})J",
       R"J({})J", R"J(TrueTrueTrueFalse)J"},
      {R"J({{ 'a' is equalto 'a' }}{{ 2 is eq 3 }}{{ 1 is ne 2 }}{{ 3 is gt 2 }}{{ 2 is le 1 }}{{ 'x' is in 'xy' }})J",
       R"J({})J", R"J(TrueFalseTrueTrueFalseTrue)J"},
      {R"J({{ f is callable }}{{ range is callable }}{{ 'ab' is lower }}{{ 'AB' is upper }})J",
       R"J({})J", R"J(TrueTrueTrueTrue)J"},
      {R"J({{ none is sameas none }}{{ 'upper' is filter }}{{ 'odd' is test }})J", R"J({})J",
       R"J(TrueTrueTrue)J"},
  });
}

TEST(Jinja, Filters) {
  check({
      {R"J({{ '  x y  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ '\u00a0\u3000z\n'|trim }})J", R"J({})J",
       R"J(x y|hi|z)J"},
      {R"J({{ xs|length }} {{ 'héllo'|length }} {{ d|count }} {{ nothing|length }})J",
       R"J({"xs": [1, 2], "d": {"a": 1}})J", R"J(2 5 1 0)J"},
      {R"J({{ 'hello World'|upper }} {{ 'ÉTÉ'|lower }} {{ 'hELLO wORLD'|capitalize }} {{ "it's a-b (c)"|title }})J",
       R"J({})J", R"J(HELLO WORLD été Hello world It's A-B (C))J"},
      {R"J({{ 'a-b-c'|replace('-', '+') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'ab'|replace('', '.') }})J",
       R"J({})J", R"J(a+b+c bba .a.b.)J"},
      {R"J({{ x|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ 0|d('z', boolean=true) }})J",
       R"J({})J", R"J(d None d z)J"},
      {R"J({{ users|selectattr('active')|map(attribute='name')|join(', ') }})J",
       R"J({"users": [{"name": "a", "active": true}, {"name": "b", "active": false}, {"name": "c", "active": true}]})J",
       R"J(a, c)J"},
      {R"J({{ ms|selectattr('role', 'equalto', 'user')|list|length }} {{ ms|rejectattr('role', 'eq', 'user')|map(attribute='role')|list }})J",
       R"J({"ms": [{"role": "user"}, {"role": "assistant"}, {"role": "user"}, {"role": "tool"}]})J",
       R"J(2 ['assistant', 'tool'])J"},
      {R"J({{ [1, 2, 3, 4]|select('even')|list }} {{ [1, 0, none, 'x']|select|list }} {{ ['a', 'code', 'b']|reject('equalto', 'code')|join }})J",
       R"J({})J", R"J([2, 4] [1, 'x'] ab)J"},
      {R"J({{ ['a', 'b']|map('upper')|list }} {{ [{'a': 1}, {}]|map(attribute='a', default=0)|list }})J",
       R"J({})J", R"J(['A', 'B'] [1, 0])J"},
      {R"J({{ [3, 1, 2]|first }} {{ [3, 1, 2]|last }} {{ 'abc'|first }} {{ []|first }}|)J",
       R"J({})J", R"J(3 2 a |)J"},
      {R"J({{ 'ab'|list }} {{ {'k': 1}|list }} {{ (1, 2)|list }} {{ 5|string ~ 'x' }} {{ [1]|string }})J",
       R"J({})J", R"J(['a', 'b'] ['k'] [1, 2] 5x [1])J"},
      {R"J({{ '42'|int + 1 }} {{ '3.9'|int }} {{ 'x'|int }} {{ 'x'|int(-1) }} {{ 7.9|int }} {{ '0x1A'|int(base=16) }})J",
       R"J({})J", R"J(43 3 0 -1 7 26)J"},
      {R"J({{ '2.5'|float }} {{ 3|float }} {{ 'x'|float }} {{ -3|abs }} {{ -2.5|abs }})J",
       R"J({})J", R"J(2.5 3.0 0.0 3 2.5)J"},
      {R"J({{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} {{ 5|round }})J",
       R"J({})J", R"J(2.0 4.0 2.67 3.0 2.0 5)J"},
      {R"J({{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ [3, 1, 2]|sort(reverse=true) }})J",
       R"J({})J", R"J(['A', 'b', 'c'] ['A', 'b', 'c'] [3, 2, 1])J"},
      {R"J({{ us|sort(attribute='age')|map(attribute='n')|join }} {{ {'b': 1, 'a': 2}|dictsort }})J",
       R"J({"us": [{"n": "x", "age": 3}, {"n": "y", "age": 1}]})J", R"J(yx [('a', 2), ('b', 1)])J"},
      {R"J({{ [1, 2, 1, 3]|unique|list }} {{ ['a', 'A', 'b']|unique|list }} {{ [1, 2]|reverse|list }} {{ 'abc'|reverse }})J",
       R"J({})J", R"J([1, 2, 3] ['a', 'b'] [2, 1] cba)J"},
      {R"J({{ [1, 2, 3]|sum }} {{ [1, 5, 2]|max }} {{ ['b', 'a']|min }} {{ [{'v': 2}, {'v': 3}]|sum(attribute='v') }})J",
       R"J({})J", R"J(6 5 a 5)J"},
      {R"J({{ 'a\nb\n\nc'|indent }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent(2, blank=true) }}|{{ 'x\ny'|indent('> ') }})J",
       R"J({})J", "a\n    b\n\n    c|  a\n  b|a\n  \n  b|x\n> y"},
      {R"J({{ '<a href="x">&\'</a>'|e }} {{ '<b>'|safe }} {{ 'one two  three'|wordcount }})J",
       R"J({})J", R"J(&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt; <b> 3)J"},
      {R"J({{ xs|join('-') }} {{ us|join(', ', attribute='n') }})J",
       R"J({"xs": [1, "a", null], "us": [{"n": "p"}, {"n": "q"}]})J", R"J(1-a-None p, q)J"},
      {R"J({{ '%s=%d (%.2f)'|format('x', 3, 1.5) }})J", R"J({})J", R"J(x=3 (1.50))J"},
  });
}

TEST(Jinja, Tojson) {
  check({
      {R"J({{ v|tojson }})J",
       R"J({"v": {"s": "é \"q\" \\ \n\t\u0001", "n": 1, "f": 1.5, "b": true, "z": null, "l": [1, [2, {}], []]}})J",
       R"J({"s": "é \"q\" \\ \n\t\u0001", "n": 1, "f": 1.5, "b": true, "z": null, "l": [1, [2, {}], []]})J"},
      {R"J({{ v|tojson(indent=2) }})J", R"J({"v": {"a": [1, 2], "b": {}, "c": {"d": null}}})J",
       R"J({
  "a": [
    1,
    2
  ],
  "b": {},
  "c": {
    "d": null
  }
})J"},
      {R"J({{ v|tojson(sort_keys=true) }} {{ v|tojson(separators=(',', ':')) }})J",
       R"J({"v": {"b": 1, "a": [1, 2]}})J", R"J({"a": [1, 2], "b": 1} {"b":1,"a":[1,2]})J"},
      {R"J({{ 'é😀'|tojson }} {{ 'é😀'|tojson(ensure_ascii=true) }} {{ 'a</b>'|tojson }})J",
       R"J({})J", R"J("é😀" "\u00e9\ud83d\ude00" "a</b>")J"},
      {R"J({{ (1, 'a')|tojson }} {{ {1: 'x', true: 'y'}|tojson }} {{ 1e20|tojson }} {{ 3.0|tojson }})J",
       R"J({})J", R"J([1, "a"] {"1": "y"} 1e+20 3.0)J"},
  });
}

TEST(Jinja, Methods) {
  check({
      {R"J({{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}{{ 'abc'.startswith(('x', 'a')) }}{{ 'abc'.endswith('a') }})J",
       R"J({})J", R"J(TrueTrueTrueFalse)J"},
      {R"J([{{ '  x  '.strip() }}][{{ '\n\nx\n'.lstrip('\n') }}][{{ 'x\n\n'.rstrip() }}][{{ '--x--'.strip('-') }}][{{ 'ab'.lstrip('ba') }}])J",
       R"J({})J", "[x][x\n][x][x][]"},
      {R"J({{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ ' a  b c '.split(None, 1) }} {{ ''.split() }} {{ ''.split(',') }})J",
       R"J({})J", R"J(['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c'] ['a', 'b c '] [] [''])J"},
      {R"J({{ 'a.b.c'.rsplit('.', 1) }} {{ ' a b  c '.rsplit(None, 1) }} {{ 'a</think>b</think>c'.split('</think>')[-1] }})J",
       R"J({})J", R"J(['a.b', 'c'] [' a b', 'c'] c)J"},
      {R"J({{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ "it's".title() }} {{ 'hELLO'.capitalize() }})J",
       R"J({})J", R"J(HELLO hello Hello World It'S Hello)J"},
      {R"J({{ 'a-b-a'.replace('a', 'x') }} {{ 'a-b-a'.replace('a', 'x', 1) }} {{ 'abcabc'.find('c') }} {{ 'héllo'.find('l') }} {{ 'abc'.find('z') }} {{ 'abcabc'.rfind('b') }})J",
       R"J({})J", R"J(x-b-x x-b-a 2 2 -1 4)J"},
      {R"J({{ 'a b a'.count('a') }} {{ ', '.join(['x', 'y']) }} {{ '{} and {name}'.format(1, name='n') }} {{ '{0}{0}'.format('z') }})J",
       R"J({})J", R"J(2 x, y 1 and n zz)J"},
      {R"J({{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 3) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }})J",
       R"J({"d": {"a": 1, "b": [2]}})J",
       R"J(1 None 3 ['a', 'b'] [1, [2]] [('a', 1), ('b', [2])])J"},
      {R"J({{ xs.index(2) }} {{ xs.count(1) }} {{ '123'.isdigit() }} {{ 'ab1'.isalpha() }} {{ 'a\nb'.splitlines() }})J",
       R"J({"xs": [1, 2, 1]})J", R"J(1 2 True False ['a', 'b'])J"},
  });
}

TEST(Jinja, Globals) {
  check({
      {R"J({{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(3, 0, -1)|list }})J", R"J({})J",
       R"J([0, 1, 2] [1, 3, 5] [3, 2, 1])J"},
      {R"J({% for i in range(2) %}{{ i }}{% endfor %} {{ dict(a=1, b='x') }})J", R"J({})J",
       R"J(01 {'a': 1, 'b': 'x'})J"},
      {R"J({{ strftime_now('%Y-%m-%d %d %b %Y') }})J", R"J({})J", R"J(2024-07-26 26 Jul 2024)J"},
      {R"J({{ bos_token }}|{{ add_generation_prompt }}|{{ tools }}|{{ messages }})J", R"J({})J",
       R"J(|True|None|[])J"},
  });
}

TEST(Jinja, RendersTheDocumentedLlamaToolCallShape) {
  // Llama 3.1's template: tool call arguments as a dict, tojson'd.
  check({
      {R"J({%- for m in messages %}{%- if 'tool_calls' in m %}{%- set tc = m.tool_calls[0].function %}{"name": "{{ tc.name }}", "parameters": {{ tc.arguments | tojson }}}{%- endif %}{%- endfor %})J",
       R"J({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]}]})J",
       R"J({"name": "f", "parameters": {"x": 1}})J"},
  });
}

} // namespace
