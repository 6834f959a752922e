// llama2.c checkpoints (legacy and "ak42" v1) behind the ModelSource
// interface.
#pragma once

#include "compiler/Import/ModelSource.h"

namespace quill {

/// Opens a llama2.c checkpoint; its weights are fp32 and read in place.
ErrorOr<std::unique_ptr<ModelSource>> openLlama2cModel(const std::string &path);

} // namespace quill
