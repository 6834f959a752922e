// What the chat-template tests share: the shared templates and whether the
// Python jinja2 reference (tests/chat/render_reference.py) can run here.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace quill::test {

/// ../shared/templates (QUILL_SHARED_DIR, set by tests/CMakeLists.txt).
inline std::filesystem::path sharedTemplatesDir() {
  return std::filesystem::path(QUILL_SHARED_DIR) / "templates";
}

/// The .jinja file names there, sorted; none when the folder is absent.
inline std::vector<std::string> sharedTemplateNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(sharedTemplatesDir(), ec))
    if (entry.path().extension() == ".jinja")
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// Why the Python reference cannot run here, or "" when it can.
inline std::string pythonJinjaUnavailable() {
  if (std::system("python3 -c 'import jinja2' >/dev/null 2>&1") != 0)
    return "python3 with jinja2 is not installed (Debian: python3-jinja2)";
  return "";
}

} // namespace quill::test
