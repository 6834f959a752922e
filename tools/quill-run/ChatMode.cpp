// The chat modes: a conversation rendered with the chat template, tokenized
// with its special tokens whole, and answered; --chat keeps it in the KV
// cache across turns (ChatSession).
#include "ChatMode.h"

#include "ResultJson.h"

#include "runtime/chat/ChatTemplate.h"
#include "runtime/decode/ChatSession.h"
#include "runtime/support/ReadFile.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <unistd.h>

namespace quill {

namespace {

/// QUILL_CHAT_NOW: the fixed clock strftime_now reads, when set.
ErrorOr<std::optional<std::time_t>> fixedClock() {
  const char *text = std::getenv("QUILL_CHAT_NOW");
  if (!text)
    return std::optional<std::time_t>();
  errno = 0;
  char *end = nullptr;
  long long seconds = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0')
    return Status::error(std::string("invalid QUILL_CHAT_NOW '") + text +
                         "': expected seconds since the epoch");
  return std::optional<std::time_t>(static_cast<std::time_t>(seconds));
}

/// The text of a special token for the template: its piece, or "" when the
/// model has no such token.
std::string specialTokenText(const Tokenizer &tokenizer, int32_t id) {
  return id >= 0 && id < tokenizer.vocabSize() ? tokenizer.piece(id) : std::string();
}

/// What every render of a run shares: the template, the special tokens'
/// text and the clock.
struct Prompter {
  ChatTemplate chatTemplate;
  std::string bosToken, eosToken;
  std::optional<std::time_t> now;

  ErrorOr<std::string> render(ChatRenderInput input) const {
    input.bosToken = bosToken;
    input.eosToken = eosToken;
    input.now = now;
    return chatTemplate.render(input);
  }
};

/// The template of --chat-template, else the artifact's.
ErrorOr<Prompter> makePrompter(const RunOptions &options, const Artifact &artifact,
                               const Tokenizer &tokenizer) {
  std::string source, name;
  if (!options.chatTemplateFile.empty()) {
    auto text = readSmallFile(options.chatTemplateFile, kMaxChatTemplateBytes, "chat template");
    if (!text)
      return text.status();
    if (Status s = checkChatTemplateText(*text); !s)
      return Status::error(options.chatTemplateFile + ": " + s.message());
    source = text.take();
    name = options.chatTemplateFile;
  } else if (artifact.chatTemplate()) {
    source = *artifact.chatTemplate();
    name = artifact.path() + " (chat template)";
  } else {
    return Status::error(artifact.path() +
                         ": the model has no chat template; give one with --chat-template FILE "
                         "(or compile one in with quill-compile --chat-template)");
  }
  auto parsed = ChatTemplate::parse(std::move(source), name);
  if (!parsed)
    return parsed.status();
  auto now = fixedClock();
  if (!now)
    return now.status();
  const ModelConfig &config = artifact.config();
  return Prompter{parsed.take(), specialTokenText(tokenizer, config.bosId),
                  specialTokenText(tokenizer, config.eosId), *now};
}

jinja::Value message(const std::string &role, const std::string &content) {
  return jinja::Value::dict({{jinja::Value(std::string("role")), jinja::Value(role)},
                             {jinja::Value(std::string("content")), jinja::Value(content)}});
}

/// The conversation of --messages FILE, or --chat's opening (the system
/// message alone, without the generation prompt: what --render-prompt shows).
ErrorOr<ChatRenderInput> initialInput(const RunOptions &options) {
  if (options.chat) {
    ChatRenderInput input;
    if (options.systemPrompt)
      input.messages = jinja::Value::list({message("system", *options.systemPrompt)});
    input.addGenerationPrompt = false;
    return input;
  }
  auto text = readSmallFile(options.messagesFile, kMaxJsonFileBytes, "messages file");
  if (!text)
    return text.status();
  auto input = parseChatRequest(*text);
  if (!input)
    return Status::error(options.messagesFile + ": " + input.message());
  return input;
}

/// The prompt of initialInput, rendered.
ErrorOr<std::string> renderInitial(const RunOptions &options, const Prompter &prompter) {
  auto input = initialInput(options);
  if (!input)
    return input.status();
  return prompter.render(std::move(*input));
}

void streamText(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

GenerationRequest replyRequest(const RunOptions &options, const std::atomic<bool> *interrupt) {
  GenerationRequest request;
  request.maxNewTokens = options.maxNewTokens;
  request.stopStrings = options.stopStrings;
  request.ignoreEos = options.ignoreEos;
  request.interrupt = interrupt;
  return request;
}

void reportTurn(const RunOptions &options, int turn, const ChatSession::Turn &t) {
  if (options.verbose)
    std::fprintf(stderr, "chat turn %d: prefilled %d tokens, reused %d\n", turn, t.prefilled,
                 t.reused);
}

/// The interactive loop of --chat.
ErrorOr<int> chatLoop(const RunOptions &options, const Prompter &prompter,
                      const Tokenizer &tokenizer, const ModelConfig &config, ChatSession &session,
                      const std::atomic<bool> *interrupt) {
  std::vector<jinja::Value> messages;
  if (options.systemPrompt)
    messages.push_back(message("system", *options.systemPrompt));
  const bool prompt = isatty(STDIN_FILENO);
  auto contextFull = [&](const std::string &what) {
    std::fprintf(stderr, "quill-run: %s the context of %d positions is full; the chat ends\n",
                 what.c_str(), config.seqLen);
    return 0;
  };
  std::string line;
  for (int turn = 1;; ++turn) {
    if (prompt) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) {
      if (prompt)
        std::fputc('\n', stdout);
      return 0;
    }
    // Ctrl-C while the line was typed.
    if (interrupt && interrupt->load(std::memory_order_relaxed))
      return kInterruptedExitCode;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line == "/exit")
      return 0;
    messages.push_back(message("user", line));
    ChatRenderInput input;
    input.messages = jinja::Value::list(messages);
    auto text = prompter.render(input);
    if (!text)
      return text.status();
    std::vector<int32_t> tokens = tokenizer.encodeChat(*text);
    if (int64_t(tokens.size()) > config.seqLen)
      return contextFull("the conversation has " + std::to_string(tokens.size()) + " tokens:");
    auto reply = session.reply(std::move(tokens), replyRequest(options, interrupt), streamText);
    if (!reply)
      return reply.status();
    std::fputc('\n', stdout);
    std::fflush(stdout);
    reportTurn(options, turn, *reply);
    if (reply->result.stop == StopReason::Interrupted)
      return kInterruptedExitCode;
    if (reply->result.stop == StopReason::Context)
      return contextFull("the reply stopped:");
    messages.push_back(message("assistant", reply->result.text));
  }
}

} // namespace

