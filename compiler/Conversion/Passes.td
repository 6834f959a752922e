// Conversion passes out of the quill dialect.
#ifndef QUILL_CONVERSION_PASSES_TD
#define QUILL_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToLinalg : Pass<"quill-lower-to-linalg", "ModuleOp"> {
  let summary = "Lowers quill compute ops to linalg, tensor, arith and math";
  let description = [{
    Rewrites every quill compute op (normally inside kernels made by
    `quill-outline-kernels`) into `linalg.generic` ops on tensors plus
    `tensor`, `arith` and `math` ops (and `scf.for` over rows, blocks and
    units where an op is a loop of smaller ones). Dot-product and sum-of-squares
    reductions carry `fastmath<reassoc, contract>` so that the code generator
    may vectorize them and form FMAs.
    Tiled ops (`tile [%b, %e]`) compute only their output rows.

    It knows no target: no vector width, lane, warp or prefetch. A target
    that has better forms for some ops (register-tiled microkernels, warp
    reductions) lowers those first in a pass of its own under
    `compiler/Target/<target>/`, building the same patterns with its own
    KernelBuilder; this pass then lowers the rest. A quill compute op it
    cannot lower is an error naming the op.

    Before:
    ```mlir
    %y = quill.add %a, %b : tensor<64xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<64xf32>
    %y = linalg.generic {...} ins(%a, %b : ...) outs(%e : tensor<64xf32>) {
      ^bb0(%x: f32, %z: f32, %o: f32):
        %s = arith.addf %x, %z : f32
        linalg.yield %s : f32
    } -> tensor<64xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::bufferization::BufferizationDialect", "::mlir::scf::SCFDialect"
  ];
}

#endif // QUILL_CONVERSION_PASSES_TD
