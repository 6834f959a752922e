// Host CPU detection, LLVM IR translation and optimization, and emission.
#include "compiler/Target/CPU/CpuMachine.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/SystemLibraries.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <set>

namespace quill {

ErrorOr<std::shared_ptr<CpuMachine>> CpuMachine::create(const CpuMachineOptions &options) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::InitializeNativeTargetAsmParser();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return Status::error("no LLVM target for " + triple.str() + ": " + error);

  auto result = std::make_shared<CpuMachine>();
  if (options.cpu.empty() || options.cpu == "native" || options.cpu == "host") {
    result->cpu_ = llvm::sys::getHostCPUName().str();
    std::vector<std::string> features;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.push_back((feature.second ? "+" : "-") + feature.getKey().str());
    std::sort(features.begin(), features.end());
    for (const std::string &f : features)
      result->features_ += (result->features_.empty() ? "" : ",") + f;
  } else {
    // Checked before the target machine exists: LLVM would only warn.
    std::unique_ptr<llvm::MCSubtargetInfo> generic(
        target->createMCSubtargetInfo(triple, "generic", ""));
    if (!generic || !generic->isCPUStringValid(options.cpu))
      return Status::error("unknown --cpu '" + options.cpu +
                           "' (try x86-64-v3, x86-64-v4, znver4, native)");
    result->cpu_ = options.cpu;
  }
  llvm::TargetOptions targetOptions;
  result->machine_.reset(target->createTargetMachine(triple, result->cpu_, result->features_,
                                                     targetOptions, llvm::Reloc::PIC_, std::nullopt,
                                                     llvm::CodeGenOptLevel::Aggressive));
  if (!result->machine_)
    return Status::error("cannot create a target machine for CPU '" + result->cpu_ + "'");
  return result;
}

std::string CpuMachine::description() const {
  return "cpu=" + cpu_ + " required=" + requiredFeatures();
}

std::string CpuMachine::requiredFeatures() const {
  // The ISA extensions LLVM may use in the generated code (vector and
  // scalar: vcvtph2psx for f16 caches is AVX512-FP16, tzcnt is BMI); the
  // runtime refuses an artifact whose host lacks one of them.
  static const char *kChecked[] = {"avx",        "avx2",        "fma",          "f16c",
                                   "avx512f",    "avx512vl",    "avx512bw",     "avx512dq",
                                   "avx512vnni", "avxvnni",     "avx512bf16",   "avx512fp16",
                                   "avx512vbmi", "avx512vbmi2", "avx512bitalg", "avx512vpopcntdq",
                                   "avx512ifma", "gfni",        "vpclmulqdq",   "vaes",
                                   "bmi",        "bmi2",        "lzcnt",        "popcnt",
                                   "movbe"};
  const llvm::MCSubtargetInfo *info = machine_->getMCSubtargetInfo();
  std::string out;
  for (const char *feature : kChecked)
    if (info->checkFeatures(std::string("+") + feature))
      out += (out.empty() ? "" : ",") + std::string(feature);
  return out;
}

int64_t CpuMachine::vectorWidth() const {
  const llvm::MCSubtargetInfo *info = machine_->getMCSubtargetInfo();
  if (info->checkFeatures("+avx512f"))
    return 16;
  if (info->checkFeatures("+avx") || info->checkFeatures("+avx2"))
    return 8;
  return 4;
}

bool CpuMachine::hasInt8Dot() const {
  const llvm::MCSubtargetInfo *info = machine_->getMCSubtargetInfo();
  return info->checkFeatures("+avxvnni") || info->checkFeatures("+avx512vnni,+avx512vl");
}

bool CpuMachine::hasInt8Dot512() const {
  return machine_->getMCSubtargetInfo()->checkFeatures("+avx512vnni");
}

bool CpuMachine::hasAvx2Int8() const {
  return machine_->getMCSubtargetInfo()->checkFeatures("+avx2");
}

bool CpuMachine::hasBf16Dot() const {
  return machine_->getMCSubtargetInfo()->checkFeatures("+avx512bf16");
}

bool CpuMachine::bf16DotOutrunsFma() const {
  // Zen 4 and 5 issue vdpbf16ps as often as an FMA, with twice its
  // multiplies; Intel's cores (Cooper Lake, Sapphire Rapids) issue it on one
  // port where FMAs take two, the same 32 multiplies a cycle (measured on
  // Sapphire Rapids: its tiles 12% slower than the f32 ones).
  return hasBf16Dot() && llvm::StringRef(cpu_).starts_with("znver");
}

ErrorOr<std::unique_ptr<llvm::Module>> CpuMachine::translate(mlir::ModuleOp module,
                                                             llvm::LLVMContext &context) {
  std::unique_ptr<llvm::Module> llvmModule = mlir::translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return Status::error("translation of the LLVM dialect to LLVM IR failed");
  llvmModule->setDataLayout(machine_->createDataLayout());
  llvmModule->setTargetTriple(machine_->getTargetTriple());
  for (llvm::Function &function : *llvmModule) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", cpu_);
    if (!features_.empty())
      function.addFnAttr("target-features", features_);
    function.addFnAttr(llvm::Attribute::NoUnwind);
  }

  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(machine_.get());
  // glibc's libmvec gives the vectorizer vector expf/sinf/cosf (softmax,
  // SwiGLU); libm, which the kernel library links, pulls it in.
  llvm::TargetLibraryInfoImpl libraryInfo(machine_->getTargetTriple());
  libraryInfo.addVectorizableFunctionsFromVecLib(llvm::VectorLibrary::LIBMVEC,
                                                 machine_->getTargetTriple());
  functions.registerPass([&] { return llvm::TargetLibraryAnalysis(libraryInfo); });
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  llvm::ModulePassManager pipeline =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  pipeline.run(*llvmModule, modules);
  return llvmModule;
}

ErrorOr<std::string> CpuMachine::emit(llvm::Module &module, bool assembly) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager passes;
  if (machine_->addPassesToEmitFile(passes, stream, nullptr,
                                    assembly ? llvm::CodeGenFileType::AssemblyFile
                                             : llvm::CodeGenFileType::ObjectFile))
    return Status::error("the target cannot emit this file type");
  passes.run(module);
  return std::string(buffer.begin(), buffer.end());
}

} // namespace quill
