// --batch-file's format: one prompt per line.
#include "BatchFile.h"

#include "runtime/support/ReadFile.h"

namespace quill {

std::vector<std::string> splitPrompts(std::string_view text) {
  std::vector<std::string> prompts;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    prompts.emplace_back(line);
    begin = end + 1;
  }
  return prompts;
}

ErrorOr<std::vector<std::string>> readPrompts(const std::string &path) {
  auto text = readSmallFile(path, kMaxBatchFileBytes, "batch file");
  if (!text)
    return text.status();
  std::vector<std::string> prompts = splitPrompts(*text);
  if (prompts.empty())
    return Status::error("the batch file " + path + " has no prompts");
  return prompts;
}

} // namespace quill
