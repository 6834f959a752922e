// quill.schedule -> quill::Schedule.
#include "compiler/Driver/ScheduleExtraction.h"

#include "dialects/Quill/IR/QuillDialect.h"

#include <algorithm>

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
  else if (space == "input")
    b.space = MemorySpace::Input;
  else if (space == "kv_pool")
    b.space = MemorySpace::KVPool;
  else
    return Status::error(("unknown memory space '" + space + "'").str());
  b.offset = static_cast<uint64_t>(attr.getOffset());
  b.bytes = static_cast<uint64_t>(attr.getBytes());
  return b;
}

/// One quill.schedule op as the runtime's Schedule.
static ErrorOr<Schedule> readSchedule(mlir::quill::ScheduleOp op) {
  Schedule s;
  s.scratchBytes = op.getScratchBytes();
  s.kvBytes = op.getKvBytes();
  s.weightBytes = op.getWeightBytes();
  auto logits = toBinding(op.getLogits());
  if (!logits)
    return logits.status();
  s.logits = *logits;
  if (mlir::ArrayAttr inputs = op.getInputsAttr())
    for (mlir::Attribute attr : inputs) {
      auto binding = toBinding(mlir::cast<mlir::quill::BindingAttr>(attr));
      if (!binding)
        return binding.status();
      s.inputBytes = std::max(s.inputBytes, binding->offset + binding->bytes);
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
    d.liveRowUnits = dispatch.getLiveRows().value_or(0);
    if (std::optional<llvm::ArrayRef<int64_t>> writes = dispatch.getWrites()) {
      d.writes = 0;
      for (int64_t index : *writes)
        d.writes |= uint64_t(1) << index;
    }
    for (mlir::Attribute attr : dispatch.getBindings()) {
      auto binding = toBinding(mlir::cast<mlir::quill::BindingAttr>(attr));
      if (!binding)
        return binding.status();
      // The input buffer holds the chunk's token ids (int32).
      if (binding->space == MemorySpace::Input) {
        s.inputBytes = std::max(s.inputBytes, binding->offset + binding->bytes);
        s.tokens = static_cast<int32_t>(s.inputBytes / sizeof(int32_t));
      }
      d.bindings.push_back(*binding);
    }
    s.dispatches.push_back(std::move(d));
  }
  return s;
}

ErrorOr<ExtractedSchedule> extractSchedule(mlir::ModuleOp module) {
  ExtractedSchedule result;
  mlir::quill::ScheduleOp step, prefill, batch;
  for (auto op : llvm::make_early_inc_range(module.getOps<mlir::quill::ScheduleOp>())) {
    if (op.getName() == "step" && !step)
      step = op;
    else if (op.getName() == "prefill" && !prefill)
      prefill = op;
    else if (op.getName() == "batch" && !batch)
      batch = op;
    else
      return Status::error(("unexpected quill.schedule \"" + op.getName() + "\"").str());
  }
  if (!step)
    return Status::error("expected a quill.schedule \"step\" after lowering");
  auto decode = readSchedule(step);
  if (!decode)
    return decode.status();
  result.schedule = decode.take();
  if (prefill) {
    auto chunk = readSchedule(prefill);
    if (!chunk)
      return chunk.status();
    result.prefill = chunk.take();
  }
  if (batch) {
    auto rows = readSchedule(batch);
    if (!rows)
      return rows.status();
    BatchSchedule out;
    out.schedule = rows.take();
    // Inputs in argument order: tokens, positions, block tables.
    mlir::ArrayAttr inputs = batch.getInputsAttr();
    if (!inputs || inputs.size() != 3)
      return Status::error("the batch schedule must have three inputs");
    Binding *slots[] = {&out.layout.tokens, &out.layout.positions, &out.layout.tables};
    for (auto [attr, slot] : llvm::zip(inputs, slots)) {
      auto binding = toBinding(mlir::cast<mlir::quill::BindingAttr>(attr));
      if (!binding)
        return binding.status();
      *slot = *binding;
    }
    out.layout.rows = static_cast<int32_t>(out.layout.tokens.bytes / sizeof(int32_t));
    out.layout.tableWidth = static_cast<int32_t>(out.layout.tables.bytes / out.layout.tokens.bytes);
    out.schedule.tokens = out.layout.rows;
    result.batch = std::move(out);
  }
  for (mlir::NamedAttribute entry : step.getWeightOffsets())
    result.weightOffsets[entry.getName().str()] =
        mlir::cast<mlir::IntegerAttr>(entry.getValue()).getInt();
  if (mlir::DictionaryAttr encodings = step.getWeightEncodingsAttr())
    for (mlir::NamedAttribute entry : encodings)
      result.weightEncodings[entry.getName().str()] =
          mlir::cast<mlir::StringAttr>(entry.getValue()).str();
  if (mlir::DictionaryAttr groups = step.getWeightRowGroupsAttr())
    for (mlir::NamedAttribute entry : groups)
      result.weightRowGroups[entry.getName().str()] =
          mlir::cast<mlir::IntegerAttr>(entry.getValue()).getInt();
  if (mlir::ArrayAttr packs = step.getWeightPacksAttr()) {
    for (mlir::Attribute attr : packs) {
      auto pack = mlir::cast<mlir::quill::WeightPackAttr>(attr);
      WeightPack out;
      out.offset = static_cast<uint64_t>(pack.getOffset());
      if (pack.getLayout() != "concat" && pack.getLayout() != "interleave")
        return Status::error(("unknown weight pack layout '" + pack.getLayout() + "'").str());
      out.interleave = pack.getLayout() == "interleave";
      for (mlir::Attribute part : pack.getParts())
        out.parts.push_back(mlir::cast<mlir::StringAttr>(part).str());
      if (pack.getScale())
        out.scale = pack.getScale().str();
      out.rowGroups = pack.getRowGroups();
      result.weightPacks.push_back(std::move(out));
    }
  }
  step.erase();
  if (prefill)
    prefill.erase();
  if (batch)
    batch.erase();
  return result;
}

} // namespace quill
