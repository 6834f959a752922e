// libFuzzer target: tokenizer bytes (llama2.c's tokenizer.bin, or the
// versioned format) through Tokenizer::fromBytes, for a vocabulary of 512
// (stories260K's) and one taken from the input, then a short text encoded.
#include "runtime/tokenizer/Tokenizer.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const int32_t vocabSizes[] = {512, size > 0 ? int32_t(data[size - 1]) * 4 : 0};
  for (int32_t vocabSize : vocabSizes) {
    auto tokenizer = quill::Tokenizer::fromBytes(data, size, vocabSize, "tokenizer.bin");
    if (tokenizer)
      (void)tokenizer->encode("Once upon a time, caf\xc3\xa9 \xf0\x9f\x98\x80 12345!", true, true);
  }
  return 0;
}
