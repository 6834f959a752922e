// The compile driver: import, lower, generate code, and write the artifact.
#include "compiler/Driver/Compiler.h"

#include "compiler/Driver/IRDumper.h"
#include "compiler/Driver/KernelContracts.h"
#include "compiler/Driver/ReadModulePass.h"
#include "compiler/Driver/ReportSession.h"
#include "compiler/Driver/ScheduleExtraction.h"
#include "compiler/Driver/WeightLayout.h"
#include "compiler/Import/ChatTemplateImport.h"
#include "compiler/Import/ModelSource.h"
#include "compiler/Import/StepBuilder.h"
#include "compiler/Import/TokenizerImport.h"
#include "compiler/Inspect/DispatchGraph.h"
#include "compiler/Inspect/KernelTable.h"
#include "compiler/Pipeline/Pipeline.h"
#include "compiler/Pipeline/Registration.h"
#include "compiler/Pipeline/SharedStages.h"
#include "compiler/Target/Target.h"
#include "runtime/artifact/ArtifactFormat.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>

namespace quill {

namespace {
/// The artifact: configuration, target, tokenizer, chat template (when
/// there is one), schedules, the kernels (a shared object, or PTX) and the
/// weights, streamed.
Status writeArtifact(const CompileOptions &options, const ModelSource &model,
                     const ModelConfig &config, ExtractedSchedule &extracted,
                     std::vector<uint8_t> tokenizerBytes,
                     const std::optional<ImportedChatTemplate> &chatTemplate,
                     const std::vector<KernelCost> &costs, TargetPayload kernels) {
  if (Status s = checkWeightLayout(model, extracted); !s)
    return s;
  ArtifactBuilder builder;
  builder.addSection(SectionKind::Config, encodeConfig(config));
  builder.addSection(SectionKind::Target,
                     std::vector<uint8_t>(kernels.description.begin(), kernels.description.end()));
  builder.addSection(SectionKind::Tokenizer, std::move(tokenizerBytes));
  if (chatTemplate)
    builder.addSection(SectionKind::ChatTemplate,
                       std::vector<uint8_t>(chatTemplate->text.begin(), chatTemplate->text.end()));
  builder.addSection(SectionKind::Schedule, encodeSchedule(extracted.schedule));
  if (extracted.prefill)
    builder.addSection(SectionKind::PrefillSchedule, encodeSchedule(*extracted.prefill));
  if (extracted.batch) {
    const BatchLayout &layout = extracted.batch->layout;
    if (Status s = validateSchedule(extracted.batch->schedule, config, &layout); !s)
      return Status::error("internal error: the batch step " + s.message());
    builder.addSection(SectionKind::BatchSchedule, encodeBatchSchedule(*extracted.batch));
  }
  builder.addSection(kernels.kind, std::move(kernels.bytes));
  builder.addSection(SectionKind::WeightTable, encodeWeightTable(weightTable(model, extracted)));
  // The runtime refuses an artifact whose costs it cannot read: check them
  // as it will.
  std::vector<uint8_t> costBytes = encodeKernelCosts(costs);
  if (auto decoded = decodeKernelCosts(costBytes.data(), costBytes.size()); !decoded)
    return Status::error("internal error: " + decoded.message());
  builder.addSection(SectionKind::KernelCosts, std::move(costBytes));
  builder.addSection(SectionKind::Weights, extracted.schedule.weightBytes,
                     weightSection(model, extracted));
  return builder.write(options.outputPath);
}
/// The encoding each weight matrix keeps from its file; with --quantize,
/// the file must hold plain floats (re-quantizing blocks would compound
/// their rounding).
ErrorOr<WeightEncodings> fileEncodings(const ModelSource &model, const PipelineOptions &options) {
  WeightEncodings encodings;
  for (const ImportedTensor &tensor : model.tensors()) {
    if (tensor.shape.size() != 2 || tensor.dtype == SourceDType::F32)
      continue;
    if (blockElements(tensor.dtype) > 1 && !options.quantize.empty())
      return Status::error(model.path() + ": tensor '" + tensor.sourceName + "' is already " +
                           dtypeName(tensor.dtype) + "; --quantize takes F32, F16 or BF16 weights");
    std::string name = dtypeName(tensor.dtype);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    encodings[tensor.name] = name;
  }
  return encodings;
}

/// The batch layout's cache geometry, which the schedule does not carry.
void completeBatchLayout(const CompileOptions &options, const ModelConfig &config,
                         ExtractedSchedule &extracted) {
  if (!extracted.batch)
    return;
  BatchLayout &layout = extracted.batch->layout;
  layout.blockSize = static_cast<int32_t>(options.kvBlockSize);
  layout.maxBlocks = static_cast<int32_t>(kMaxKVBlocks);
  layout.sections = 2 * config.nLayers;
  layout.blockBytes = uint64_t(options.kvBlockSize) * config.kvRowBytes();
}

/// Attention keeps a score per head and cached position in one kernel
/// call: a context whose scores do not fit a kernel's temporaries cannot be
/// compiled, which is said here, naming the model, rather than by lowering.
Status checkContextFits(const CompileOptions &options, const ModelConfig &config) {
  const int64_t scoreBytes = int64_t(config.nHeads) * config.seqLen * int64_t(sizeof(float));
  if (scoreBytes <= kMaxKernelTemporaryBytes)
    return Status::ok();
  return Status::error(options.modelPath + ": context " + std::to_string(config.seqLen) + " with " +
                       std::to_string(config.nHeads) + " heads needs " +
                       std::to_string(scoreBytes) +
                       " bytes of attention scores per kernel call, more than the " +
                       std::to_string(kMaxKernelTemporaryBytes) + " Quill allows (at most " +
                       std::to_string(kMaxKernelTemporaryBytes / sizeof(float) / config.nHeads) +
                       " positions for this model)");
}
/// A Q8_0 cache quantizes each head's keys and values in blocks of 32: a
/// block must not straddle two heads.
Status checkKVTypeFits(const CompileOptions &options, const ModelConfig &config) {
  if (config.kvType != KVType::Q8_0 || config.headDim() % int32_t(kQ8BlockElements) == 0)
    return Status::ok();
  return Status::error(options.modelPath +
                       ": --kv-type q8_0 needs a head dimension that is a "
                       "multiple of 32; this model's is " +
                       std::to_string(config.headDim()));
}
/// Writes `text` to `path`, or says why not.
Status writeText(const std::string &path, const std::string &text) {
  std::error_code error;
  llvm::raw_fd_ostream file(path, error);
  if (error)
    return Status::error(path + ": cannot write: " + error.message());
  file << text;
  file.close();
  if (file.has_error())
    return Status::error(path + ": cannot write: " + file.error().message());
  return Status::ok();
}
} // namespace

Status compileModel(const CompileOptions &options, llvm::raw_ostream &out) {
  auto model = openModel(options.modelPath);
  if (!model)
    return model.status();
  // The model's hyperparameters, with the cache type this compile chose.
  ModelConfig config = (*model)->config();
  config.kvType = options.kvType;
  if (Status s = checkContextFits(options, config); !s)
    return s;
  if (Status s = checkKVTypeFits(options, config); !s)
    return s;

  const Target *target = lookupTarget(options.pipeline.target);
  if (!target)
    return Status::error("unknown target '" + options.pipeline.target + "' (expected " +
                         targetNames() + ")");
  std::vector<uint8_t> tokenizerBytes;
  std::optional<ImportedChatTemplate> chatTemplate;
  bool needArtifact = !options.emit.has_value();
  if (needArtifact) {
    // --tokenizer, else the model's own (GGUF metadata, tokenizer.json).
    auto bytes = artifactTokenizerBytes(**model, options.tokenizerPath);
    if (!bytes)
      return bytes.status();
    tokenizerBytes = bytes.take();
    // --chat-template, else the model's own, else none.
    auto chosen = artifactChatTemplate(**model, options.chatTemplatePath);
    if (!chosen)
      return chosen.status();
    chatTemplate = chosen.take();
    if (options.outputPath.empty() && options.reportDir.empty())
      return Status::error("no output given: use -o FILE, --report DIR, or --emit=STAGE to print "
                           "a stage");
  }

  mlir::DialectRegistry registry;
  registerDialects(registry);
  registerPasses();
  mlir::MLIRContext context(registry);
  loadPipelineDialects(context);
  std::string modelName = (*model)->name();
  BatchStepShape batch;
  batch.rows = target->supportsBatchStep() ? options.batchRows : 0;
  batch.blockSize = options.kvBlockSize;
  auto encodings = fileEncodings(**model, options.pipeline);
  if (!encodings)
    return encodings.status();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildStep(context, config, modelName, std::min<int64_t>(options.prefillTokens, config.seqLen),
                batch, *encodings);
  if (mlir::failed(mlir::verify(*module)))
    return Status::error(options.modelPath + ": the imported step does not verify");

  // Every MLIR stage up to the one to print (all of them for an artifact).
  const bool emitDot = options.emit == std::string("dot");
  const std::string last = emitDot ? kGraphStage : options.emit.value_or(target->stages().back());
  mlir::PassManager pm(&context);
  IRDumper *dumper = nullptr;
  if (!options.dumpDir.empty()) {
    // Passes on functions would otherwise run, and dump, concurrently.
    context.disableMultithreading();
    if (llvm::sys::fs::create_directories(options.dumpDir))
      return Status::error(options.dumpDir + ": cannot create the IR dump directory");
    auto owned = std::make_unique<IRDumper>(options.dumpDir);
    dumper = owned.get();
    dumper->dump(module->getOperation(), "import");
    pm.addInstrumentation(std::move(owned));
  }
  if (options.timing)
    pm.enableTiming();
  // --report: every pass diffed, the kernels stage read, the page written
  // once the target has finished.
  std::optional<ReportSession> report;
  if (!options.reportDir.empty()) {
    report.emplace(options, *target, modelName);
    if (Status s = report->prepare(); !s)
      return s;
    report->instrument(pm);
  }
  std::string pipelineErrors;
  llvm::raw_string_ostream errors(pipelineErrors);
  // --graph: the dispatch graph is drawn from the module after the kernels
  // stage, on the way to the artifact.
  std::string graph;
  // An artifact keeps each kernel's FLOPs and bytes, counted at the same
  // stage, for the runtime's measured roofline.
  std::vector<KernelCost> costs;
  auto readStages = [&](mlir::OpPassManager &stagePasses, llvm::StringRef stage) {
    if (!options.graphPath.empty() && stage == kGraphStage)
      stagePasses.addPass(std::make_unique<ReadModulePass>(
          [&](mlir::ModuleOp at) { graph = dispatchGraphDot(at, modelName); }));
    if (needArtifact && stage == kGraphStage)
      stagePasses.addPass(std::make_unique<ReadModulePass>(
          [&](mlir::ModuleOp at) { costs = kernelCosts(kernelTable(at)); }));
    if (report)
      report->afterStage(stagePasses, stage);
  };
  if (mlir::failed(addLoweringPasses(pm, *target, last, options.pipeline, errors, readStages)))
    return Status::error(llvm::StringRef(pipelineErrors).trim().str());
  if (mlir::failed(pm.run(*module)))
    return Status::error(options.modelPath + ": lowering failed (see the diagnostics above)");
  if (emitDot) {
    out << dispatchGraphDot(*module, modelName);
    return Status::ok();
  }
  if (!options.graphPath.empty())
    if (Status s = writeText(options.graphPath, graph); !s)
      return s;
  if (options.emit && target->printsModuleAt(*options.emit)) {
    module->print(out);
    return Status::ok();
  }

  // The schedules come out first: the rest of the module is the kernels.
  auto extracted = extractSchedule(*module);
  if (!extracted)
    return extracted.status();
  completeBatchLayout(options, config, *extracted);
  TextDump dump;
  if (dumper || report)
    dump = [&](llvm::StringRef text, llvm::StringRef what, llvm::StringRef extension) {
      if (dumper)
        dumper->dumpText(text, what, extension);
      if (report)
        report->addText(text, what);
    };
  std::optional<llvm::StringRef> emit;
  if (options.emit)
    emit = *options.emit;
  // The kernel library states what each kernel may be dispatched with.
  if (!options.emit) {
    auto contracts = collectKernelContracts(*extracted, config);
    if (!contracts)
      return contracts.status();
    if (Status s = target->addKernelContracts(*module, *contracts); !s)
      return s;
  }
  auto payload = target->finish(*module, options.pipeline, emit, out, dump);
  if (!payload)
    return Status::error(options.modelPath + ": " + payload.message());
  if (options.emit)
    return Status::ok();
  if (report)
    if (Status s = report->write(config); !s)
      return s;
  if (options.outputPath.empty())
    return Status::ok();
  return writeArtifact(options, **model, config, *extracted, std::move(tokenizerBytes),
                       chatTemplate, costs, std::move(**payload));
}

} // namespace quill
