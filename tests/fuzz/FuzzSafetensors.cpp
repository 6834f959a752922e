// libFuzzer target: a safetensors file's header and offsets
// (SafetensorsFile::open), then every tensor looked up by name.
#include "compiler/Import/SafetensorsFile.h"
#include "tests/fuzz/FuzzInput.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = quill::SafetensorsFile::open(quill::fuzz::inputPath(data, size));
  if (!file)
    return 0;
  for (const quill::SafetensorsTensor &tensor : file->tensors())
    if (file->find(tensor.name) == nullptr)
      __builtin_trap(); // every listed tensor must be found by its name
  return 0;
}
