// The lowering report's page.
#include "compiler/Inspect/LoweringReport.h"

#include "runtime/support/Json.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace quill {

namespace {

/// A unified diff as HTML lines, removed and added lines coloured.
std::string diffHtml(const std::string &diff) {
  std::string html;
  size_t begin = 0;
  while (begin < diff.size()) {
    size_t end = diff.find('\n', begin);
    if (end == std::string::npos)
      end = diff.size();
    std::string line = diff.substr(begin, end - begin);
    const char *cls = line.rfind("@@", 0) == 0          ? "hunk"
                      : !line.empty() && line[0] == '-' ? "del"
                      : !line.empty() && line[0] == '+' ? "add"
                                                        : nullptr;
    html += cls ? "<span class=\"" + std::string(cls) + "\">" + htmlEscape(line) + "</span>\n"
                : htmlEscape(line) + "\n";
    begin = end + 1;
  }
  return html;
}

void writeTargets(const LoweringReport &report, std::string &html) {
  html += "<h2 id=\"stages\">The pipeline's stages, per target</h2>\n<p>What <code>--emit=STAGE"
          "</code> stops at, in order; each MLIR stage's passes as <code>quill-opt "
          "--pass-pipeline</code> replays them.</p>\n";
  for (const TargetListing &target : report.targets) {
    html += "<details" + std::string(target.target == report.target ? " open" : "") +
            "><summary><b>" + htmlEscape(target.target) + "</b>: " + htmlEscape(target.summary) +
            (target.target == report.target ? " (this compile)" : "") +
            "</summary>\n<table><tr><th>#</th><th>stage</th><th>passes</th></tr>\n";
    for (size_t i = 0; i < target.stages.size(); ++i) {
      const StageListing &stage = target.stages[i];
      html += "<tr>" + htmlCell(std::to_string(i + 1), true) +
              htmlCell("<b>" + htmlEscape(stage.stage) + "</b>") +
              htmlCell(stage.passes.empty() ? "<span class=\"muted\">after MLIR: produced by the "
                                              "target from the LLVM dialect</span>"
                                            : "<code>" + htmlEscape(stage.passes) + "</code>") +
              "</tr>\n";
    }
    html += "</table></details>\n";
  }
}

void writePasses(const LoweringReport &report, std::string &html) {
  html += "<h2 id=\"passes\">Every pass of this compile</h2>\n<p>" +
          std::to_string(report.passes.size()) + " passes in " +
          fixedText(report.totalSeconds * 1e3, 1) + " ms; the imported module had " +
          std::to_string(report.importLines) +
          " lines. Each diff shows what the pass changed, with constants of more than 16 "
          "elements elided (as <code>--mlir-elide-elementsattrs-if-larger=16</code> prints "
          "them). Open a pass to see its diff.</p>\n";
  html += "<table><tr><th>#</th><th>pass</th><th class=\"n\">ms</th><th class=\"n\">lines "
          "after</th><th class=\"n\">removed</th><th class=\"n\">added</th></tr>\n";
  std::string stage = "\x01";
  std::map<std::string, double> stageSeconds;
  for (const PassRecord &pass : report.passes)
    stageSeconds[pass.stage] += pass.seconds;
  for (size_t i = 0; i < report.passes.size(); ++i) {
    const PassRecord &pass = report.passes[i];
    if (pass.stage != stage) {
      stage = pass.stage;
      html += "<tr class=\"stage\"><td colspan=\"6\">stage " +
              htmlEscape(stage.empty() ? "(after the last stage)" : stage) + " - " +
              fixedText(stageSeconds[stage] * 1e3, 1) + " ms</td></tr>\n";
    }
    std::string name = pass.pipeline.substr(0, pass.pipeline.find('{'));
    std::string body;
    if (pass.removed + pass.added == 0) {
      body = "<code>" + htmlEscape(name) + "</code> <span class=\"muted\">(no change)</span>";
    } else {
      body = "<details><summary><code>" + htmlEscape(name) + "</code> " +
             htmlEscape(pass.description) +
             (pass.minimal ? ""
                           : " <span class=\"muted\">(a rewrite: the changed middle shown "
                             "whole)</span>") +
             "</summary>\n<p class=\"muted\"><code>" + htmlEscape(pass.pipeline) +
             "</code></p>\n<pre>" + diffHtml(pass.diff) +
             (pass.diffLinesLeftOut
                  ? "<span class=\"muted\">... " + std::to_string(pass.diffLinesLeftOut) +
                        " more lines of diff left out</span>\n"
                  : "") +
             "</pre></details>";
    }
    html += "<tr>" + htmlCell(std::to_string(i + 1), true) + htmlCell(body) +
            htmlCell(fixedText(pass.seconds * 1e3, 2), true) +
            htmlCell(std::to_string(pass.linesAfter), true) +
            htmlCell(std::to_string(pass.removed), true) +
            htmlCell(std::to_string(pass.added), true) + "</tr>\n";
  }
  html += "</table>\n";
  if (!report.textStages.empty()) {
    html += "<h3>After the MLIR stages</h3>\n";
    for (const TextStage &text : report.textStages)
      html += "<details><summary>" + htmlEscape(text.name) + ": " + std::to_string(text.lines) +
              " lines, " + humanFigure(double(text.bytes), "B") + "</summary>\n<pre>" +
              htmlEscape(text.head) + "</pre></details>\n";
  }
}

void writeGraph(const LoweringReport &report, std::string &html) {
  html += "<h2 id=\"graph\">The dispatch graph</h2>\n<p>Every step's kernel launches after fusion "
          "(as <code>--emit=dot</code> prints them): nodes are dispatches, edges the buffers "
          "between them, KV cache traffic in red; layers that do the same things are drawn "
          "once with their count.</p>\n";
  if (!report.graphSvg.empty())
    html += "<div class=\"graph\">" + report.graphSvg + "</div>\n";
  else
    html += "<p class=\"muted\">Not drawn: " + htmlEscape(report.graphNote) + "</p>\n";
  html += "<details><summary>DOT source</summary><pre>" + htmlEscape(report.graphDot) +
          "</pre></details>\n";
}

void writeKernels(const LoweringReport &report, std::string &html) {
  const RooflineCeilings &c = report.ceilings;
  html += "<h2 id=\"kernels\">Kernels on the roofline</h2>\n<p>Per launch; attention at " +
          fixedText(report.positions, 0) + " cached positions. Ceilings: " + htmlEscape(c.source) +
          " (memory " + fixedText(c.bandwidthGBs, 1) + " GB/s, fp32 " + fixedText(c.fp32Gflops, 1) +
          " GFLOP/s, int8 " + fixedText(c.int8Gops, 1) +
          " GOP/s). Products over block-quantized weights are held to the int8 peak, the rest "
          "to fp32. The floor is the least time a launch can take under them; a step's floor "
          "sums its launches.</p>\n";
  html += "<table><tr><th>#</th><th>step</th><th>kernel</th><th>quill ops</th><th>weights</th>"
          "<th class=\"n\">launches</th><th class=\"n\">FLOPs</th><th class=\"n\">bytes</th>"
          "<th class=\"n\">FLOP/B</th><th class=\"n\">bound GFLOP/s</th><th>limited by</th>"
          "<th class=\"n\">floor us (all launches)</th></tr>\n";
  std::map<std::string, double> stepFloor;
  std::vector<std::string> stepOrder;
  for (size_t i = 0; i < report.kernels.size(); ++i) {
    const KernelRow &row = report.kernels[i];
    const KernelFigures f = kernelFigures(row, report.positions, c);
    if (!stepFloor.count(row.step))
      stepOrder.push_back(row.step);
    stepFloor[row.step] += f.floorSeconds * 1e6;
    const std::string label = std::to_string(i + 1);
    html += "<tr>" + htmlCell(label, true) + htmlCell(htmlEscape(stepTitle(row.step))) +
            htmlCell("<code>" + htmlEscape(row.kernel) + "</code>") +
            htmlCell(htmlEscape(row.cost.op)) + htmlCell(htmlEscape(row.cost.weightType)) +
            htmlCell(std::to_string(row.launches), true) +
            htmlCell(humanFigure(f.flops, ""), true) + htmlCell(humanFigure(f.bytes, "B"), true) +
            htmlCell(fixedText(f.intensity, 2), true) + htmlCell(fixedText(f.bound, 1), true) +
            htmlCell(f.limit) + htmlCell(fixedText(f.floorSeconds * 1e6, 2), true) + "</tr>\n";
  }
  html += "</table>\n<p>";
  for (const std::string &step : stepOrder)
    html += "Floor of the " + htmlEscape(stepTitle(step)) +
            " step: " + fixedText(stepFloor[step], 1) + " us. ";
  html += "</p>\n";
  html += loweringRooflineSvg(report);
}

} // namespace

