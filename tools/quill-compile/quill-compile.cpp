// quill-compile: a model file -> one artifact (or any stage's IR, printed).
#include "compiler/Driver/Compiler.h"
#include "compiler/Import/ModelSource.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

#include <sstream>

namespace cl = llvm::cl;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::OptionCategory category("quill-compile options");
  cl::opt<std::string> model(cl::Positional,
                             cl::desc("<model: llama2.c .bin, .gguf, or Hugging Face directory>"),
                             cl::Required, cl::cat(category));
  cl::opt<std::string> tokenizer(
      "tokenizer",
      cl::desc("Tokenizer to embed instead of the model's own: llama2.c tokenizer.bin, "
               "tokenizer.json or .gguf"),
      cl::value_desc("file"), cl::cat(category));
  cl::opt<bool> info("info",
                     cl::desc("Print the model's format, architecture, shapes, tensor types "
                              "and tokenizer, without compiling"),
                     cl::cat(category));
  cl::opt<std::string> output("o", cl::desc("Artifact to write"), cl::value_desc("file"),
                              cl::cat(category));
  // cl::desc keeps a StringRef: the text must outlive the option.
  static const std::string emitHelp =
      std::string("Print the module at one stage and stop: ") +
      quill::stageNames(quill::Target::Cpu) + ", or with --target=cuda " +
      quill::stageNames(quill::Target::Cuda);
  cl::opt<std::string> emit("emit", cl::desc(emitHelp), cl::value_desc("stage"),
                            cl::cat(category));
  cl::opt<std::string> dumpDir("dump-ir-after-all",
                               cl::desc("Write the IR after every pass to numbered files in DIR"),
                               cl::value_desc("DIR"), cl::cat(category));
  cl::opt<bool> timing("mlir-timing", cl::desc("Report the time spent in every pass"),
                       cl::cat(category));
  cl::opt<std::string> cpu("cpu", cl::desc("Target CPU (default: the host, with its features)"),
                           cl::value_desc("name"), cl::cat(category));
  cl::opt<int64_t> grain("matvec-grain", cl::desc("Output rows per parallel chunk of a matvec"),
                         cl::init(16), cl::cat(category));
  cl::list<std::string> disabledFusions(
      "disable-fusion", cl::CommaSeparated,
      cl::desc("Switch off fusion passes (gate-up, qkv, residual, rmsnorm, rope-kv), for A/B comparisons"),
      cl::value_desc("name,..."), cl::cat(category));
  cl::opt<int64_t> prefillChunk(
      "prefill-chunk", cl::desc("Prompt tokens per prefill step (0: prompts run token by token)"),
      cl::init(64), cl::cat(category));
  cl::opt<std::string> target(
      "target", cl::desc("Where the kernels run: cpu (default; an artifact) or cuda (NVIDIA "
                         "GPUs through NVVM and PTX; run with quill-run --device cuda)"),
      cl::init("cpu"), cl::cat(category));
  cl::opt<std::string> gpuArch("gpu-arch", cl::desc("The SM version the PTX is for (cuda)"),
                               cl::init("sm_90"), cl::cat(category));
  cl::opt<int64_t> batchRows(
      "batch-rows",
      cl::desc("Token rows per batch step over the paged KV cache: the most sequences decoded "
               "together (0: no batch step; none for --target=cuda)"),
      cl::init(64), cl::cat(category));
  cl::opt<int64_t> kvBlockSize("kv-block-size",
                               cl::desc("Positions per block of the paged KV cache"),
                               cl::init(16), cl::cat(category));
  cl::opt<int64_t> attentionChunk(
      "attention-chunk",
      cl::desc("Cached positions per unit of split (flash-decoding) attention, used for caches of "
               "at least 4 chunks (0: never split; default 256, 32 for --target=cuda)"),
      cl::init(256), cl::cat(category));
  cl::opt<bool> emulateCuda(
      "emulate-cuda-kernels",
      cl::desc("For the CPU: apply the CUDA target's kernel transformations (one unit of work "
               "per call, GPU math approximations), to test them without a GPU"),
      cl::cat(category));
  cl::opt<bool> noPrefetch(
      "no-prefetch",
      cl::desc("Matmuls do not prefetch the next block of weight rows, for A/B comparisons"),
      cl::cat(category));
  cl::opt<bool> noWarpReductions(
      "no-warp-reductions",
      cl::desc("CUDA (and --emulate-cuda-kernels): one GPU thread per matrix-vector row instead "
               "of a warp per output element, for A/B comparisons"),
      cl::cat(category));
  cl::opt<bool> noFusion("no-fusion", cl::desc("Switch off every fusion pass"),
                         cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "Quill ahead-of-time compiler\n");

  if (info) {
    auto opened = quill::openModel(model);
    if (!opened) {
      llvm::errs() << "quill-compile: " << opened.message() << "\n";
      return 1;
    }
    std::ostringstream text;
    quill::describeModel(**opened, tokenizer, text);
    llvm::outs() << text.str();
    return 0;
  }

  quill::CompileOptions options;
  options.modelPath = model;
  options.tokenizerPath = tokenizer;
  options.outputPath = output;
  options.dumpDir = dumpDir;
  options.timing = timing;
  options.cpu = cpu;
  if (grain <= 0) {
    llvm::errs() << "quill-compile: --matvec-grain must be positive\n";
    return 1;
  }
  options.pipeline.matvecGrain = grain;
  if (prefillChunk < 0 || prefillChunk % 4 != 0) {
    llvm::errs() << "quill-compile: --prefill-chunk must be a non-negative multiple of 4\n";
    return 1;
  }
  options.prefillTokens = prefillChunk;
  if (batchRows < 0 || batchRows % 4 != 0 || batchRows > 1024) {
    llvm::errs() << "quill-compile: --batch-rows must be a multiple of 4 from 0 to 1024\n";
    return 1;
  }
  options.batchRows = batchRows;
  if (kvBlockSize < 1 || kvBlockSize > 4096) {
    llvm::errs() << "quill-compile: --kv-block-size must be from 1 to 4096\n";
    return 1;
  }
  options.kvBlockSize = kvBlockSize;
  if (attentionChunk < 0) {
    llvm::errs() << "quill-compile: --attention-chunk must not be negative\n";
    return 1;
  }
  options.pipeline.attentionChunk = attentionChunk;
  const auto &known = quill::fusionNames();
  for (const std::string &name : disabledFusions) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      llvm::errs() << "quill-compile: unknown fusion '" << name << "' (expected gate-up, qkv, residual, rmsnorm or rope-kv)\n";
      return 1;
    }
    options.pipeline.disabledFusions.insert(name);
  }
  if (noFusion)
    options.pipeline.disabledFusions.insert(known.begin(), known.end());
  if (target != "cpu" && target != "cuda") {
    llvm::errs() << "quill-compile: unknown --target '" << target << "' (expected cpu or cuda)\n";
    return 1;
  }
  options.pipeline.target = target == "cuda" ? quill::Target::Cuda : quill::Target::Cpu;
  if (emulateCuda && options.pipeline.target != quill::Target::Cpu) {
    llvm::errs() << "quill-compile: --emulate-cuda-kernels compiles for the CPU; drop "
                    "--target=cuda\n";
    return 1;
  }
  options.pipeline.emulateCudaKernels = emulateCuda;
  // On the GPU a unit is one thread: decode attention over short chunks
  // gives many more of them (kv heads x chunks) than 256-position ones.
  if ((options.pipeline.target == quill::Target::Cuda || emulateCuda) &&
      attentionChunk.getNumOccurrences() == 0)
    options.pipeline.attentionChunk = 32;
  options.pipeline.prefetchWeights = !noPrefetch;
  if (noWarpReductions && options.pipeline.target != quill::Target::Cuda && !emulateCuda) {
    llvm::errs() << "quill-compile: --no-warp-reductions applies to --target=cuda and "
                    "--emulate-cuda-kernels only\n";
    return 1;
  }
  options.pipeline.warpReductions = !noWarpReductions;
  {
    // sm_XY or sm_XYa, as NVPTX names them.
    llvm::StringRef arch(gpuArch);
    llvm::StringRef digits = arch;
    bool valid = digits.consume_front("sm_");
    digits.consume_back("a");
    unsigned version = 0;
    if (!valid || digits.getAsInteger(10, version) || version < 50 || version > 200) {
      llvm::errs() << "quill-compile: invalid --gpu-arch '" << gpuArch
                   << "' (expected sm_NN, e.g. sm_80 or sm_90)\n";
      return 1;
    }
    options.pipeline.gpuArch = gpuArch;
  }
  if (!emit.empty()) {
    options.emit = quill::parseStage(emit);
    const auto &stages = quill::targetStages(options.pipeline.target);
    if (options.emit && std::find(stages.begin(), stages.end(), *options.emit) == stages.end())
      options.emit.reset();
    if (!options.emit) {
      llvm::errs() << "quill-compile: unknown --emit stage '" << emit << "' for --target="
                   << target << " (expected " << quill::stageNames(options.pipeline.target)
                   << ")\n";
      return 1;
    }
  }
  quill::Status status = quill::compileModel(options, llvm::outs());
  if (!status) {
    llvm::errs() << "quill-compile: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
