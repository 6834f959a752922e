// The lowering report, gathered as the compile runs.
#include "compiler/Driver/ReportSession.h"

#include "compiler/Driver/ReadModulePass.h"
#include "compiler/Inspect/DispatchGraph.h"
#include "runtime/support/Json.h"

#include "llvm/Support/FileSystem.h"

#include <algorithm>

namespace quill {

namespace {

/// The first `lines` lines of `text`.
std::string headOf(llvm::StringRef text, size_t lines) {
  size_t end = 0;
  for (size_t i = 0; i < lines; ++i) {
    size_t next = text.find('\n', end);
    if (next == llvm::StringRef::npos)
      return text.str();
    end = next + 1;
  }
  return text.substr(0, end).str();
}

/// Every registered target's stages, with the passes of each MLIR stage as
/// a textual pipeline; `chosen` with this compile's options.
std::vector<TargetListing> listTargets(const Target &chosen, const PipelineOptions &options,
                                       mlir::MLIRContext &context) {
  std::vector<TargetListing> listings;
  for (const Target *target : allTargets()) {
    PipelineOptions own = options;
    if (target != &chosen) {
      own = PipelineOptions{};
      own.target = target->name().str();
    }
    TargetListing listing{target->name().str(), target->summary().str(), {}};
    for (size_t i = 0; i < target->stages().size(); ++i) {
      StageListing stage{target->stages()[i], {}};
      if (i < target->numMlirStages()) {
        mlir::PassManager pm(&context);
        if (mlir::succeeded(target->addStagePasses(pm, stage.stage, own))) {
          llvm::raw_string_ostream os(stage.passes);
          pm.printAsTextualPipeline(os);
        } else {
          stage.passes = "(cannot be listed with default options)";
        }
      }
      listing.stages.push_back(std::move(stage));
    }
    listings.push_back(std::move(listing));
  }
  return listings;
}

} // namespace

ReportSession::ReportSession(const CompileOptions &options, const Target &target, std::string model)
    : options_(options), target_(target) {
  report_.model = std::move(model);
  report_.commandLine = options.commandLine;
  report_.target = target.name().str();
}

Status ReportSession::prepare() {
  if (std::error_code error = llvm::sys::fs::create_directories(options_.reportDir))
    return Status::error(options_.reportDir +
                         ": cannot create the report directory: " + error.message());
  return Status::ok();
}

void ReportSession::instrument(mlir::PassManager &pm) {
  auto recorder = std::make_unique<PassRecorder>(kReadModulePass);
  recorder_ = recorder.get();
  pm.addInstrumentation(std::move(recorder));
}

void ReportSession::afterStage(mlir::OpPassManager &stagePasses, llvm::StringRef stage) {
  std::string name = stage.str();
  stagePasses.addPass(std::make_unique<ReadModulePass>([this, name](mlir::ModuleOp module) {
    recorder_->endStage(name);
    if (name == kGraphStage) {
      report_.graphDot = dispatchGraphDot(module, report_.model);
      report_.kernels = kernelTable(module);
    }
  }));
}

void ReportSession::addText(llvm::StringRef text, llvm::StringRef what) {
  report_.textStages.push_back({what.str(), text.size(),
                                size_t(std::count(text.begin(), text.end(), '\n')),
                                headOf(text, 300)});
}

Status ReportSession::write(const ModelConfig &config) {
  report_.passes = recorder_->passes();
  report_.importLines = recorder_->importLines();
  for (const PassRecord &pass : report_.passes)
    report_.totalSeconds += pass.seconds;
  mlir::MLIRContext context;
  report_.targets = listTargets(target_, options_.pipeline, context);
  report_.graphSvg = renderDotSvg(report_.graphDot, report_.graphNote);
  // Attention's work at half the context: a typical decode.
  report_.positions = std::max(1, config.seqLen / 2);
  report_.ceilings = target_.rooflineCeilings(options_.pipeline);
  const std::string page = renderLoweringReport(report_);
  // The pass table for scripts: what each pass changed and took.
  std::string passes = "[";
  for (const PassRecord &pass : report_.passes)
    passes += std::string(passes.size() > 1 ? ",\n " : "\n ") +
              "{\"pipeline\": " + jsonQuote(pass.pipeline) +
              ", \"stage\": " + jsonQuote(pass.stage) +
              ", \"seconds\": " + jsonNumber(pass.seconds) +
              ", \"lines_before\": " + std::to_string(pass.linesBefore) +
              ", \"lines_after\": " + std::to_string(pass.linesAfter) +
              ", \"removed\": " + std::to_string(pass.removed) +
              ", \"added\": " + std::to_string(pass.added) +
              ", \"minimal\": " + (pass.minimal ? "true" : "false") + "}";
  passes += "\n]\n";
  const std::string kernels = kernelTableJson(report_);
  const std::string roofline = loweringRooflineSvg(report_);
  for (auto [name, text] : {std::pair<const char *, const std::string *>{"index.html", &page},
                            {"passes.json", &passes},
                            {"kernels.json", &kernels},
                            {"roofline.svg", &roofline},
                            {"dispatch-graph.dot", &report_.graphDot}}) {
    std::string path = options_.reportDir + "/" + name;
    std::error_code error;
    llvm::raw_fd_ostream file(path, error);
    if (!error)
      file << *text;
    if (error || (file.close(), file.has_error()))
      return Status::error(path + ": cannot write the report");
  }
  return Status::ok();
}

} // namespace quill
