// The chat template API over the Jinja parser and interpreter.
#include "runtime/chat/ChatTemplate.h"

#include "runtime/chat/JinjaJson.h"
#include "runtime/chat/JinjaParser.h"

#include <new>

namespace quill {
namespace {

/// jinja2 checks filter and test names when it compiles a template.
Status checkNames(const jinja::Expr &e) {
  using K = jinja::Expr::Kind;
  if (e.kind == K::Filter && !jinja::hasFilter(e.name))
    return Status::error("line " + std::to_string(e.line) + ", column " + std::to_string(e.column) +
                         ": no filter named '" + e.name + "'");
  if (e.kind == K::Test && !jinja::hasTest(e.name))
    return Status::error("line " + std::to_string(e.line) + ", column " + std::to_string(e.column) +
                         ": no test named '" + e.name + "'");
  for (const auto &a : e.args)
    if (a)
      if (Status s = checkNames(*a); !s)
        return s;
  for (const auto &[k, a] : e.keywords)
    if (Status s = checkNames(*a); !s)
      return s;
  return Status::ok();
}

Status checkNames(const jinja::Body &body) {
  for (const auto &s : body) {
    for (const jinja::Expr *e : {s->expr.get(), s->condition.get()})
      if (e)
        if (Status st = checkNames(*e); !st)
          return st;
    for (const auto &f : s->filters)
      if (Status st = checkNames(*f); !st)
        return st;
    for (const auto &[k, e] : s->params)
      if (e)
        if (Status st = checkNames(*e); !st)
          return st;
    for (const auto &[c, b] : s->branches) {
      if (Status st = checkNames(*c); !st)
        return st;
      if (Status st = checkNames(b); !st)
        return st;
    }
    if (Status st = checkNames(s->body); !st)
      return st;
    if (Status st = checkNames(s->elseBody); !st)
      return st;
  }
  return Status::ok();
}

} // namespace

ErrorOr<ChatTemplate> ChatTemplate::parse(std::string source, std::string name) {
  auto body = jinja::parseTemplate(source);
  if (!body)
    return Status::error(name + ": " + body.message());
  if (Status s = checkNames(*body); !s)
    return Status::error(name + ": " + s.message());
  ChatTemplate t;
  t.name_ = std::move(name);
  t.program_ = std::make_shared<const jinja::Body>(body.take());
  return t;
}

ErrorOr<std::string> ChatTemplate::render(const ChatRenderInput &input,
                                          const jinja::RenderLimits &limits) const {
  using jinja::Value;
  std::vector<std::pair<std::string, Value>> variables = {
      {"messages", input.messages},
      {"tools", input.tools ? *input.tools : Value::none()},
      {"documents", Value::none()},
      {"add_generation_prompt", Value(input.addGenerationPrompt)},
      {"bos_token", Value(input.bosToken)},
      {"eos_token", Value(input.eosToken)},
  };
  for (const auto &[k, v] : input.extraVariables) {
    bool replaced = false;
    for (auto &entry : variables)
      if (entry.first == k) {
        entry.second = v;
        replaced = true;
      }
    if (!replaced)
      variables.emplace_back(k, v);
  }
  jinja::Interpreter interp(*program_, limits);
  interp.fixedNow = input.now;
  try {
    return interp.render(variables);
  } catch (const jinja::TemplateError &e) {
    return Status::error(name_ + ": " + e.what());
  } catch (const std::bad_alloc &) {
    return Status::error(name_ + ": out of memory while rendering");
  } catch (const std::exception &e) {
    return Status::error(name_ + ": internal error while rendering: " + e.what());
  }
}

ErrorOr<ChatRenderInput> parseChatRequest(std::string_view json) {
  using jinja::Value;
  auto parsed = jinja::valueFromJson(json);
  if (!parsed)
    return Status::error("messages JSON: " + parsed.message());
  ChatRenderInput input;
  Value messages;
  if (parsed->isList()) {
    messages = *parsed;
  } else if (parsed->isDict()) {
    for (const auto &[k, v] : parsed->asDict().entries) {
      const std::string &key = k.asString();
      if (key == "messages") {
        messages = v;
      } else if (key == "tools") {
        if (!v.isList() && !v.isNone())
          return Status::error("messages JSON: \"tools\" must be an array");
        if (v.isList())
          input.tools = v;
      } else if (key == "add_generation_prompt") {
        if (!v.isBool())
          return Status::error("messages JSON: \"add_generation_prompt\" must be true or false");
        input.addGenerationPrompt = v.asBool();
      } else {
        input.extraVariables.emplace_back(key, v);
      }
    }
    if (messages.isUndefined())
      return Status::error("messages JSON: the object has no \"messages\" array");
  } else {
    return Status::error("messages JSON: expected an array of messages or an object with "
                         "\"messages\"");
  }
  if (!messages.isList())
    return Status::error("messages JSON: \"messages\" must be an array");
  size_t index = 0;
  for (const Value &m : messages.items()) {
    std::string where = "messages JSON: message " + std::to_string(index++) + ": ";
    if (!m.isDict())
      return Status::error(where + "expected an object");
    const Value *role = m.asDict().find(std::string_view("role"));
    if (!role || !role->isString())
      return Status::error(where + "\"role\" must be a string");
    const Value *content = m.asDict().find(std::string_view("content"));
    if (content && !content->isString() && !content->isList() && !content->isNone() &&
        !content->isDict())
      return Status::error(where + "\"content\" must be a string, an array of parts or null");
  }
  input.messages = messages;
  return input;
}

} // namespace quill
