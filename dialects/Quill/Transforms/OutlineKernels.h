// The parts of quill-outline-kernels, one concern each: how an op's work
// splits into units (TilingPolicy.cpp), where every value lives
// (MemoryPlan.cpp), and the kernel function an op becomes
// (KernelOutlining.cpp). The pass (OutlineKernels.cpp) ties them together
// and emits the schedules.
#pragma once

#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <string>

namespace mlir::quill {

/// How a kernel splits its work: `work` units, each `rowsPerUnit` output
/// elements, in chunks of `grain` units.
struct Tiling {
  int64_t work = 1, grain = 1, rowsPerUnit = 0; // rowsPerUnit 0: not tiled.
  bool leading = false;                         ///< Units are rows of the result, not columns.
  /// Units are a batch step's token rows (splitRows of them per row): only
  /// the live rows' run.
  bool liveRows = false;
  /// > 1: the [T, width] result is tiled as [T * splitRows, width /
  /// splitRows] (units are parts of rows, contiguous in memory).
  int64_t splitRows = 1;
};

/// The tiling of `op`: its default, or the split a target marked on it
/// (`quill.units`).
Tiling tilingOf(Operation *op, int64_t matvecGrain);

/// Where every tensor value of the steps lives at run time.
struct MemoryPlan {
  int64_t weightBytes = 0, kvBytes = 0, scratchBytes = 0;
  /// The weights kernels read as they are -> offset and type.
  llvm::StringMap<std::pair<int64_t, Type>> weights;
  /// Every named weight's type, the parts of packs included: the encoding
  /// the artifact stores it in.
  llvm::StringMap<Type> weightTypes;
  /// Packed weights by a key of their layout and parts -> offset.
  llvm::StringMap<int64_t> packOffsets;
  SmallVector<Attribute> packs;
  std::map<std::pair<std::string, int64_t>, std::pair<int64_t, Type>> caches;
  DenseMap<Value, BindingAttr> bindings;
  /// Where each tensor argument of the step being planned lives.
  SmallVector<Attribute> inputs;
};

/// Plans `step`'s values into `plan`: weights and caches shared with the
/// steps planned before, scratch and inputs of its own.
LogicalResult planMemory(func::FuncOp step, MemoryPlan &plan);

/// A readable kernel name from the op and its operand shapes.
std::string kernelBaseName(Operation *op);
/// Two ops share a kernel when their names, types and attributes agree.
std::string kernelKey(Operation *op);

/// The kernel function `op` becomes, appended to `module`: its operands and
/// result as memrefs, then (token, pos, begin, end), computing the units
/// [begin, end) of `tiling`.
func::FuncOp buildKernel(ModuleOp module, Operation *op, StringRef name, func::FuncOp step,
                         const Tiling &tiling);

} // namespace mlir::quill
