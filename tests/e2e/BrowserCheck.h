// Opening a report page in a real browser (Debian's chromium, headless):
// its console errors, and whether its screenshot shows anything.
#pragma once

#include <string>

namespace quill::test {

/// `page` (an absolute path) opens in headless Chromium without console
/// errors, and its screenshot is not blank. A planted error in a page of
/// its own must be seen first, so that the check can fail. `name` names
/// the temporary files.
void expectOpensAndDraws(const std::string &page, const std::string &name);

} // namespace quill::test
