// libFuzzer target: a tokenizer.json converted (tokenizerFromHfJson), loaded
// by the runtime and used to encode a short text.
#include "compiler/Import/HfTokenizer.h"
#include "compiler/Import/JsonValue.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto json = quill::parseJson(std::string_view(reinterpret_cast<const char *>(data), size),
                               "tokenizer.json");
  if (!json)
    return 0;
  auto converted = quill::tokenizerFromHfJson(*json, "tokenizer.json", 1, 2);
  if (!converted)
    return 0;
  auto tokenizer = quill::Tokenizer::fromData(converted.take(), "tokenizer.json");
  if (tokenizer)
    (void)tokenizer->encode("Once upon a time, caf\xc3\xa9 \xf0\x9f\x98\x80 12345!", true, false);
  return 0;
}
