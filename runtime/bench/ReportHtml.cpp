// HTML and SVG text for the reports: a page frame and a roofline chart.
#include "runtime/bench/ReportHtml.h"

#include "runtime/support/MarkupEscape.h"
#include "runtime/support/Utf8.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace quill {

std::string htmlEscape(const std::string &text) {
  // Ill-formed UTF-8 (a kernel or file name) becomes U+FFFD first.
  Utf8Stream wellFormed;
  std::string valid = wellFormed.push(text);
  valid += wellFormed.finish();
  return escapeMarkup(valid);
}

std::string fixedText(double value, int digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string stepTitle(const std::string &schedule) {
  return schedule == "step" ? "decode" : schedule;
}

std::string htmlCell(const std::string &html, bool number) {
  return std::string(number ? "<td class=\"n\">" : "<td>") + html + "</td>";
}

std::string htmlPage(const std::string &title, const std::string &body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
         htmlEscape(title) +
         "</title>\n<style>\n"
         "body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#1d1d1f;max-width:1400px}\n"
         "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}\n"
         "table{border-collapse:collapse;font-size:.9em}\n"
         "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}\n"
         "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
         "th{background:#f1f3f6}tr.stage td{background:#eef4ff;font-weight:600}\n"
         "details{margin:.15em 0}summary{cursor:pointer}\n"
         "pre{font-size:.8em;background:#fafafa;border:1px solid #e3e3e3;padding:.4em;"
         "overflow:auto;max-height:40em}\n"
         ".del{background:#ffe8e8;color:#8a1010}.add{background:#e6ffec;color:#0b5a1f}"
         ".hunk{color:#6a4fa0}\n"
         ".muted{color:#666}.graph{overflow:auto;border:1px solid #ddd;max-height:60em}\n"
         "code{font-size:.9em}\n"
         "</style></head><body>\n" +
         body + "\n</body></html>\n";
}

double rooflineBound(const RooflineCeilings &ceilings, double intensity, bool int8) {
  double peak = int8 && ceilings.int8Gops > 0 ? ceilings.int8Gops : ceilings.fp32Gflops;
  double slope = ceilings.bandwidthGBs * intensity;
  if (ceilings.bandwidthGBs <= 0)
    return peak;
  return peak <= 0 ? slope : std::min(peak, slope);
}

std::string rooflineLimit(const RooflineCeilings &ceilings, double intensity, bool int8) {
  const bool int8Roof = int8 && ceilings.int8Gops > 0;
  const double peak = int8Roof ? ceilings.int8Gops : ceilings.fp32Gflops;
  if (ceilings.bandwidthGBs <= 0 && peak <= 0)
    return "?";
  if (peak <= 0 || (ceilings.bandwidthGBs > 0 && ceilings.bandwidthGBs * intensity < peak))
    return "memory";
  return int8Roof ? "int8 compute" : "fp32 compute";
}

namespace {

std::string number(double value) { return fixedText(value, 1); }

/// "0.01", "1", "100", "10k": an axis label for a power of ten.
std::string decade(int exponent) {
  if (exponent < 0) {
    std::string text = "0.";
    for (int i = -1; i > exponent; --i)
      text += '0';
    return text + "1";
  }
  static const char *const suffix[] = {"", "0", "00", "k", "0k", "00k", "M", "0M", "00M", "G"};
  return exponent < 10 ? "1" + std::string(suffix[exponent]) : "1e" + std::to_string(exponent);
}

} // namespace

std::string rooflineSvg(const std::vector<RooflinePoint> &points, const RooflineCeilings &ceilings,
                        const std::string &caption) {
  // The axes span every point and the ridge points, in whole decades.
  double xMin = 1e30, xMax = 0, yMin = 1e30, yMax = 0;
  auto include = [&](double x, double y) {
    if (x > 0) {
      xMin = std::min(xMin, x);
      xMax = std::max(xMax, x);
    }
    if (y > 0) {
      yMin = std::min(yMin, y);
      yMax = std::max(yMax, y);
    }
  };
  // Only finite, positive points are drawn (and span the axes).
  auto drawn = [](const RooflinePoint &p) {
    return std::isfinite(p.intensity) && std::isfinite(p.gflops) && p.intensity > 0 && p.gflops > 0;
  };
  for (const RooflinePoint &p : points)
    if (drawn(p))
      include(p.intensity, p.gflops);
  for (double peak : {ceilings.fp32Gflops, ceilings.int8Gops})
    if (peak > 0 && ceilings.bandwidthGBs > 0)
      include(peak / ceilings.bandwidthGBs, peak);
  if (xMax == 0)
    include(1, 1);
  if (yMax == 0)
    include(xMin, 1);
  const int x0 = int(std::floor(std::log10(xMin))),
            x1 = std::max(x0 + 1, int(std::ceil(std::log10(xMax * 2))));
  const int y0 = int(std::floor(std::log10(yMin))),
            y1 = std::max(y0 + 1, int(std::ceil(std::log10(yMax * 1.5))));
  const double left = 70, top = 20, width = 640, height = 380;
  auto px = [&](double x) { return left + (std::log10(x) - x0) / (x1 - x0) * width; };
  auto py = [&](double y) { return top + height - (std::log10(y) - y0) / (y1 - y0) * height; };
  const double xLo = std::pow(10.0, x0), xHi = std::pow(10.0, x1);

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    number(left + width + 200) + "\" height=\"" + number(top + height + 60) +
                    "\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\">\n<title>" +
                    htmlEscape(caption) + "</title>\n";
  // Grid and decade labels.
  for (int e = x0; e <= x1; ++e)
    svg += "<line x1=\"" + number(px(std::pow(10.0, e))) + "\" y1=\"" + number(top) + "\" x2=\"" +
           number(px(std::pow(10.0, e))) + "\" y2=\"" + number(top + height) +
           "\" stroke=\"#e4e4e4\"/><text x=\"" + number(px(std::pow(10.0, e))) + "\" y=\"" +
           number(top + height + 16) + "\" text-anchor=\"middle\">" + decade(e) + "</text>\n";
  for (int e = y0; e <= y1; ++e)
    svg += "<line x1=\"" + number(left) + "\" y1=\"" + number(py(std::pow(10.0, e))) + "\" x2=\"" +
           number(left + width) + "\" y2=\"" + number(py(std::pow(10.0, e))) +
           "\" stroke=\"#e4e4e4\"/><text x=\"" + number(left - 6) + "\" y=\"" +
           number(py(std::pow(10.0, e)) + 4) + "\" text-anchor=\"end\">" + decade(e) + "</text>\n";
  svg += "<rect x=\"" + number(left) + "\" y=\"" + number(top) + "\" width=\"" + number(width) +
         "\" height=\"" + number(height) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  svg += "<text x=\"" + number(left + width / 2) + "\" y=\"" + number(top + height + 36) +
         "\" text-anchor=\"middle\">arithmetic intensity (FLOP per byte)</text>\n";
  svg += "<text transform=\"translate(16," + number(top + height / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">GFLOP/s (GOP/s for int8)</text>\n";

  // Ceilings: the slope up to each roof, then the roof.
  auto roof = [&](double peak, const std::string &color, const std::string &name) {
    if (peak <= 0)
      return;
    double ridge = ceilings.bandwidthGBs > 0 ? peak / ceilings.bandwidthGBs : xLo;
    double start = std::max(xLo, ridge);
    svg += "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\" points=\"";
    if (ceilings.bandwidthGBs > 0 && ridge > xLo) {
      double yStart = ceilings.bandwidthGBs * xLo;
      double xFrom = xLo;
      if (yStart < std::pow(10.0, y0)) { // Enter through the bottom edge.
        xFrom = std::pow(10.0, y0) / ceilings.bandwidthGBs;
        yStart = std::pow(10.0, y0);
      }
      svg += number(px(xFrom)) + "," + number(py(yStart)) + " ";
    }
    svg += number(px(start)) + "," + number(py(peak)) + " " + number(px(xHi)) + "," +
           number(py(peak)) + "\"/>\n<text x=\"" + number(px(xHi) + 6) + "\" y=\"" +
           number(py(peak) + 4) + "\" fill=\"" + color + "\">" + htmlEscape(name) + " " +
           number(peak) + "</text>\n";
  };
  roof(ceilings.int8Gops, "#b7791f", "int8 peak");
  roof(ceilings.fp32Gflops, "#2b6cb0", "fp32 peak");
  if (ceilings.bandwidthGBs > 0)
    svg += "<text x=\"" + number(left + 8) + "\" y=\"" + number(top + 14) +
           "\" fill=\"#2b6cb0\">memory " + number(ceilings.bandwidthGBs) + " GB/s</text>\n";

  // A colour per group, in the order the groups come, with a legend.
  static const char *const palette[] = {"#c53030", "#2f855a", "#6b46c1", "#dd6b20", "#2c7a7b"};
  std::vector<std::string> groups;
  auto colourOf = [&](const std::string &group) {
    auto it = std::find(groups.begin(), groups.end(), group);
    if (it == groups.end()) {
      groups.push_back(group);
      it = groups.end() - 1;
    }
    return std::string(palette[(it - groups.begin()) % 5]);
  };
  for (const RooflinePoint &p : points)
    colourOf(p.group);
  for (size_t g = 0; g < groups.size() && !groups[g].empty(); ++g)
    svg += "<circle cx=\"" + number(left + 14) + "\" cy=\"" + number(top + 32 + 16 * g) +
           "\" r=\"4\" fill=\"" + colourOf(groups[g]) + "\"/><text x=\"" + number(left + 24) +
           "\" y=\"" + number(top + 36 + 16 * g) + "\">" + htmlEscape(groups[g]) + "</text>\n";
  for (const RooflinePoint &p : points) {
    if (!drawn(p))
      continue;
    svg += "<g><title>" +
           htmlEscape(p.label + ": " + p.name + " - " + number(p.intensity) + " FLOP/B, " +
                      number(p.gflops) + " GFLOP/s") +
           "</title><circle cx=\"" + number(px(p.intensity)) + "\" cy=\"" + number(py(p.gflops)) +
           "\" r=\"4\" fill=\"" + colourOf(p.group) + "\" fill-opacity=\"0.75\"/><text x=\"" +
           number(px(p.intensity) + 6) + "\" y=\"" + number(py(p.gflops) - 4) +
           "\" font-size=\"10\">" + htmlEscape(p.label) + "</text></g>\n";
  }
  return svg + "</svg>\n";
}

} // namespace quill
