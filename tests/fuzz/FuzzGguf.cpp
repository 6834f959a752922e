// libFuzzer target: a GGUF file through openModel, then its tensors and
// tokenizer read as quill-compile reads them.
#include "tests/fuzz/FuzzInput.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto model = quill::openModel(quill::fuzz::inputPath(data, size));
  if (model)
    quill::fuzz::exerciseModel(**model);
  return 0;
}
