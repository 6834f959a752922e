// The steps' dataflow graphs in Graphviz DOT: --emit=dot and --graph.
#pragma once

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace quill {

/// One digraph of every schedule of `module` (at the "kernels" stage), a
/// cluster per step. Nodes are dispatches: kernel, quill ops, weight type
/// and bytes, FLOPs and bytes moved. Edges are the buffers one dispatch
/// writes and a later one reads, with their sizes. Layers (the dispatches'
/// locations name them) that do the same things are drawn once, as a
/// cluster with their count; each node's `comment` lists the schedule
/// indices of the dispatches it stands for.
std::string dispatchGraphDot(mlir::ModuleOp module, const std::string &title);

} // namespace quill