KernelFigures kernelFigures(const KernelRow &row, double positions,
                            const RooflineCeilings &ceilings) {
  KernelFigures f;
  f.flops = row.cost.flopsAt(positions);
  f.bytes = row.cost.bytesAt(positions);
  f.intensity = f.bytes > 0 ? f.flops / f.bytes : 0;
  const bool int8 = usesInt8Products(row.cost.weightType);
  f.bound = rooflineBound(ceilings, f.intensity, int8);
  const double peak = int8 && ceilings.int8Gops > 0 ? ceilings.int8Gops : ceilings.fp32Gflops;
  double floor = 0;
  if (ceilings.bandwidthGBs > 0)
    floor = std::max(floor, f.bytes / (ceilings.bandwidthGBs * 1e9));
  if (peak > 0)
    floor = std::max(floor, f.flops / (peak * 1e9));
  f.floorSeconds = floor * double(row.launches);
  f.limit = rooflineLimit(ceilings, f.intensity, int8);
  return f;
}

std::string loweringRooflineSvg(const LoweringReport &report) {
  const RooflineCeilings &c = report.ceilings;
  if (c.bandwidthGBs <= 0 && c.fp32Gflops <= 0)
    return {};
  std::vector<RooflinePoint> points;
  for (size_t i = 0; i < report.kernels.size(); ++i) {
    const KernelRow &row = report.kernels[i];
    const KernelFigures f = kernelFigures(row, report.positions, c);
    points.push_back({std::to_string(i + 1), row.step + " " + row.kernel, f.intensity, f.bound,
                      stepTitle(row.step) + " step"});
  }
  return rooflineSvg(points, c,
                     "Roofline of " + report.model + " on " + report.target +
                         ": each kernel at its bound");
}

