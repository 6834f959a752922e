// Chat templates as models ship them (HF tokenizer_config.json
// `chat_template`, GGUF `tokenizer.chat_template`), rendered exactly as
// Python's jinja2 renders them with Hugging Face's settings:
// ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
// extensions=[loopcontrols]), raise_exception, strftime_now, HF's tojson and
// the {% generation %} tag. See README.md for what is covered.
#pragma once

#include "runtime/chat/JinjaInterpreter.h"
#include "runtime/chat/JinjaValue.h"
#include "runtime/support/Error.h"

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace quill {

/// What a chat template renders: the variables HF's apply_chat_template
/// passes (messages, tools, add_generation_prompt, the special tokens).
struct ChatRenderInput {
  /// A list of message dicts: role, content (a string or a list of parts),
  /// and whatever else the template reads (tool_calls, tool_call_id, ...).
  jinja::Value messages = jinja::Value::list({});
  /// Tool schemas; when absent `tools` is None, as HF passes it.
  std::optional<jinja::Value> tools;
  bool addGenerationPrompt = true;
  std::string bosToken;
  std::string eosToken;
  /// More template variables (enable_thinking, date_string, ...); they
  /// override the ones above.
  std::vector<std::pair<std::string, jinja::Value>> extraVariables;
  /// strftime_now's clock, as seconds since the epoch read in UTC; the
  /// local time now when unset. Fix it for reproducible output.
  std::optional<std::time_t> now;
};

class ChatTemplate {
public:
  /// Parses `source`; errors read "<name>: line L, column C: what is wrong"
  /// (syntax, unknown filter or test).
  static ErrorOr<ChatTemplate> parse(std::string source, std::string name = "chat template");

  /// The rendered prompt; errors read "<name>: line L: what is wrong", and
  /// for raise_exception("msg") the message ends with msg.
  ErrorOr<std::string> render(const ChatRenderInput &input,
                              const jinja::RenderLimits &limits = {}) const;

  const std::string &name() const { return name_; }

private:
  ChatTemplate() = default;
  std::string name_;
  std::shared_ptr<const jinja::Body> program_;
};

/// The render input of an OpenAI-style request: either a JSON array of
/// messages, or an object {"messages": [...], "tools": [...],
/// "add_generation_prompt": bool, ...} whose other keys become template
/// variables. add_generation_prompt defaults to true. Errors are one line.
ErrorOr<ChatRenderInput> parseChatRequest(std::string_view json);

} // namespace quill
