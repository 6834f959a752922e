// The measured roofline's page, chart and JSON (see ProfileReport.h).
#include "runtime/bench/ProfileReport.h"

#include "runtime/bench/MachineProbes.h"
#include "runtime/support/Json.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

namespace quill {

namespace {

std::string percent(double fraction) { return fixedText(100 * fraction, 1) + "%"; }

void writeSummary(const ProfileRun &run, const std::vector<MeasuredKernel> &kernels,
                  std::string &html) {
  const RooflineCeilings &c = run.ceilings;
  html += "<p>Ceilings: " + htmlEscape(c.source) + " (memory " + fixedText(c.bandwidthGBs, 1) +
          " GB/s, " +
          (c.fp32Gflops > 0 ? "fp32 " + fixedText(c.fp32Gflops, 1) + " GFLOP/s, "
                            : std::string("no FLOP peak, ")) +
          (c.int8Gops > 0 ? "int8 " + fixedText(c.int8Gops, 1) + " GOP/s"
                          : std::string("no int8 dot-product peak")) +
          "). Each kernel's FLOPs and bytes are the compiler's count (the artifact's "
          "kernel costs) at the cached positions each launch read; its time was measured "
          "around every launch, one kernel at a time. Products over block-quantized weights "
          "are held to the int8 peak, the rest to fp32; a kernel without FLOPs (a cache "
          "write) to the bandwidth. The memory ceiling is the DRAM's, probed over a buffer "
          "far larger than the caches: a kernel whose bytes stay in cache between steps (a "
          "model that fits there) can run above it.</p>\n";
  // Per step: its kernel time and how close, weighted by time, its counted
  // kernels came (those without a count are left out of the weighting).
  struct StepFigures {
    double seconds = 0, countedSeconds = 0, weighted = 0;
  };
  std::map<CostStep, StepFigures> steps;
  double total = 0;
  for (const MeasuredKernel &k : kernels) {
    StepFigures &f = steps[k.entry.step];
    f.seconds += k.entry.seconds;
    if (k.entry.cost) {
      f.countedSeconds += k.entry.seconds;
      f.weighted += k.entry.seconds * k.ofBound;
    }
    total += k.entry.seconds;
  }
  html += "<table><tr><th>step</th><th class=\"n\">kernel time ms</th><th class=\"n\">share"
          "</th><th class=\"n\">of its ceilings (time-weighted)</th></tr>\n";
  for (const auto &[step, f] : steps)
    html += "<tr>" + htmlCell(htmlEscape(stepTitle(costStepName(step)))) +
            htmlCell(fixedText(f.seconds * 1e3, 3), true) +
            htmlCell(percent(total > 0 ? f.seconds / total : 0), true) +
            htmlCell(f.countedSeconds > 0 ? percent(f.weighted / f.countedSeconds) : "not counted",
                     true) +
            "</tr>\n";
  html += "</table>\n";
}

void writeTable(const std::vector<MeasuredKernel> &kernels, std::string &html) {
  double total = 0;
  for (const MeasuredKernel &k : kernels)
    total += k.entry.seconds;
  html += "<h2 id=\"kernels\">Kernels, most time first</h2>\n"
          "<table><tr><th>#</th><th>step</th><th>kernel</th><th>quill ops</th><th>weights</th>"
          "<th class=\"n\">launches</th><th class=\"n\">ms</th><th class=\"n\">share</th>"
          "<th class=\"n\">us per launch</th><th class=\"n\">GFLOP/s</th><th class=\"n\">GB/s"
          "</th><th class=\"n\">FLOP/B</th><th class=\"n\">bound GFLOP/s</th><th>limited by"
          "</th><th class=\"n\">of the bound</th></tr>\n";
  for (size_t i = 0; i < kernels.size(); ++i) {
    const MeasuredKernel &k = kernels[i];
    const KernelProfile::Entry &e = k.entry;
    const bool counted = e.cost != nullptr;
    html +=
        "<tr>" + htmlCell(std::to_string(i + 1), true) +
        htmlCell(htmlEscape(stepTitle(costStepName(e.step)))) +
        htmlCell("<code>" + htmlEscape(e.kernel) + "</code>") +
        htmlCell(counted ? htmlEscape(e.cost->op) : "<span class=\"muted\">not counted</span>") +
        htmlCell(counted ? htmlEscape(e.cost->weightType) : "") +
        htmlCell(std::to_string(e.launches), true) + htmlCell(fixedText(e.seconds * 1e3, 3), true) +
        htmlCell(percent(total > 0 ? e.seconds / total : 0), true) +
        htmlCell(fixedText(e.launches ? e.seconds * 1e6 / double(e.launches) : 0, 2), true) +
        htmlCell(counted ? fixedText(k.gflops, 2) : "", true) +
        htmlCell(fixedText(k.gbs, 1), true) +
        htmlCell(counted ? fixedText(k.intensity, 2) : "", true) +
        htmlCell(k.bound > 0 ? fixedText(k.bound, 1) : "", true) + htmlCell(k.limit) +
        htmlCell(k.ofBound > 0 ? percent(k.ofBound) : "", true) + "</tr>\n";
  }
  html += "</table>\n";
}

} // namespace

RooflineCeilings probeCeilings(Device &device, tbb::task_arena &arena) {
  RooflineCeilings c;
  if (std::string(device.name()) != "cpu") {
    c.bandwidthGBs = device.measureOwnBandwidthGBs();
    c.source = std::string("the ") + device.name() +
               " device's own memory bandwidth, probed after the run (no FLOP peak probed)";
    return c;
  }
  c.bandwidthGBs = measureReadBandwidth(arena, 3);
  c.fp32Gflops = measureFmaPeak(arena, 3);
  c.int8Gops = measureInt8DotPeak(arena, 3);
  c.source = "probed on this machine after the run, " + std::to_string(arena.max_concurrency()) +
             " thread(s) as the run had";
  return c;
}

MeasuredKernel measureKernel(const KernelProfile::Entry &entry, const RooflineCeilings &ceilings) {
  MeasuredKernel k;
  k.entry = entry;
  if (entry.seconds > 0) {
    k.gflops = entry.flops / entry.seconds / 1e9;
    k.gbs = entry.bytes / entry.seconds / 1e9;
  }
  if (!entry.cost || !std::isfinite(k.gflops) || !std::isfinite(k.gbs)) {
    k.limit = "?";
    return k;
  }
  if (entry.flops > 0 && entry.bytes > 0) {
    k.intensity = entry.flops / entry.bytes;
    k.bound = rooflineBound(ceilings, k.intensity, entry.cost->int8Products);
    k.limit = rooflineLimit(ceilings, k.intensity, entry.cost->int8Products);
    k.ofBound = k.bound > 0 ? k.gflops / k.bound : 0;
  } else {
    // Moves bytes only (a cache write): held to the bandwidth.
    k.limit = ceilings.bandwidthGBs > 0 ? "memory" : "?";
    k.ofBound = ceilings.bandwidthGBs > 0 ? k.gbs / ceilings.bandwidthGBs : 0;
  }
  return k;
}

std::string profileRooflineSvg(const ProfileRun &run, const std::vector<MeasuredKernel> &kernels) {
  std::vector<RooflinePoint> points;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const MeasuredKernel &k = kernels[i];
    if (k.intensity > 0 && k.gflops > 0)
      points.push_back({std::to_string(i + 1),
                        stepTitle(costStepName(k.entry.step)) + " " + k.entry.kernel, k.intensity,
                        k.gflops, stepTitle(costStepName(k.entry.step)) + " step"});
  }
  return rooflineSvg(points, run.ceilings,
                     "Measured roofline of " + run.model + ": each kernel at the rate it reached");
}

