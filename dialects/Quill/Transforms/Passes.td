// Passes that transform the quill dialect.
#ifndef QUILL_TRANSFORMS_PASSES_TD
#define QUILL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def VerifyStep : Pass<"quill-verify-step", "ModuleOp"> {
  let summary = "Checks the import contract: one @step(token, pos) of quill ops";
  let description = [{
    The importer's output contract: the module holds `func.func @step(%token:
    index, %pos: index) -> tensor<VOCABxf32>` whose body contains only quill
    ops and a return of the logits. Later passes rely on it; anything else is
    reported as an error naming the offending op.
  }];
}

def OutlineKernels : Pass<"quill-outline-kernels", "ModuleOp"> {
  let summary = "Outlines each quill op of @step into a kernel and plans memory";
  let description = [{
    Turns `func.func @step` into a `quill.schedule` of `quill.dispatch` ops.
    Each compute op becomes a call of a kernel function that takes its
    operands and result as memrefs, then `token, pos, begin, end`. Ops of the
    same kind, shapes and attributes share one kernel (every layer calls the
    same kernels with its own weights). Weights get offsets in the weight
    blob, caches offsets in the KV cache, activations offsets in scratch.
    Linear, logits and attention kernels are tiled: they compute the rows (or
    kv-head groups) `[begin, end)` of their output, so the runtime can split
    them across threads.

    Before:
    ```mlir
    %w = quill.weight "layers.0.wq" : tensor<64x64xf32>
    %q = quill.linear %h, %w : tensor<64xf32>, tensor<64x64xf32> -> tensor<64xf32>
    ```
    After:
    ```mlir
    quill.schedule "step" attributes {...} {
      quill.dispatch @linear_64x64([#quill.binding<"scratch", 0, 256>,
          #quill.binding<"weights", 1024, 16384>,
          #quill.binding<"scratch", 256, 256>]) work(64, 16)
    }
    func.func @linear_64x64(%x: memref<64xf32>, %w: memref<64x64xf32>, %y: memref<64xf32>,
        %token: index, %pos: index, %begin: index, %end: index) { ... }
    ```
  }];
  let dependentDialects = [
    "::mlir::quill::QuillDialect",
    "::mlir::func::FuncDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let options = [
    Option<"matvecGrain", "matvec-grain", "int64_t", /*default=*/"16",
           "Output rows per work chunk of linear and logits kernels">
  ];
}

def CopiesToLinalg : Pass<"quill-copies-to-linalg", "ModuleOp"> {
  let summary = "Rewrites memref.copy as linalg.copy so no copy needs a runtime library";
  let description = [{
    Bufferization leaves `memref.copy` ops; copies between buffers of
    non-identity layout lower to a call of MLIR's `memrefCopy` runtime
    function, which a Quill artifact cannot link. As `linalg.copy` they lower
    to plain loops (which LLVM turns into memcpy where it can).

    Before: `memref.copy %a, %b : memref<?xf32, strided<[1]>> to memref<?xf32>`
    After:  `linalg.copy ins(%a : ...) outs(%b : ...)`
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def CheckStaticMemory : Pass<"quill-check-static-memory", "ModuleOp"> {
  let summary = "Fails when a kernel would allocate heap memory per call";
  let description = [{
    The contract before LLVM: kernels keep temporaries on the stack
    (`memref.alloca` of static size) so that a step allocates nothing on the
    heap. Any `memref.alloc` left after `promote-buffers-to-stack` is
    reported, naming the kernel and the buffer type.
  }];
}

def EmitKernelABI : Pass<"quill-emit-kernel-abi", "ModuleOp"> {
  let summary = "Gives every dispatched kernel the runtime's uniform C ABI";
  let description = [{
    Runs on the LLVM dialect, after `convert-func-to-llvm` with bare-pointer
    memrefs. Each dispatched kernel `@K(ptr..., i64 token, i64 pos, i64 begin,
    i64 end)` is renamed `@K_body` (internal) and a new `@K(ptr bindings, i64
    token, i64 pos, i64 begin, i64 end)` loads the argument pointers from the
    `bindings` array and calls it. The runtime then calls every kernel through
    one function-pointer type.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // QUILL_TRANSFORMS_PASSES_TD
