// libFuzzer target: quill-run's --batch-file reader (readPrompts), on the
// input as a file. It returns one prompt per line, none holding a newline,
// whose lines joined again give the file back (less "\r" before "\n" and a
// final newline), or an error for a file with no prompts.
#include "BatchFile.h"

#include "FuzzInput.h"

#include <cstdint>
#include <string>

namespace {

[[noreturn]] void fail() { __builtin_trap(); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto prompts = quill::readPrompts(quill::fuzz::inputPath(data, size));
  if (!prompts) {
    if (size != 0)
      fail();
    return 0;
  }
  std::string file(reinterpret_cast<const char *>(data), size), joined;
  if (!file.empty() && file.back() == '\n')
    file.pop_back();
  std::string expected;
  for (size_t i = 0; i < file.size(); ++i)
    if (!(file[i] == '\r' && (i + 1 == file.size() || file[i + 1] == '\n')))
      expected += file[i];
  for (size_t i = 0; i < prompts->size(); ++i) {
    if ((*prompts)[i].find('\n') != std::string::npos)
      fail();
    joined += (i ? "\n" : "") + (*prompts)[i];
  }
  if (joined != expected)
    fail();
  return 0;
}
