// Headless Chromium and a PNG decoder for its screenshots (see BrowserCheck.h).
#include "BrowserCheck.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace quill::test {
namespace {

namespace fs = std::filesystem;

/// An RGB(A) image decoded from an 8-bit non-interlaced PNG, as Chromium
/// writes its screenshots.
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

uint32_t bigEndian(const std::string &s, size_t at) {
  return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 |
         uint32_t(uint8_t(s[at + 2])) << 8 | uint32_t(uint8_t(s[at + 3]));
}

/// Decodes per the PNG specification: chunks, zlib, then each row's filter.
bool decodePng(const std::string &file, Image &image) {
  if (file.size() < 8 || file.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0)
    return false;
  std::string idat;
  int bitDepth = 0, colorType = 0, interlace = 0;
  for (size_t at = 8; at + 12 <= file.size();) {
    uint32_t length = bigEndian(file, at);
    std::string type = file.substr(at + 4, 4);
    if (at + 12 + length > file.size())
      return false;
    if (type == "IHDR") {
      image.width = int(bigEndian(file, at + 8));
      image.height = int(bigEndian(file, at + 12));
      bitDepth = uint8_t(file[at + 16]);
      colorType = uint8_t(file[at + 17]);
      interlace = uint8_t(file[at + 20]);
    } else if (type == "IDAT") {
      idat += file.substr(at + 8, length);
    }
    at += 12 + length;
  }
  if (bitDepth != 8 || interlace != 0 || (colorType != 2 && colorType != 6))
    return false;
  image.channels = colorType == 6 ? 4 : 3;
  const size_t stride = size_t(image.width) * image.channels;
  std::vector<uint8_t> raw(size_t(image.height) * (stride + 1));
  uLongf rawSize = raw.size();
  if (uncompress(raw.data(), &rawSize, reinterpret_cast<const Bytef *>(idat.data()), idat.size()) !=
          Z_OK ||
      rawSize != raw.size())
    return false;
  image.pixels.assign(size_t(image.height) * stride, 0);
  const int bpp = image.channels;
  for (int y = 0; y < image.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t *in = &raw[y * (stride + 1) + 1];
    uint8_t *out = &image.pixels[y * stride];
    const uint8_t *up = y ? &image.pixels[(y - 1) * stride] : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      int a = x >= size_t(bpp) ? out[x - bpp] : 0, b = up ? up[x] : 0,
          c = up && x >= size_t(bpp) ? up[x - bpp] : 0;
      int predictor = 0;
      switch (filter) {
      case 0:
        break;
      case 1:
        predictor = a;
        break;
      case 2:
        predictor = b;
        break;
      case 3:
        predictor = (a + b) / 2;
        break;
      case 4: {
        int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
        predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
        break;
      }
      default:
        return false;
      }
      out[x] = uint8_t(in[x] + predictor);
    }
  }
  return true;
}

/// Opens `page` in headless Chromium and screenshots it; the console's
/// error lines, and whether Chromium ran at all.
struct BrowserRun {
  bool ran = false;
  std::string errors; ///< Console errors and uncaught exceptions.
  std::string screenshot;
  std::string log;
};
BrowserRun openInChromium(const std::string &page, const std::string &name) {
  BrowserRun result;
  const std::string shot = tempDir() + "/" + name + ".png";
  const std::string profile = tempDir() + "/" + name + "-chromium-profile";
  fs::remove(shot);
  // Console messages reach stderr as "CONSOLE" log lines at --v=0; the
  // page gets time to run its scripts before the screenshot.
  CommandResult r = run("timeout 120 chromium --headless --no-sandbox --disable-gpu "
                        "--no-first-run --user-data-dir=" +
                        quote(profile) +
                        " --enable-logging=stderr --v=0 --window-size=1280,1600 "
                        "--virtual-time-budget=2000 --screenshot=" +
                        quote(shot) + " " + quote("file://" + page) + " 2>&1");
  result.log = r.out + r.err;
  result.ran = r.exitCode == 0 && fs::exists(shot);
  std::istringstream lines(result.log);
  std::string line;
  while (std::getline(lines, line))
    if (line.find("CONSOLE") != std::string::npos &&
        (line.find("ERROR") != std::string::npos || line.find("Uncaught") != std::string::npos ||
         line.find("rror") != std::string::npos))
      result.errors += line + "\n";
  if (result.ran)
    result.screenshot = readFile(shot);
  return result;
}

} // namespace

void expectOpensAndDraws(const std::string &page, const std::string &name) {
  // The harness must see an error where there is one.
  const std::string broken = tempDir() + "/" + name + "-broken.html";
  {
    std::ofstream file(broken);
    file << "<!DOCTYPE html><html><body><p>x</p><script>console.error('planted error');"
            "undefinedFunction();</script></body></html>";
  }
  BrowserRun control = openInChromium(broken, name + "-broken");
  ASSERT_TRUE(control.ran) << control.log;
  ASSERT_NE(control.errors.find("planted error"), std::string::npos)
      << "console errors are not visible in chromium's log:\n"
      << control.log;

  BrowserRun opened = openInChromium(page, name);
  ASSERT_TRUE(opened.ran) << opened.log;
  EXPECT_EQ(opened.errors, "") << opened.log;
  Image image;
  ASSERT_TRUE(decodePng(opened.screenshot, image)) << "the screenshot is not a PNG Quill reads";
  EXPECT_EQ(image.width, 1280);
  // Not blank: many pixels differ from the background (the first pixel),
  // in many colours (text, tables, the diff's and the chart's colours).
  size_t differing = 0;
  std::set<uint32_t> colours;
  const size_t n = size_t(image.width) * image.height;
  for (size_t p = 0; p < n; ++p) {
    const uint8_t *px = &image.pixels[p * image.channels];
    differing += std::memcmp(px, image.pixels.data(), 3) != 0;
    colours.insert(uint32_t(px[0]) << 16 | uint32_t(px[1]) << 8 | px[2]);
  }
  EXPECT_GT(differing, n / 50) << "the page drew almost nothing";
  EXPECT_GT(colours.size(), 20u);
}

} // namespace quill::test
