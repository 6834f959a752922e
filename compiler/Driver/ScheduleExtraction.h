// Reads the quill.schedule op into the runtime's Schedule and removes it, so
// the rest of the module is plain LLVM dialect.
#pragma once

#include "runtime/artifact/ArtifactFormat.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>

namespace quill {

struct ExtractedSchedule {
  Schedule schedule;
  std::map<std::string, uint64_t> weightOffsets; ///< Name -> byte offset.
};

ErrorOr<ExtractedSchedule> extractSchedule(mlir::ModuleOp module);

} // namespace quill
