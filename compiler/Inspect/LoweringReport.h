// quill-compile --report: one self-contained HTML page of a compile's
// lowering: the stages of every target, each pass's before/after diff and
// time, the dispatch graph, and the kernels on a roofline.
#pragma once

#include "compiler/Inspect/KernelTable.h"
#include "compiler/Inspect/PassRecorder.h"
#include "runtime/bench/ReportHtml.h"

#include <string>
#include <vector>

namespace quill {

/// A stage of a target's pipeline and its passes, as quill-opt replays them.
struct StageListing {
  std::string stage;
  std::string passes; ///< Its textual pass pipeline; empty past the MLIR stages.
};

/// A target's stages in order.
struct TargetListing {
  std::string target, summary;
  std::vector<StageListing> stages;
};

/// Text a target produces after the MLIR stages (LLVM IR, assembly).
struct TextStage {
  std::string name;
  size_t bytes = 0, lines = 0;
  std::string head; ///< Its first lines.
};

/// Everything the page shows.
struct LoweringReport {
  std::string model;       ///< The model's name.
  std::string commandLine; ///< How the compile was run.
  std::string target;      ///< The target compiled for.
  std::vector<TargetListing> targets;
  std::vector<PassRecord> passes;
  size_t importLines = 0;
  double totalSeconds = 0; ///< The whole MLIR pipeline.
  std::vector<TextStage> textStages;
  std::string graphSvg;  ///< The dispatch graph drawn by Graphviz, or empty.
  std::string graphDot;  ///< Its DOT source.
  std::string graphNote; ///< Why there is no SVG, when there is none.
  std::vector<KernelRow> kernels;
  double positions = 0; ///< The cached positions attention's costs are given at.
  RooflineCeilings ceilings;
};

/// One launch of a kernel under the ceilings.
struct KernelFigures {
  double flops = 0, bytes = 0;
  double intensity = 0;    ///< FLOPs per byte.
  double bound = 0;        ///< The most GFLOP/s the ceilings allow at that intensity.
  double floorSeconds = 0; ///< The least time all its launches in a step take.
  std::string limit;       ///< "memory", "fp32 compute", "int8 compute", or "?".
};
KernelFigures kernelFigures(const KernelRow &row, double positions,
                            const RooflineCeilings &ceilings);

/// The page.
std::string renderLoweringReport(const LoweringReport &report);
/// The kernels at their bounds under the ceilings, labelled by their row in
/// the table; empty without ceilings (roofline.svg).
std::string loweringRooflineSvg(const LoweringReport &report);
/// The kernel table and its ceilings as JSON (kernels.json).
std::string kernelTableJson(const LoweringReport &report);

/// `dot` drawn as SVG by Graphviz's `dot -Tsvg`; an error naming why not
/// (no `dot` on the PATH, or it failed).
std::string renderDotSvg(const std::string &dot, std::string &error);

} // namespace quill