ErrorOr<int> renderChatPrompt(const RunOptions &options, const Artifact &artifact,
                              const Tokenizer &tokenizer) {
  auto prompter = makePrompter(options, artifact, tokenizer);
  if (!prompter)
    return prompter.status();
  auto text = renderInitial(options, *prompter);
  if (!text)
    return text.status();
  streamText(*text);
  return 0;
}

ErrorOr<int> runChat(const RunOptions &options, const Artifact &artifact,
                     const Tokenizer &tokenizer, Device &device, SamplerChain &sampler,
                     const std::atomic<bool> *interrupt) {
  auto prompter = makePrompter(options, artifact, tokenizer);
  if (!prompter)
    return prompter.status();
  const ModelConfig &config = artifact.config();
  Generator generator(device, tokenizer, sampler, config);
  ChatSession session(generator, device.kvCache());
  if (options.chat)
    return chatLoop(options, *prompter, tokenizer, config, session, interrupt);

  auto text = renderInitial(options, *prompter);
  if (!text)
    return text.status();
  std::vector<int32_t> tokens = tokenizer.encodeChat(*text);
  if (int64_t(tokens.size()) > config.seqLen)
    return Status::error(options.messagesFile + ": the chat prompt has " +
                         std::to_string(tokens.size()) + " tokens but the model's context holds " +
                         std::to_string(config.seqLen));
  auto reply = options.json
                   ? session.reply(std::move(tokens), replyRequest(options, interrupt))
                   : session.reply(std::move(tokens), replyRequest(options, interrupt), streamText);
  if (!reply)
    return reply.status();
  printResult(reply->result, options.json, singleSequenceFields(options.sampling, tokenizer));
  reportTurn(options, 1, *reply);
  return reply->result.stop == StopReason::Interrupted ? kInterruptedExitCode : 0;
}

} // namespace quill
