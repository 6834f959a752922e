// libFuzzer target: the importer's JSON parser (parseJson) and the runtime's
// JSON writer (jsonQuote), whose output must itself parse back to a string.
#include "compiler/Import/JsonValue.h"
#include "runtime/support/Json.h"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  (void)quill::parseJson(text, "fuzz.json");
  auto quoted = quill::parseJson(quill::jsonQuote(text), "quoted.json");
  if (!quoted || quoted->kind() != quill::JsonValue::Kind::String)
    __builtin_trap(); // jsonQuote promises valid JSON
  return 0;
}
