// The compile driver: import, lower, generate code, and write the artifact.
#include "compiler/Driver/Compiler.h"

#include "compiler/Driver/IRDumper.h"
#include "compiler/Driver/ScheduleExtraction.h"
#include "compiler/Import/ModelSource.h"
#include "compiler/Import/StepBuilder.h"
#include "compiler/Import/TokenizerImport.h"
#include "compiler/Pipeline/Registration.h"
#include "compiler/Target/CPU/CpuTarget.h"
#include "runtime/artifact/ArtifactFormat.h"

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

/// The weight blob laid out as the schedule's offsets say, each tensor
/// converted to fp32 in Quill's layout straight into its place.
ErrorOr<std::vector<uint8_t>> layOutWeights(const ModelSource &model,
                                            const ExtractedSchedule &extracted) {
  std::vector<uint8_t> blob(extracted.schedule.weightBytes, 0);
  for (const auto &[name, offset] : extracted.weightOffsets) {
    const ImportedTensor *tensor = model.find(name);
    if (!tensor)
      return Status::error(model.path() + ": the model has no tensor '" + name + "'");
    uint64_t bytes = uint64_t(tensor->numElements()) * sizeof(float);
    if (offset > blob.size() || bytes > blob.size() - offset || offset % alignof(float) != 0)
      return Status::error("weight '" + name + "' does not fit the planned weight blob");
    if (Status s = model.readTensor(*tensor, reinterpret_cast<float *>(blob.data() + offset)); !s)
      return s;
  }
  // Weights the fusion passes packed from named ones.
  for (const WeightPack &pack : extracted.weightPacks) {
    std::vector<std::vector<float>> parts;
    for (const std::string &name : pack.parts) {
      auto part = model.readTensor(name);
      if (!part)
        return part.status();
      parts.push_back(part.take());
    }
    const ImportedTensor *first = model.find(pack.parts.front());
    uint64_t columns = uint64_t(first->shape.back());
    uint64_t total = 0;
    for (const auto &part : parts)
      total += part.size() * sizeof(float);
    if (pack.offset > blob.size() || total > blob.size() - pack.offset)
      return Status::error("packed weight '" + pack.parts.front() + "...' does not fit the blob");
    float *out = reinterpret_cast<float *>(blob.data() + pack.offset);
    if (pack.interleave) {
      // Row r of part p goes to row r * parts + p.
      uint64_t rows = parts.front().size() / columns;
      for (uint64_t r = 0; r < rows; ++r)
        for (const auto &part : parts) {
          std::memcpy(out, part.data() + r * columns, columns * sizeof(float));
          out += columns;
        }
    } else {
      for (const auto &part : parts) {
        std::memcpy(out, part.data(), part.size() * sizeof(float));
        out += part.size();
      }
    }
  }
  return blob;
}

} // namespace

Status compileModel(const CompileOptions &options, llvm::raw_ostream &out) {
  auto model = openModel(options.modelPath);
  if (!model)
    return model.status();
  const ModelConfig &config = (*model)->config();

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
  std::string modelName = llvm::sys::path::stem(options.modelPath).str();
  mlir::OwningOpRef<mlir::ModuleOp> module = buildStep(context, config, modelName,
                                                     std::min<int64_t>(options.prefillTokens, config.seqLen));
  if (mlir::failed(mlir::verify(*module)))
    return Status::error(options.modelPath + ": the imported step does not verify");

  Stage last = options.emit ? std::min(*options.emit, Stage::LLVMDialect) : Stage::LLVMDialect;
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
  if (options.emit && *options.emit <= Stage::LLVMDialect) {
    module->print(out);
    return Status::ok();
  }

  auto extracted = extractSchedule(*module);
  if (!extracted)
    return extracted.status();
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
  auto weights = layOutWeights(**model, *extracted);
  if (!weights)
    return weights.status();
  std::string targetText = (*target)->description();
  ArtifactBuilder builder;
  builder.addSection(SectionKind::Config, encodeConfig(config));
  builder.addSection(SectionKind::Target,
                     std::vector<uint8_t>(targetText.begin(), targetText.end()));
  builder.addSection(SectionKind::Tokenizer, std::move(tokenizerBytes));
  builder.addSection(SectionKind::Schedule, encodeSchedule(extracted->schedule));
  if (extracted->prefill)
    builder.addSection(SectionKind::PrefillSchedule, encodeSchedule(*extracted->prefill));
  builder.addSection(SectionKind::KernelLibrary, library.take());
  builder.addSection(SectionKind::Weights, weights.take());
  return builder.write(options.outputPath);
}

} // namespace quill
