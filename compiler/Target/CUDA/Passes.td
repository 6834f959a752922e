// The CUDA target's passes: how its kernels split work into GPU threads
// and warps, and what makes them valid GPU code.
#ifndef QUILL_TARGET_CUDA_PASSES_TD
#define QUILL_TARGET_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def CudaSplitUnits : Pass<"quill-cuda-split-units", "ModuleOp"> {
  let summary = "Marks ops whose units the GPU needs split finer than the CPU's";
  let description = [{
    Runs before `quill-outline-kernels`, which reads the marks. On the GPU a
    unit of work is one thread (or warp), so what the CPU runs as one unit,
    or as one unit per kv head, would leave the GPU nearly idle. This pass
    sets `quill.units`:
    - `"rows"` on a prefill's rope, kv_write and embeddings (a unit per
      token row) and on attention_merge, RMSNorm and the decode embedding (a
      unit per output element, or per row of [T, width]);
    - `"query-rows"` on attention over T query rows: a unit per (query row,
      kv head), the result tiled `tile_rows`.

    Before:
    ```mlir
    %e = quill.embeddings %table, %tokens : tensor<512x64xf32>, tensor<16xi32> -> tensor<16x64xf32>
    ```
    After:
    ```mlir
    %e = quill.embeddings %table, %tokens {quill.units = "rows"} : ...
    ```
  }];
}

def CudaWarpKernels : Pass<"quill-cuda-warp-kernels", "ModuleOp"> {
  let summary = "Lowers reductions to a warp per unit of work, lanes sharing the sums";
  let description = [{
    The CUDA strategy, before the target-neutral `quill-lower-to-linalg`.
    Matrix-vector kernels (linear, logits, project_qkv and the folded
    RMSNorm's sum of squares), a tiled RMSNorm, flash-decoding's partial
    attention (chunk and head_dim multiples of 32) and a prefill's attention
    rows run a warp per unit: lane l reads elements l, l + 32, ... (each
    warp load 128 contiguous bytes), keeping four interleaved partial sums
    when the width is a multiple of 128, and the lanes meet in a
    `gpu.shuffle xor` butterfly. The warp builds its rows in a private
    buffer and stores them once. Kernels so lowered are marked
    `quill.warp_lanes = 32`, for `quill-wrap-gpu-kernels`.
    `lanes=emulate` computes the same sums in the same order on one CPU
    thread (`quill-compile --emulate-cuda-kernels`), with no gpu ops.

    Before:
    ```mlir
    %y = quill.linear %x, %w tile [%b, %e] : tensor<256xf32>, tensor<64x256xf32> -> tensor<?xf32>
    ```
    After:
    ```mlir
    %lane = gpu.lane_id
    ... scf.for over k = lane, lane + 32, ... { math.fma }
    %s16 = gpu.shuffle xor %sum, %c16, %c32 : f32
    ...
    ```
  }];
  let options = [
    Option<"lanes", "lanes", "std::string", /*default=*/"\"gpu\"",
           "'gpu' (gpu.lane_id and gpu.shuffle) or 'emulate' (the same sums in "
           "the same order on one CPU thread)">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::bufferization::BufferizationDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect", "::mlir::gpu::GPUDialect"
  ];
}

def SpecializeGpuUnits : Pass<"quill-specialize-gpu-units", "ModuleOp"> {
  let summary = "Kernels compute exactly one unit of work per call (the GPU's thread)";
  let description = [{
    The CUDA target's step at the linalg stage, before bufferization. A CPU
    kernel `K(..., begin, end)` computes units `[begin, end)` of any length,
    so its temporaries are sized for the whole range: a prefill gate/up
    kernel of the 110m shape keeps a 64x4096 buffer, 1 MiB, which as GPU
    per-thread local memory would exceed CUDA's 512 KiB and fail at launch.
    On the GPU every call is one unit (one thread), so this pass replaces
    `end` by `begin + 1`, folds the shapes that follow, and shrinks each
    temporary (`bufferization.alloc_tensor` read through one zero-offset
    slice of static sizes) to its slice:

    ```mlir
    %n = arith.subi %end, %begin : index
    %t = bufferization.alloc_tensor() : tensor<64x4096xf32>
    %s = tensor.extract_slice %t[0, 0] [64, %n] [1, 1]
    // becomes, with %end = %begin + 1 and %n = 1:
    %s = bufferization.alloc_tensor() : tensor<64x1xf32>
    ```
  }];
  let options = [
    Option<"loopUnits", "loop-units", "bool", /*default=*/"false",
           "Keep K(..., begin, end) as a loop calling the specialized K_unit once per "
           "unit: the GPU's kernels on the CPU (quill-compile --emulate-cuda-kernels)">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::tensor::TensorDialect",
                           "mlir::bufferization::BufferizationDialect",
                           "mlir::scf::SCFDialect", "mlir::func::FuncDialect"];
}

def WrapGpuKernels : Pass<"quill-wrap-gpu-kernels", "ModuleOp"> {
  let summary = "Moves the kernels into a gpu.module, one GPU thread (or warp) per unit of work";
  let description = [{
    The CUDA target's first stage, on kernels at the loops stage. Each
    kernel `K(memrefs..., token, pos, begin, end)` moves into
    `gpu.module @kernels` as the private function `K_unit`, and
    `gpu.func @K(memrefs..., step: memref<2xi64>, work) kernel` takes its
    name: thread `i` of the launch grid computes unit `i`
    (`K_unit(..., step[0], step[1], i, i + 1)`, token and position read from
    device memory) when `i < work`, so the runtime launches
    `ceil(work / block)` blocks per dispatch, and a step's launches are the
    same every step (a CUDA graph replays them). A kernel marked `quill.warp_lanes = L` (matrix-vector kernels
    lowered with `lane-reductions=gpu`) runs unit `i / L` on thread `i`,
    its `L` lanes sharing the unit's reductions; the work (and grain) of
    its dispatches is multiplied by `L`, so it counts threads. The module
    becomes a `gpu.container_module`.
    A kernel whose stack buffers exceed CUDA's 512 KiB of local memory per
    thread is an error here rather than a failed launch on the GPU.

    ```mlir
    gpu.module @kernels {
      func.func private @rmsnorm_64_64_unit(...)
      gpu.func @rmsnorm_64_64(%x: memref<64xf32>, %w: memref<64xf32>, %y: memref<64xf32>,
                              %step: memref<2xi64>, %work: index) kernel {
        %i = gpu.global_id x
        ...
      }
    }
    ```
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect", "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect"];
}

def ApproximateMath : Pass<"quill-approximate-math", "ModuleOp"> {
  let summary = "Math functions as arithmetic inside GPU modules (no libdevice)";
  let description = [{
    NVVM lowers `math.exp`, `math.sin`, `math.cos`, `math.powf` and
    `math.sqrt` to libdevice calls, which exist only with a CUDA toolkit.
    Inside GPU modules this pass expands powf into exp and log, rewrites exp,
    log, sin and cos with MLIR's polynomial approximations, and sqrt(x) as
    x * rsqrt(x) with rsqrt from the classic bit-level estimate refined by
    three Newton steps (relative error below 1e-6): the PTX needs nothing
    beyond the driver.
  }];
  let options = [
    Option<"everywhere", "everywhere", "bool", /*default=*/"false",
           "Rewrite the whole module, not only GPU modules: the GPU's math on the CPU "
           "(quill-compile --emulate-cuda-kernels)">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

#endif // QUILL_TARGET_CUDA_PASSES_TD
