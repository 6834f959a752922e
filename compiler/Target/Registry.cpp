// The target registry: every target Quill compiles for. A new target is a
// folder under compiler/Target/ with a create function, and a line here.
#include "compiler/Target/Target.h"

namespace quill {

std::unique_ptr<Target> createCpuTarget();  // Target/CPU/CpuTarget.cpp
std::unique_ptr<Target> createCudaTarget(); // Target/CUDA/CudaTarget.cpp

namespace {
const std::vector<std::unique_ptr<Target>> &registry() {
  static const std::vector<std::unique_ptr<Target>> targets = [] {
    std::vector<std::unique_ptr<Target>> list;
    list.push_back(createCpuTarget());
    list.push_back(createCudaTarget());
    return list;
  }();
  return targets;
}
} // namespace

const std::vector<const Target *> &allTargets() {
  static const std::vector<const Target *> targets = [] {
    std::vector<const Target *> list;
    for (const auto &target : registry())
      list.push_back(target.get());
    return list;
  }();
  return targets;
}

const Target *lookupTarget(llvm::StringRef name) {
  for (const Target *target : allTargets())
    if (target->name() == name)
      return target;
  return nullptr;
}

std::string targetNames() {
  std::string names;
  for (const Target *target : allTargets())
    names += (names.empty() ? "" : "|") + target->name().str();
  return names;
}

Target::~Target() = default;

RooflineCeilings Target::rooflineCeilings(const PipelineOptions &) const {
  return {0, 0, 0, "no ceilings known for this target"};
}

bool Target::printsModuleAt(llvm::StringRef stage) const {
  std::optional<size_t> index = stageIndex(stage);
  return index && *index < numMlirStages();
}

std::optional<size_t> Target::stageIndex(llvm::StringRef stage) const {
  const std::vector<std::string> &names = stages();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == stage)
      return i;
  return std::nullopt;
}

std::string Target::stageList() const {
  std::string list;
  for (const std::string &stage : stages())
    list += (list.empty() ? "" : "|") + stage;
  return list;
}

} // namespace quill
