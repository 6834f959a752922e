// libFuzzer target: a llama2.c checkpoint (legacy, headerless, or version 1)
// through the llama2.c reader, then its tensors read as fp32.
#include "compiler/Import/Llama2cSource.h"
#include "tests/fuzz/FuzzInput.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto model = quill::openLlama2cModel(quill::fuzz::inputPath(data, size));
  if (model)
    quill::fuzz::exerciseModel(**model);
  return 0;
}
