// Reads the quill.schedule op into the runtime's Schedule and removes it, so
// the rest of the module is plain LLVM dialect.
#pragma once

#include "runtime/artifact/ArtifactFormat.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace quill {

/// A weight the compiler packs from named ones (see #quill.weight_pack).
struct WeightPack {
  uint64_t offset = 0;
  bool interleave = false; ///< Rows alternate between parts; else concatenated.
  std::vector<std::string> parts;
  std::string scale;     ///< Empty, or a vector every row is multiplied by.
  int64_t rowGroups = 0; ///< Rows per group of the row-group layout; 0: the plain rows.
};

struct ExtractedSchedule {
  Schedule schedule;               ///< The decode step.
  std::optional<Schedule> prefill; ///< The prefill step, when compiled.
  /// The batch step, when compiled; the layout's rows, table width and
  /// inputs are filled in, its cache geometry is the caller's to add.
  std::optional<BatchSchedule> batch;
  std::map<std::string, uint64_t> weightOffsets; ///< Name -> byte offset.
  /// Name -> encoding ("f16", "q8_0", ...: WeightFormats.h) of the weights
  /// not stored as f32.
  std::map<std::string, std::string> weightEncodings;
  /// Name -> rows per group of the named weights stored in row groups.
  std::map<std::string, int64_t> weightRowGroups;
  std::vector<WeightPack> weightPacks;
};

/// Reads the schedules "step" and (when present) "prefill" and "batch" and
/// removes them.
ErrorOr<ExtractedSchedule> extractSchedule(mlir::ModuleOp module);

} // namespace quill
