// libFuzzer target: the chat-template interpreter (runtime/chat) and the
// messages-JSON reader. The input is a template, rendered over a fixed
// two-turn conversation with small limits; then the input as messages JSON,
// rendered by a fixed template. Every failure must be an error value.
#include "runtime/chat/ChatTemplate.h"

#include <cstdint>
#include <string>

namespace {

const char *const kConversation =
    R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},)"
    R"( {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Why?"}])";

const char *const kTemplate =
    "{%- for m in messages %}{{ '<|' + m.role + '|>' }}{% if m.content is string %}"
    "{{ m.content | trim }}{% else %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}{{ tools | tojson }}";

/// Small limits: each input renders in milliseconds.
quill::jinja::RenderLimits fuzzLimits() {
  quill::jinja::RenderLimits limits;
  limits.maxOutputBytes = 1 << 20;
  limits.maxCallDepth = 50;
  limits.maxSteps = 100000;
  return limits;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  static const quill::ChatRenderInput conversation = [] {
    auto input = quill::parseChatRequest(kConversation);
    if (!input)
      __builtin_trap(); // The fixed conversation is valid.
    input->bosToken = "<s>";
    input->eosToken = "</s>";
    input->now = 1721952000;
    return input.take();
  }();
  if (auto parsed = quill::ChatTemplate::parse(text, "fuzz"))
    (void)parsed->render(conversation, fuzzLimits());
  static const quill::ChatTemplate fixed = [] {
    auto t = quill::ChatTemplate::parse(kTemplate, "fixed");
    if (!t)
      __builtin_trap(); // The fixed template is valid.
    return t.take();
  }();
  if (auto request = quill::parseChatRequest(text)) {
    request->now = 1721952000;
    (void)fixed.render(*request, fuzzLimits());
  }
  return 0;
}