std::string kernelTableJson(const LoweringReport &report) {
  const RooflineCeilings &c = report.ceilings;
  std::string json = "{\"ceilings\": {\"bandwidth_gbs\": " + jsonNumber(c.bandwidthGBs) +
                     ", \"fp32_gflops\": " + jsonNumber(c.fp32Gflops) +
                     ", \"int8_gops\": " + jsonNumber(c.int8Gops) +
                     ", \"source\": " + jsonQuote(c.source) +
                     "},\n \"positions\": " + jsonNumber(report.positions) + ",\n \"kernels\": [";
  for (size_t i = 0; i < report.kernels.size(); ++i) {
    const KernelRow &row = report.kernels[i];
    const KernelFigures f = kernelFigures(row, report.positions, c);
    json += std::string(i ? ",\n  " : "\n  ") + "{\"step\": " + jsonQuote(row.step) +
            ", \"kernel\": " + jsonQuote(row.kernel) + ", \"op\": " + jsonQuote(row.cost.op) +
            ", \"weight_type\": " + jsonQuote(row.cost.weightType) +
            ", \"launches\": " + std::to_string(row.launches) +
            ", \"flops\": " + jsonNumber(f.flops) + ", \"bytes\": " + jsonNumber(f.bytes) +
            ", \"intensity\": " + jsonNumber(f.intensity) +
            ", \"bound_gflops\": " + jsonNumber(f.bound) +
            ", \"floor_seconds\": " + jsonNumber(f.floorSeconds) +
            ", \"limit\": " + jsonQuote(f.limit) + "}";
  }
  return json + "\n]}\n";
}

std::string renderLoweringReport(const LoweringReport &report) {
  std::string html = "<h1>Quill lowering report: " + htmlEscape(report.model) + " for " +
                     htmlEscape(report.target) + "</h1>\n<p class=\"muted\"><code>" +
                     htmlEscape(report.commandLine) +
                     "</code></p>\n<p><a href=\"#stages\">stages</a> | <a href=\"#passes\">"
                     "passes</a> | <a href=\"#graph\">dispatch graph</a> | <a href=\"#kernels\">"
                     "kernels and roofline</a></p>\n";
  writeTargets(report, html);
  writePasses(report, html);
  writeGraph(report, html);
  writeKernels(report, html);
  return htmlPage("Quill lowering report: " + report.model, html);
}

std::string renderDotSvg(const std::string &dot, std::string &error) {
  auto program = llvm::sys::findProgramByName("dot");
  if (!program) {
    error = "Graphviz's dot is not on the PATH (apt-get install graphviz)";
    return {};
  }
  llvm::SmallString<128> input, output;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("quill-graph", "dot", fd, input) ||
      llvm::sys::fs::createTemporaryFile("quill-graph", "svg", output)) {
    error = "cannot create a temporary file for Graphviz";
    return {};
  }
  {
    llvm::raw_fd_ostream file(fd, /*shouldClose=*/true);
    file << dot;
  }
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*program, {"dot", "-Tsvg", "-o", output, input}, std::nullopt,
                                     {}, 0, 0, &message);
  auto svg = llvm::MemoryBuffer::getFile(output);
  llvm::sys::fs::remove(input);
  llvm::sys::fs::remove(output);
  if (rc != 0 || !svg) {
    error = "dot -Tsvg failed" + (message.empty() ? "" : ": " + message);
    return {};
  }
  // Inline SVG starts at its element: the XML prolog and DOCTYPE go.
  llvm::StringRef text = (*svg)->getBuffer();
  size_t start = text.find("<svg");
  if (start == llvm::StringRef::npos) {
    error = "dot -Tsvg wrote no SVG";
    return {};
  }
  return text.substr(start).str();
}

} // namespace quill
