// The chat modes: a conversation rendered with the chat template, tokenized
// with its special tokens whole, and answered; --chat keeps it in the KV
// cache across turns (ChatSession).
#include "ChatMode.h"

#include "ResultJson.h"

#include "runtime/chat/ChatPrompter.h"
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

/// The template of --chat-template, else the artifact's.
ErrorOr<ChatPrompter> makePrompter(const RunOptions &options, const Artifact &artifact,
                                   const Tokenizer &tokenizer) {
  return ChatPrompter::load(options.chatTemplateFile, artifact, tokenizer);
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
ErrorOr<std::string> renderInitial(const RunOptions &options, const ChatPrompter &prompter) {
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
ErrorOr<int> chatLoop(const RunOptions &options, const ChatPrompter &prompter,
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