std::string renderProfileReport(const ProfileRun &run, const std::vector<MeasuredKernel> &kernels) {
  // A long prompt on the command line is cut: the page is about kernels.
  constexpr size_t kCommandShown = 240;
  std::string command = run.commandLine;
  if (command.size() > kCommandShown) {
    // Not inside a character (at most 3 continuation bytes back).
    size_t cut = kCommandShown;
    for (int back = 0; back < 3 && (uint8_t(command[cut]) & 0xC0) == 0x80; ++back)
      --cut;
    command = command.substr(0, cut) + "\u2026";
  }
  std::string html = "<h1>Quill profile: " + htmlEscape(run.model) +
                     "</h1>\n<p class=\"muted\"><code>" + htmlEscape(command) + "</code><br>" +
                     htmlEscape(run.device) + "</p>\n";
  writeSummary(run, kernels, html);
  html += "<h2 id=\"roofline\">Measured roofline</h2>\n<p>Each kernel at the rate it reached, "
          "labelled by its row below; the lines are the ceilings. A point far under its "
          "line has room to gain.</p>\n" +
          profileRooflineSvg(run, kernels);
  writeTable(kernels, html);
  return htmlPage("Quill profile: " + run.model, html);
}

std::string profileJson(const ProfileRun &run, const std::vector<MeasuredKernel> &kernels) {
  const RooflineCeilings &c = run.ceilings;
  std::string json = "{\"model\": " + jsonQuote(run.model) + ",\n \"ceilings\": {" +
                     "\"bandwidth_gbs\": " + jsonNumber(c.bandwidthGBs) +
                     ", \"fp32_gflops\": " + jsonNumber(c.fp32Gflops) +
                     ", \"int8_gops\": " + jsonNumber(c.int8Gops) +
                     ", \"source\": " + jsonQuote(c.source) + "},\n \"kernels\": [";
  for (size_t i = 0; i < kernels.size(); ++i) {
    const MeasuredKernel &k = kernels[i];
    const KernelProfile::Entry &e = k.entry;
    json += std::string(i ? ",\n  " : "\n  ") + "{\"step\": " + jsonQuote(costStepName(e.step)) +
            ", \"kernel\": " + jsonQuote(e.kernel) +
            ", \"op\": " + (e.cost ? jsonQuote(e.cost->op) : "null") +
            ", \"weight_type\": " + (e.cost ? jsonQuote(e.cost->weightType) : "null") +
            ", \"launches\": " + std::to_string(e.launches) +
            ", \"seconds\": " + jsonNumber(e.seconds) +
            ", \"flops\": " + (e.cost ? jsonNumber(e.flops) : "null") +
            ", \"bytes\": " + jsonNumber(e.bytes) + ", \"gflops\": " + jsonNumber(k.gflops) +
            ", \"gbs\": " + jsonNumber(k.gbs) + ", \"intensity\": " + jsonNumber(k.intensity) +
            ", \"bound_gflops\": " + jsonNumber(k.bound) + ", \"limit\": " + jsonQuote(k.limit) +
            ", \"of_bound\": " + jsonNumber(k.ofBound) + "}";
  }
  return json + "\n]}\n";
}

Status writeProfileReport(const std::string &dir, const ProfileRun &run,
                          const KernelProfile &profile) {
  std::vector<MeasuredKernel> kernels;
  for (const KernelProfile::Entry &entry : profile.entries())
    kernels.push_back(measureKernel(entry, run.ceilings));
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    return Status::error(dir + ": cannot create the report directory: " + error.message());
  for (const auto &[name, text] :
       {std::pair<const char *, std::string>{"index.html", renderProfileReport(run, kernels)},
        {"kernels.json", profileJson(run, kernels)},
        {"roofline.svg", profileRooflineSvg(run, kernels)}}) {
    const std::string path = dir + "/" + name;
    std::ofstream file(path, std::ios::binary);
    file << text;
    file.close();
    if (!file)
      return Status::error(path + ": cannot write the report");
  }
  return Status::ok();
}

} // namespace quill
