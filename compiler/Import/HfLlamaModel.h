// Hugging Face Llama checkpoint directories behind the ModelSource
// interface.
#pragma once

#include "compiler/Import/ModelSource.h"

namespace quill {

/// Opens the checkpoint in `directory`: config.json (LlamaForCausalLM), the
/// weights from model.safetensors.index.json's shards, else `weightsFile`
/// when given, else model.safetensors (F32, F16 or BF16), and tokenizer.json
/// on demand. `givenPath` is what the user named, for messages.
ErrorOr<std::unique_ptr<ModelSource>> openHfLlamaModel(const std::string &directory,
                                                       const std::string &weightsFile,
                                                       const std::string &givenPath);

} // namespace quill
