// The pieces of Quill's HTML reports (quill-compile --report, quill-run
// --profile --report): escaping, the page frame, and the roofline chart.
// Self-contained output: inline CSS and SVG, no scripts, no network.
#pragma once

#include <string>
#include <vector>

namespace quill {

/// `text` with &, <, >, " and ' escaped, and bytes that are not valid
/// UTF-8 replaced by U+FFFD, so it can go anywhere in a page.
std::string htmlEscape(const std::string &text);

/// `value` with `digits` decimals ("12.35").
std::string fixedText(double value, int digits);

/// A schedule as a user knows it: "step" (the single-sequence step) is
/// "decode"; "prefill" and "batch" stay.
std::string stepTitle(const std::string &schedule);

/// A table cell holding `html`; numbers are right-aligned.
std::string htmlCell(const std::string &html, bool number = false);

/// A whole HTML page: `body` (HTML) under `title`, with the reports' CSS.
std::string htmlPage(const std::string &title, const std::string &body);

/// The ceilings a roofline is drawn under.
struct RooflineCeilings {
  double bandwidthGBs = 0; ///< Memory bandwidth (0: not known, no slope drawn).
  double fp32Gflops = 0;   ///< Float FMA peak (0: not known).
  double int8Gops = 0;     ///< Int8 dot-product peak (0: none or not known).
  std::string source;      ///< Where they come from ("probed on this machine").
};

/// One kernel on the chart: at its arithmetic intensity, either at the
/// rate it reached (measured) or at the most its ceilings allow.
struct RooflinePoint {
  std::string label;    ///< Shown beside it ("3") and named in its tooltip.
  std::string name;     ///< The kernel, for the tooltip.
  double intensity = 0; ///< FLOPs per byte moved.
  double gflops = 0;    ///< GFLOP/s (or GOP/s for int8 products).
  std::string group;    ///< Points of a group share a colour and a legend entry ("decode").
};

/// The rate `ceilings` allow at `intensity`: the bandwidth slope or the
/// peak (int8 where `int8`, else fp32), whichever is lower; 0 if unknown.
double rooflineBound(const RooflineCeilings &ceilings, double intensity, bool int8);

/// Which ceiling limits a kernel at `intensity`: "memory", "fp32 compute",
/// "int8 compute" (with `int8` and an int8 peak), or "?" without ceilings.
std::string rooflineLimit(const RooflineCeilings &ceilings, double intensity, bool int8);

/// A log-log roofline chart as inline SVG: the bandwidth slope, the fp32
/// and int8 roofs, and `points` coloured by group.
std::string rooflineSvg(const std::vector<RooflinePoint> &points, const RooflineCeilings &ceilings,
                        const std::string &caption);

} // namespace quill
