// quill.schedule -> quill::Schedule.
#include "compiler/Driver/ScheduleExtraction.h"

#include "dialects/Quill/IR/QuillDialect.h"

namespace quill {

static ErrorOr<Binding> toBinding(mlir::quill::BindingAttr attr) {
  Binding b;
  llvm::StringRef space = attr.getSpace();
  if (space == "weights")
    b.space = MemorySpace::Weights;
  else if (space == "kv")
    b.space = MemorySpace::KVCache;
  else if (space == "scratch")
    b.space = MemorySpace::Scratch;
  else
    return Status::error(("unknown memory space '" + space + "'").str());
  b.offset = static_cast<uint64_t>(attr.getOffset());
  b.bytes = static_cast<uint64_t>(attr.getBytes());
  return b;
}

ErrorOr<ExtractedSchedule> extractSchedule(mlir::ModuleOp module) {
  auto ops = module.getOps<mlir::quill::ScheduleOp>();
  if (std::distance(ops.begin(), ops.end()) != 1)
    return Status::error("expected exactly one quill.schedule after lowering");
  mlir::quill::ScheduleOp op = *ops.begin();
  ExtractedSchedule result;
  Schedule &s = result.schedule;
  s.scratchBytes = op.getScratchBytes();
  s.kvBytes = op.getKvBytes();
  s.weightBytes = op.getWeightBytes();
  auto logits = toBinding(op.getLogits());
  if (!logits)
    return logits.status();
  s.logits = *logits;
  for (mlir::NamedAttribute entry : op.getWeightOffsets())
    result.weightOffsets[entry.getName().str()] =
        mlir::cast<mlir::IntegerAttr>(entry.getValue()).getInt();

  if (mlir::ArrayAttr packs = op.getWeightPacksAttr()) {
    for (mlir::Attribute attr : packs) {
      auto pack = mlir::cast<mlir::quill::WeightPackAttr>(attr);
      WeightPack out;
      out.offset = static_cast<uint64_t>(pack.getOffset());
      if (pack.getLayout() != "concat" && pack.getLayout() != "interleave")
        return Status::error(("unknown weight pack layout '" + pack.getLayout() + "'").str());
      out.interleave = pack.getLayout() == "interleave";
      for (mlir::Attribute part : pack.getParts())
        out.parts.push_back(mlir::cast<mlir::StringAttr>(part).str());
      result.weightPacks.push_back(std::move(out));
    }
  }

  std::map<std::string, uint32_t> kernelIndex;
  for (auto dispatch : op.getBody().getOps<mlir::quill::DispatchOp>()) {
    std::string name = dispatch.getKernel().str();
    auto [it, inserted] = kernelIndex.try_emplace(name, s.kernels.size());
    if (inserted)
      s.kernels.push_back(name);
    Dispatch d;
    d.kernel = it->second;
    d.work = dispatch.getWork();
    d.grain = dispatch.getGrain();
    for (mlir::Attribute attr : dispatch.getBindings()) {
      auto binding = toBinding(mlir::cast<mlir::quill::BindingAttr>(attr));
      if (!binding)
        return binding.status();
      d.bindings.push_back(*binding);
    }
    s.dispatches.push_back(std::move(d));
  }
  op.erase();
  return result;
}

} // namespace quill
