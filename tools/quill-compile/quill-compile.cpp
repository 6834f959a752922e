// quill-compile: a model file -> one artifact (or any stage's IR, printed).
#include "compiler/Driver/Compiler.h"
#include "compiler/Import/ChatTemplateImport.h"
#include "compiler/Import/ModelSource.h"
#include "compiler/Import/TokenizerImport.h"
#include "compiler/Target/Target.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <csignal>
#include <sstream>

namespace cl = llvm::cl;

namespace {

/// The --emit help: every target's stages. (cl::desc keeps a StringRef: the
/// texts must outlive the options.)
const std::string emitHelp = [] {
  std::string help = "Print the module at one stage of the target's and stop:";
  for (const quill::Target *target : quill::allTargets())
    help += " " + target->name().str() + ": " + target->stageList() + ";";
  help.pop_back();
  return help + "; or dot: every step's dispatch graph after fusion (Graphviz)";
}();
/// The --target help: every registered target.
const std::string targetHelp = [] {
  std::string help = "Where the kernels run:";
  for (const quill::Target *target : quill::allTargets())
    help += " " + target->name().str() + " (" + target->summary().str() + ");";
  help.pop_back();
  return help + "; default cpu";
}();

/// quill-compile's flags.
struct Flags {
  cl::OptionCategory category{"quill-compile options"};
  cl::opt<std::string> model{cl::Positional,
                             cl::desc("<model: llama2.c .bin, .gguf, or Hugging Face directory>"),
                             cl::Required, cl::cat(category)};
  cl::opt<std::string> tokenizer{
      "tokenizer",
      cl::desc("Tokenizer to embed instead of the model's own: llama2.c tokenizer.bin, "
               "tokenizer.json or .gguf"),
      cl::value_desc("file"), cl::cat(category)};
  cl::opt<std::string> chatTemplate{
      "chat-template",
      cl::desc("Jinja chat template to embed instead of the model's own (GGUF "
               "tokenizer.chat_template, tokenizer_config.json chat_template)"),
      cl::value_desc("file"), cl::cat(category)};
  cl::opt<bool> info{"info",
                     cl::desc("Print the model's format, architecture, shapes, tensor types, "
                              "tokenizer and chat template, without compiling"),
                     cl::cat(category)};
  cl::opt<std::string> output{"o", cl::desc("Artifact to write"), cl::value_desc("file"),
                              cl::cat(category)};
  cl::opt<std::string> emit{"emit", cl::desc(emitHelp), cl::value_desc("stage"), cl::cat(category)};
  cl::opt<std::string> graph{
      "graph",
      cl::desc("Also write every step's dispatch graph after fusion, in Graphviz DOT (render it "
               "with dot -Tsvg)"),
      cl::value_desc("file.dot"), cl::cat(category)};
  cl::opt<std::string> report{
      "report",
      cl::desc("Also write an HTML report of the lowering into DIR (index.html, one self-contained "
               "page): every target's stages, each pass's diff and time, the dispatch graph, the "
               "kernels on a roofline. Without -o, no artifact is written"),
      cl::value_desc("DIR"), cl::cat(category)};
  cl::opt<std::string> dumpDir{"dump-ir-after-all",
                               cl::desc("Write the IR after every pass to numbered files in DIR"),
                               cl::value_desc("DIR"), cl::cat(category)};
  cl::opt<bool> timing{"mlir-timing", cl::desc("Report the time spent in every pass"),
                       cl::cat(category)};
  cl::opt<std::string> cpu{"cpu", cl::desc("Target CPU (default: the host, with its features)"),
                           cl::value_desc("name"), cl::cat(category)};
  cl::opt<int64_t> grain{"matvec-grain", cl::desc("Output rows per parallel chunk of a matvec"),
                         cl::init(16), cl::cat(category)};
  cl::list<std::string> disabledFusions{
      "disable-fusion", cl::CommaSeparated,
      cl::desc("Switch off fusion passes (gate-up, qkv, residual, rmsnorm, rope-kv), for A/B "
               "comparisons"),
      cl::value_desc("name,..."), cl::cat(category)};
  cl::opt<int64_t> prefillChunk{
      "prefill-chunk", cl::desc("Prompt tokens per prefill step (0: prompts run token by token)"),
      cl::init(64), cl::cat(category)};
  cl::opt<std::string> target{"target", cl::desc(targetHelp), cl::init("cpu"), cl::cat(category)};
  cl::opt<std::string> gpuArch{"gpu-arch", cl::desc("The SM version the PTX is for (cuda)"),
                               cl::init("sm_90"), cl::cat(category)};
  cl::opt<int64_t> batchRows{
      "batch-rows",
      cl::desc("Token rows per batch step over the paged KV cache: the most sequences decoded "
               "together (0: no batch step; none for --target=cuda)"),
      cl::init(64), cl::cat(category)};
  cl::opt<int64_t> kvBlockSize{"kv-block-size",
                               cl::desc("Positions per block of the paged KV cache"), cl::init(16),
                               cl::cat(category)};
  cl::opt<int64_t> attentionChunk{
      "attention-chunk",
      cl::desc("Cached positions per unit of split (flash-decoding) attention, used for caches of "
               "at least 4 chunks (0: never split; default 256, 32 for --target=cuda)"),
      cl::init(256), cl::cat(category)};
  cl::opt<bool> emulateCuda{
      "emulate-cuda-kernels",
      cl::desc("For the CPU: apply the CUDA target's kernel transformations (one unit of work "
               "per call, GPU math approximations), to test them without a GPU"),
      cl::cat(category)};
  cl::opt<bool> noPrefetch{
      "no-prefetch",
      cl::desc("Matmuls do not prefetch the next block of weight rows, for A/B comparisons"),
      cl::cat(category)};
  cl::opt<int64_t> prefetchDistance{
      "weight-prefetch-distance",
      cl::desc("Bytes ahead that decode's products over row groups prefetch their weights "
               "(0: none; default: 8192 for Q4_0, Q4_K and Q6_K, none for Q8_0)"),
      cl::cat(category)};
  cl::opt<bool> noInt8Dot{
      "no-int8-dot",
      cl::desc("Products over Q8_0, Q4_0, Q4_K and Q6_K weights decode the weights to f32 "
               "instead of int8 dot products (vpdpbusd, or AVX2's vpmaddubsw), for A/B "
               "comparisons"),
      cl::cat(category)};
  cl::opt<bool> noInt8MatMul{
      "no-int8-matmul",
      cl::desc("Prefill and batch products over Q8_0, Q4_0, Q4_K and Q6_K weights decode the "
               "weights to f32 tiles instead of int8 dot products over transposed row groups, "
               "for A/B comparisons"),
      cl::cat(category)};
  cl::opt<bool> noAttentionRowBlocks{
      "no-attention-row-blocks",
      cl::desc("A prefill's attention takes one query row at a time instead of blocks of rows "
               "that read each key and value row once, for A/B comparisons"),
      cl::cat(category)};
  cl::opt<bool> noRowGroups{
      "no-row-groups",
      cl::desc("Q8_0, Q4_0, Q4_K and Q6_K weights keep the file's row layout instead of the row "
               "groups the CPU's int8 kernels read without transposes, for A/B comparisons"),
      cl::cat(category)};
  cl::opt<bool> noWeightSharing{
      "no-weight-sharing",
      cl::desc("Prefill and batch steps read their own copies of the weights the decode step "
               "packs (a larger artifact), for A/B comparisons"),
      cl::cat(category)};
  cl::opt<bool> noQuantizeActivations{
      "no-quantize-activations",
      cl::desc("Products over block-quantized and bf16 weights keep f32 inputs instead of Q8_0 "
               "blocks or bf16 (no int8 or bf16 dot products), for A/B comparisons of speed and "
               "accuracy"),
      cl::cat(category)};
  cl::opt<bool> noWarpReductions{
      "no-warp-reductions",
      cl::desc("CUDA (and --emulate-cuda-kernels): one GPU thread per matrix-vector row instead "
               "of a warp per output element, for A/B comparisons"),
      cl::cat(category)};
  cl::opt<bool> noFusion{"no-fusion", cl::desc("Switch off every fusion pass"), cl::cat(category)};
  cl::opt<std::string> quantize{
      "quantize",
      cl::desc("Store the weight matrices quantized, with llama.cpp's rules: f16, bf16, q8_0, "
               "q4_0 or q4_k_m (default: each keeps its file's encoding)"),
      cl::value_desc("scheme"), cl::cat(category)};
  cl::opt<std::string> kvType{
      "kv-type",
      cl::desc("Element type of the KV cache: f32 (default, keeps the golden text exact), f16 "
               "or bf16 (half the cache bytes per token; rounded to nearest even), q8_0 (GGUF "
               "blocks of 32, 34 bytes each: 0.27x; head_dim a multiple of 32)"),
      cl::value_desc("type"), cl::init("f32"), cl::cat(category)};
};

/// Checks the flags and fills `options`; prints the problem and returns
/// false for a bad one.
bool fillOptions(const Flags &flags, quill::CompileOptions &options) {
  options.modelPath = flags.model;
  options.tokenizerPath = flags.tokenizer;
  options.chatTemplatePath = flags.chatTemplate;
  options.outputPath = flags.output;
  options.dumpDir = flags.dumpDir;
  options.graphPath = flags.graph;
  options.reportDir = flags.report;
  options.timing = flags.timing;
  options.pipeline.cpu = flags.cpu;
  if (flags.grain <= 0 || flags.grain > (1 << 20)) {
    llvm::errs() << "quill-compile: --matvec-grain must be from 1 to 1048576\n";
    return false;
  }
  options.pipeline.matvecGrain = flags.grain;
  if (flags.prefillChunk < 0 || flags.prefillChunk % 4 != 0 || flags.prefillChunk > 4096) {
    llvm::errs() << "quill-compile: --prefill-chunk must be a multiple of 4 from 0 to 4096\n";
    return false;
  }
  options.prefillTokens = flags.prefillChunk;
  if (flags.batchRows < 0 || flags.batchRows % 4 != 0 || flags.batchRows > 1024) {
    llvm::errs() << "quill-compile: --batch-rows must be a multiple of 4 from 0 to 1024\n";
    return false;
  }
  options.batchRows = flags.batchRows;
  if (flags.kvBlockSize < 1 || flags.kvBlockSize > 4096) {
    llvm::errs() << "quill-compile: --kv-block-size must be from 1 to 4096\n";
    return false;
  }
  options.kvBlockSize = flags.kvBlockSize;
  std::optional<quill::KVType> kvType = quill::parseKVType(flags.kvType);
  if (!kvType) {
    llvm::errs() << "quill-compile: unknown --kv-type '" << flags.kvType
                 << "' (expected f32, f16, bf16 or q8_0)\n";
    return false;
  }
  options.kvType = *kvType;
  if (flags.attentionChunk < 0 || flags.attentionChunk > (1 << 20)) {
    llvm::errs() << "quill-compile: --attention-chunk must be from 0 to 1048576\n";
    return false;
  }
  const auto &known = quill::fusionNames();
  for (const std::string &name : flags.disabledFusions) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      llvm::errs() << "quill-compile: unknown fusion '" << name
                   << "' (expected gate-up, qkv, residual, rmsnorm or rope-kv)\n";
      return false;
    }
    options.pipeline.disabledFusions.insert(name);
  }
  if (flags.noFusion)
    options.pipeline.disabledFusions.insert(known.begin(), known.end());
  const auto &schemes = quill::quantizationSchemes();
  if (!flags.quantize.empty() &&
      std::find(schemes.begin(), schemes.end(), flags.quantize) == schemes.end()) {
    llvm::errs() << "quill-compile: unknown --quantize scheme '" << flags.quantize
                 << "' (expected f16, bf16, q8_0, q4_0 or q4_k_m)\n";
    return false;
  }
  options.pipeline.quantize = flags.quantize;
  const quill::Target *chosen = quill::lookupTarget(flags.target);
  if (!chosen) {
    llvm::errs() << "quill-compile: unknown --target '" << flags.target << "' (expected "
                 << quill::targetNames() << ")\n";
    return false;
  }
  options.pipeline.target = flags.target;
  options.pipeline.emulateCudaKernels = flags.emulateCuda;
  // Unset: the target's default (shorter chunks where a unit is a thread).
  if (flags.attentionChunk.getNumOccurrences() != 0)
    options.pipeline.attentionChunk = flags.attentionChunk;
  options.pipeline.prefetchWeights = !flags.noPrefetch;
  // Checked by the target (checkOptions).
  if (flags.prefetchDistance.getNumOccurrences() != 0)
    options.pipeline.rowGroupPrefetchBytes = flags.prefetchDistance;
  options.pipeline.int8Dot = !flags.noInt8Dot;
  options.pipeline.int8MatMul = !flags.noInt8MatMul;
  options.pipeline.rowGroups = !flags.noRowGroups;
  options.pipeline.attentionRowBlocks = !flags.noAttentionRowBlocks;
  options.pipeline.shareWeights = !flags.noWeightSharing;
  options.pipeline.quantizeActivations = !flags.noQuantizeActivations;
  options.pipeline.warpReductions = !flags.noWarpReductions;
  options.pipeline.gpuArch = flags.gpuArch;
  if (quill::Status status = chosen->checkOptions(options.pipeline); !status) {
    llvm::errs() << "quill-compile: " << status.message() << "\n";
    return false;
  }
  if (!flags.emit.empty()) {
    if (flags.emit != "dot" && !chosen->stageIndex(flags.emit)) {
      llvm::errs() << "quill-compile: unknown --emit stage '" << flags.emit
                   << "' for --target=" << flags.target << " (expected " << chosen->stageList()
                   << " or dot)\n";
      return false;
    }
    if (!flags.report.empty()) {
      llvm::errs() << "quill-compile: --report follows the whole lowering; it cannot stop at "
                      "--emit="
                   << flags.emit << "\n";
      return false;
    }
    options.emit = flags.emit;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Past a file-size limit (ulimit -f) a write fails with EFBIG and the
  // artifact writer says so, instead of the process dying of SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  Flags flags;
  cl::HideUnrelatedOptions(flags.category);
  cl::ParseCommandLineOptions(argc, argv, "Quill ahead-of-time compiler\n");

  if (flags.info) {
    auto opened = quill::openModel(flags.model);
    if (!opened) {
      llvm::errs() << "quill-compile: " << opened.message() << "\n";
      return 1;
    }
    // A --tokenizer that could not be compiled in fails --info too.
    if (!flags.tokenizer.empty())
      if (auto given = quill::loadTokenizerFile(flags.tokenizer, (*opened)->config()); !given) {
        llvm::errs() << "quill-compile: " << given.message() << "\n";
        return 1;
      }
    // So does a chat template that could not be.
    auto chatTemplate = quill::artifactChatTemplate(**opened, flags.chatTemplate);
    if (!chatTemplate) {
      llvm::errs() << "quill-compile: " << chatTemplate.message() << "\n";
      return 1;
    }
    std::ostringstream text;
    quill::describeModel(**opened, flags.tokenizer, text, flags.chatTemplate);
    llvm::outs() << text.str();
    return 0;
  }

  quill::CompileOptions options;
  for (int i = 0; i < argc; ++i)
    options.commandLine += (i ? " " : "") + std::string(argv[i]);
  if (!fillOptions(flags, options))
    return 1;
  quill::Status status = quill::compileModel(options, llvm::outs());
  if (!status) {
    llvm::errs() << "quill-compile: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
