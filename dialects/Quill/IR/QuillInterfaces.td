// Interfaces of quill ops: what passes ask of an op without naming its type.
#ifndef QUILL_INTERFACES_TD
#define QUILL_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Quill_TiledOpInterface : OpInterface<"TiledOpInterface"> {
  let cppNamespace = "::mlir::quill";
  let description = [{
    An op that a kernel can restrict to a tile `[begin, end)` of its units
    of work, given as its trailing `tile` operands. `quill-outline-kernels`
    appends the kernel's `(begin, end)`; the lowering then computes only
    those units (rows, kv heads, pairs of rows: the op's description says
    which).
  }];
  let methods = [
    InterfaceMethod<"The tile operands: none, or `[begin, end)`.",
                    "::mlir::OperandRange", "getTile">,
    InterfaceMethod<"The tile operands, to set a tile.",
                    "::mlir::MutableOperandRange", "getTileMutable">,
    InterfaceMethod<"Whether the op computes a tile only.", "bool", "isTiled", (ins), [{}],
                    [{ return !$_op.getTile().empty(); }]>
  ];
}

def Quill_CacheUpdateOpInterface : OpInterface<"CacheUpdateOpInterface"> {
  let cppNamespace = "::mlir::quill";
  let description = [{
    An op that updates KV-cache operands in place: each such result is its
    cache operand after the update, bound to the cache's memory and written
    through the cache's buffer by the op's kernel.
  }];
  let methods = [
    InterfaceMethod<"(result index, cache operand) of each cache the op updates.",
                    "::llvm::SmallVector<std::pair<unsigned, ::mlir::Value>>",
                    "getUpdatedCaches">,
    InterfaceMethod<"Whether every result is an updated cache (no value of its own).",
                    "bool", "updatesOnlyCaches", (ins), [{}],
                    [{ return $_op->getNumResults() == $_op.getUpdatedCaches().size(); }]>
  ];
}

#endif // QUILL_INTERFACES_TD
