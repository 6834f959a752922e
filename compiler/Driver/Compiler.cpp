// The compile driver: import, lower, generate code, and write the artifact.
#include "compiler/Driver/Compiler.h"

#include "compiler/Driver/IRDumper.h"
#include "compiler/Driver/ScheduleExtraction.h"
#include "compiler/Driver/WeightLayout.h"
#include "compiler/Import/ModelSource.h"
#include "compiler/Import/StepBuilder.h"
#include "compiler/Import/TokenizerImport.h"
#include "compiler/Pipeline/Registration.h"
#include "compiler/Target/CPU/CpuTarget.h"
#include "runtime/artifact/ArtifactFormat.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace quill {

namespace {
/// The artifact: configuration, target, tokenizer, schedules, the kernels
/// (a shared object, or PTX) and the weights, streamed.
Status writeArtifact(const CompileOptions &options, const ModelSource &model,
                     ExtractedSchedule &extracted, std::vector<uint8_t> tokenizerBytes,
                     const std::string &targetText,
                     std::pair<SectionKind, std::vector<uint8_t>> kernels) {
  const ModelConfig &config = model.config();
  if (Status s = checkWeightLayout(model, extracted); !s)
    return s;
  ArtifactBuilder builder;
  builder.addSection(SectionKind::Config, encodeConfig(config));
  builder.addSection(SectionKind::Target,
                     std::vector<uint8_t>(targetText.begin(), targetText.end()));
  builder.addSection(SectionKind::Tokenizer, std::move(tokenizerBytes));
  builder.addSection(SectionKind::Schedule, encodeSchedule(extracted.schedule));
  if (extracted.prefill)
    builder.addSection(SectionKind::PrefillSchedule, encodeSchedule(*extracted.prefill));
  if (extracted.batch) {
    BatchLayout &layout = extracted.batch->layout;
    layout.blockSize = static_cast<int32_t>(options.kvBlockSize);
    layout.maxBlocks = static_cast<int32_t>(kMaxKVBlocks);
    layout.sections = 2 * config.nLayers;
    layout.blockBytes = uint64_t(options.kvBlockSize) * config.kvDim() * sizeof(float);
    if (Status s = validateSchedule(extracted.batch->schedule, config, &layout); !s)
      return Status::error("internal error: the batch step " + s.message());
    builder.addSection(SectionKind::BatchSchedule, encodeBatchSchedule(*extracted.batch));
  }
  builder.addSection(kernels.first, std::move(kernels.second));
  builder.addSection(SectionKind::Weights, extracted.schedule.weightBytes,
                     weightSection(model, extracted));
  return builder.write(options.outputPath);
}
} // namespace

Status compileModel(const CompileOptions &options, llvm::raw_ostream &out) {
  auto model = openModel(options.modelPath);
  if (!model)
    return model.status();
  const ModelConfig &config = (*model)->config();

  const bool cuda = options.pipeline.target == Target::Cuda;
  std::vector<uint8_t> tokenizerBytes;
  bool needArtifact = !options.emit.has_value();
  if (needArtifact) {
    // --tokenizer, else the model's own (GGUF metadata, tokenizer.json).
    auto bytes = artifactTokenizerBytes(**model, options.tokenizerPath);
    if (!bytes)
      return bytes.status();
    tokenizerBytes = bytes.take();
    if (options.outputPath.empty())
      return Status::error("no output given: use -o FILE, or --emit=STAGE to print a stage");
  }

  mlir::DialectRegistry registry;
  registerDialects(registry);
  registerPasses();
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string modelName = (*model)->name();
  BatchStepShape batch;
  // The CUDA device runs one sequence: no batch step to compile.
  batch.rows = cuda ? 0 : options.batchRows;
  batch.blockSize = options.kvBlockSize;
  mlir::OwningOpRef<mlir::ModuleOp> module = buildStep(
      context, config, modelName, std::min<int64_t>(options.prefillTokens, config.seqLen), batch);
  if (mlir::failed(mlir::verify(*module)))
    return Status::error(options.modelPath + ": the imported step does not verify");

  Stage last = cuda           ? options.emit.value_or(Stage::Ptx)
                : options.emit ? std::min(*options.emit, Stage::LLVMDialect)
                               : Stage::LLVMDialect;
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
  if (mlir::failed(addLoweringPasses(pm, last, options.pipeline)))
    return Status::error("cannot build the pass pipeline");
  if (mlir::failed(pm.run(*module)))
    return Status::error(options.modelPath + ": lowering failed (see the diagnostics above)");
  // The PTX text of the kernels' gpu.binary (CUDA).
  std::string ptx;
  if (cuda && (!options.emit || options.emit == Stage::Ptx)) {
    module->walk([&](mlir::gpu::BinaryOp binary) {
      for (mlir::Attribute object : binary.getObjects())
        ptx += mlir::cast<mlir::gpu::ObjectAttr>(object).getObject().getValue().str();
      binary.erase(); // The rest of the module is the schedules.
      return mlir::WalkResult::skip();
    });
    if (ptx.empty())
      return Status::error(options.modelPath + ": no PTX was produced");
    if (options.emit) {
      out << ptx;
      return Status::ok();
    }
  }
  if (options.emit && (cuda || *options.emit <= Stage::LLVMDialect)) {
    module->print(out);
    return Status::ok();
  }

  auto extracted = extractSchedule(*module);
  if (!extracted)
    return extracted.status();
  if (cuda)
    return writeArtifact(options, **model, *extracted, std::move(tokenizerBytes),
                         "cuda " + options.pipeline.gpuArch,
                         {SectionKind::GpuKernels, std::vector<uint8_t>(ptx.begin(), ptx.end())});
  auto target = CpuTarget::create({options.cpu});
  if (!target)
    return target.status();
  llvm::LLVMContext llvmContext;
  auto llvmModule = (*target)->translate(*module, llvmContext);
  if (!llvmModule)
    return llvmModule.status();
  if (dumper) {
    std::string text;
    llvm::raw_string_ostream os(text);
    (*llvmModule)->print(os, nullptr);
    dumper->dumpText(text, "llvm-ir-optimized", "ll");
    auto assembly = (*target)->emit(**llvmModule, /*assembly=*/true);
    if (assembly)
      dumper->dumpText(*assembly, "assembly", "s");
  }
  if (options.emit == Stage::LLVMIR) {
    (*llvmModule)->print(out, nullptr);
    return Status::ok();
  }
  auto code = (*target)->emit(**llvmModule, /*assembly=*/options.emit == Stage::Asm);
  if (!code)
    return code.status();
  if (options.emit == Stage::Asm) {
    out << *code;
    return Status::ok();
  }

  auto library = linkSharedObject(*code);
  if (!library)
    return library.status();
  return writeArtifact(options, **model, *extracted, std::move(tokenizerBytes),
                       (*target)->description(), {SectionKind::KernelLibrary, library.take()});
}

} // namespace quill
