// GGUF files of the llama architecture behind the ModelSource interface.
#pragma once

#include "compiler/Import/ModelSource.h"

namespace quill {

/// Opens a GGUF file: llama.* hyperparameters, tensors token_embd,
/// blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,ffn_norm,ffn_gate,
/// ffn_up,ffn_down}, output_norm and output (absent, or equal to token_embd:
/// shared) in F32, F16, BF16 or Q8_0, and the tokenizer in its metadata.
ErrorOr<std::unique_ptr<ModelSource>> openGgufModel(const std::string &path);

/// The llama architecture's GGUF name of Quill's tensor `canonical`
/// ("layers.3.w1" -> "blk.3.ffn_gate.weight"); other names unchanged.
std::string ggufTensorName(const std::string &canonical);

} // namespace quill
