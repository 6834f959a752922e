// quill-run's chat modes: --render-prompt, --messages (one reply to a
// conversation) and --chat (a conversation on stdin kept in the KV cache).
#pragma once

#include "RunOptions.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/device/Device.h"
#include "runtime/sampling/Sampler.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <atomic>

namespace quill {

/// Whether `options` ask for a chat mode.
inline bool isChatMode(const RunOptions &options) {
  return options.chat || !options.messagesFile.empty();
}

/// --render-prompt: prints the prompt --messages or --chat would start from.
/// Returns the exit code, or the error to print.
ErrorOr<int> renderChatPrompt(const RunOptions &options, const Artifact &artifact,
                              const Tokenizer &tokenizer);

/// --messages or --chat on `device` with `sampler`; `interrupt` stops a
/// reply (and the session). Returns the exit code, or the error to print.
ErrorOr<int> runChat(const RunOptions &options, const Artifact &artifact,
                     const Tokenizer &tokenizer, Device &device, SamplerChain &sampler,
                     const std::atomic<bool> *interrupt);

} // namespace quill
