// Conversion passes out of the quill dialect.
#ifndef QUILL_CONVERSION_PASSES_TD
#define QUILL_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToLinalg : Pass<"quill-lower-to-linalg", "ModuleOp"> {
  let summary = "Lowers quill compute ops to linalg, tensor, arith and math";
  let description = [{
    Rewrites every quill compute op (normally inside kernels made by
    `quill-outline-kernels`) into `linalg.generic` ops on tensors plus
    `tensor`, `arith` and `math` ops. Dot-product and sum-of-squares
    reductions carry `fastmath<reassoc, contract>` so that the code generator
    may vectorize them and form FMAs.
    Tiled ops (`tile [%b, %e]`) compute only their output rows.

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
  let options = [
    Option<"prefetchWeights", "prefetch-weights", "bool", /*default=*/"true",
           "Register-tiled matmuls prefetch the next block of weight rows "
           "(memref.prefetch) while computing this one: the hardware prefetcher "
           "does not run ahead across a block's strided row streams "
           "(quill-compile --no-prefetch turns it off)">,
    Option<"laneReductions", "lane-reductions", "std::string", /*default=*/"\"none\"",
           "How matrix-vector kernels (linear, logits, project_qkv) reduce over "
           "the width: 'none' (one thread per row), 'gpu' (a warp per output "
           "element: lane l reads elements l, l+32, ..., coalesced, then a "
           "gpu.shuffle xor butterfly; the kernel is marked quill.warp_lanes), "
           "'emulate' (the same sums in the same order on one CPU thread)">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::bufferization::BufferizationDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect", "::mlir::memref::MemRefDialect",
    "::mlir::gpu::GPUDialect"
  ];
}

#endif // QUILL_CONVERSION_PASSES_TD
