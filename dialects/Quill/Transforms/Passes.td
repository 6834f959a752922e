// Target-neutral passes over the quill dialect: import checks, fusions,
// outlining into kernels, and the checks of the loops stage. Each target's
// own passes are in compiler/Target/<target>/Passes.td.
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

def QuantizeWeights : Pass<"quill-quantize-weights", "ModuleOp"> {
  let summary = "Picks each weight matrix's encoding for a quantization scheme";
  let description = [{
    Rewrites the element type of every `quill.weight` matrix to the encoding
    the scheme gives it, with llama.cpp's rules so that a model quantized by
    Quill has the types `llama-quantize` would give it:

    - `f16`, `bf16`, `q8_0`: every matrix;
    - `q4_0`: every matrix, but the classifier (`output`, or the shared
      embedding) is `q6_k`;
    - `q4_k_m`: `q4_k`, but the classifier is `q6_k`, and so are `wv` and
      `w2` (attn_v, ffn_down) of the layers llama.cpp's `use_more_bits`
      picks: the first and last eighth, and every third layer between.

    A matrix whose rows are not whole 256-weight super-blocks falls back as
    llama.cpp does (`q6_k` to `q8_0`; `q4_k`, where llama.cpp takes Q5_0,
    which Quill lacks, to `q4_0`), and one not of whole 32-weight blocks to
    `f16`. Vectors stay f32. The weights' bytes are converted when the
    artifact is written.

    Before (`scheme=q8_0`):
    ```mlir
    %w = quill.weight "layers.0.wq" : tensor<64x64xf32>
    ```
    After:
    ```mlir
    %w = quill.weight "layers.0.wq" : tensor<64x64x!quill.q8_0>
    ```
  }];
  let options = [
    Option<"scheme", "scheme", "std::string", /*default=*/"\"q8_0\"",
           "f16, bf16, q8_0, q4_0 or q4_k_m">,
  ];
}

def QuantizeActivations : Pass<"quill-quantize-activations", "ModuleOp"> {
  let summary = "Rounds the input of products over block-quantized weights to Q8_0 blocks, over bf16 weights to bf16";
  let description = [{
    Sets `q8_input` on every `quill.linear`, `quill.logits` and
    `quill.project_qkv` whose weight is block-quantized (`q8_0`, `q4_0`,
    `q4_k`, `q6_k`): their input is rounded to Q8_0 blocks of 32 before the
    product, in every step (decode, prefill, batch), as llama.cpp rounds
    the activations of these types (its `vec_dot_type`: Q8_0 blocks for
    Q8_0 and Q4_0; for the K-quants it takes Q8_K, one scale per 256, where
    Quill keeps one per 32). The products then need only int8 dot products,
    which a CPU with AVX-512 VNNI or AVX-VNNI computes several times as fast
    as widened f32 multiply-adds. Likewise `bf16_input` on those whose
    weight is bf16: the input rounded to bf16 (to nearest even), as
    llama.cpp's `vec_dot_type` for BF16, so that a CPU with AVX512_BF16
    multiplies bf16 pairs (`vdpbf16ps`) at twice the f32 FMA rate.
    `quill-compile --no-quantize-activations` leaves the inputs f32 (f16
    products always take f32 inputs).

    Before:
    ```mlir
    %q = quill.linear %h, %wq : tensor<64xf32>, tensor<64x64x!quill.q8_0> -> tensor<64xf32>
    ```
    After:
    ```mlir
    %q = quill.linear %h, %wq {q8_input} : tensor<64xf32>, tensor<64x64x!quill.q8_0> -> tensor<64xf32>
    ```
  }];
}

def FuseGateUp : Pass<"quill-fuse-gate-up", "ModuleOp"> {
  let summary = "Fuses the gate and up projections with SwiGLU as their epilogue";
  let description = [{
    `swiglu(linear(h, Wg), linear(h, Wu))` becomes one `quill.linear` over a
    weight packed at compile time with the rows of Wg and Wu interleaved,
    with the `swiglu` epilogue: one pass over h, one kernel, and a tile of
    rows always holds matching gate and up rows. Results are bitwise equal.

    Before:
    ```mlir
    %g = quill.linear %h, %w1 : ... -> tensor<172xf32>
    %u = quill.linear %h, %w3 : ... -> tensor<172xf32>
    %a = quill.swiglu %g, %u : tensor<172xf32>
    ```
    After:
    ```mlir
    %w13 = quill.concat %w1, %w3 {interleave} : (...) -> tensor<344x64xf32>
    %a = quill.linear %h, %w13 {swiglu} : tensor<64xf32>, tensor<344x64xf32> -> tensor<172xf32>
    ```
  }];
}

def FuseQKV : Pass<"quill-fuse-qkv", "ModuleOp"> {
  let summary = "Fuses linear layers that share their input (Q, K and V) into one";
  let description = [{
    Plain `quill.linear` ops reading the same input become one over the
    weights packed one after another, whose output is split by
    `quill.slice` views: one kernel and one read of the input instead of
    three. Results are bitwise equal.

    Before:
    ```mlir
    %q = quill.linear %h, %wq : ... -> tensor<64xf32>
    %k = quill.linear %h, %wk : ... -> tensor<32xf32>
    ```
    After:
    ```mlir
    %wqk = quill.concat %wq, %wk : (...) -> tensor<96x64xf32>
    %qk = quill.linear %h, %wqk : ... -> tensor<96xf32>
    %q = quill.slice %qk[0] : tensor<96xf32> -> tensor<64xf32>
    %k = quill.slice %qk[64] : tensor<96xf32> -> tensor<32xf32>
    ```
  }];
}

def FuseRMSNorm : Pass<"quill-fuse-rmsnorm", "ModuleOp"> {
  let summary = "Folds RMSNorm into the linear layers that follow it";
  let description = [{
    `linear(rmsnorm(x, g), W)` becomes `linear(x, W')` with `norm_eps`:
    W' = W diag(g) is packed at compile time (the `scale` of a
    `quill.concat`) and the kernel scales each output by 1/rms(x), so the
    normalized vector is never written to memory. Runs after the other
    fusions, so one norm feeds one fused projection. Results agree with the
    unfused graph to rounding (W'x is summed in another order than W(g x)).

    Before:
    ```mlir
    %h = quill.rmsnorm %x, %g {eps = 1.0e-05 : f32} : tensor<64xf32>, tensor<64xf32>
    %y = quill.linear %h, %w : tensor<64xf32>, tensor<128x64xf32> -> tensor<128xf32>
    ```
    After:
    ```mlir
    %p = quill.concat %w scale %g : tensor<64xf32> : (tensor<128x64xf32>) -> tensor<128x64xf32>
    %y = quill.linear %x, %p {norm_eps = 1.0e-05 : f32} : tensor<64xf32>, tensor<128x64xf32> -> tensor<128xf32>
    ```
  }];
}

def FuseRopeKV : Pass<"quill-fuse-rope-kv", "ModuleOp"> {
  let summary = "Makes rotary embedding and the KV-cache write the QKV projection's epilogue";
  let description = [{
    A fused QKV projection whose Q slice is rotated, whose K slice is
    rotated and written into the key cache and whose V slice is written into
    the value cache becomes one `quill.project_qkv`: the kernel that
    computes the rows rotates them and stores K and V in the cache at once,
    replacing four small kernels. Runs after the QKV and RMSNorm fusions.
    Results are bitwise equal.

    Before:
    ```mlir
    %y = quill.linear %x, %w : ... -> tensor<128xf32>
    %q = quill.slice %y[0] ...   %qr = quill.rope %q at %pos ...
    %k = quill.slice %y[64] ...  %kr = quill.rope %k at %pos ...
    %k1 = quill.kv_write %kr into %kc at %pos ...
    %v = quill.slice %y[96] ...  %v1 = quill.kv_write %v into %vc at %pos ...
    ```
    After:
    ```mlir
    %y, %k1, %v1 = quill.project_qkv %x, %w into %kc, %vc at %pos {head_dim = 8 : i64, ...}
    %qr = quill.slice %y[0] ...
    ```
  }];
}

def FuseResidual : Pass<"quill-fuse-residual", "ModuleOp"> {
  let summary = "Makes the residual add the epilogue of the linear layer before it";
  let description = [{
    `add(x, linear(h, W))` becomes `linear(h, W) residual x`: the sum is
    formed as each output row is computed, with no separate kernel or pass
    over memory. Results are bitwise equal.

    Before:
    ```mlir
    %o = quill.linear %a, %wo : ... -> tensor<64xf32>
    %x1 = quill.add %x, %o : tensor<64xf32>
    ```
    After:
    ```mlir
    %x1 = quill.linear %a, %wo residual %x : tensor<64xf32> : ... -> tensor<64xf32>
    ```
  }];
}

def ShareWeightPacks : Pass<"quill-share-weight-packs", "ModuleOp"> {
  let summary = "Makes every step read the one packed copy of its weights";
  let description = [{
    The QKV fusion packs Q, K and V together in the decode step, where a
    prefill or batch step's projections (whose `[T, rows]` outputs would not
    split into contiguous views) read them apart. A `quill.linear` whose
    weight is a named weight, or a pack of a run of parts with the same
    folded scale, that lies inside a pack of more parts (of any step)
    reads those rows of that pack instead, through a `quill.slice`; packed
    biases likewise. Weights only packed then have no bytes of their own in
    the artifact: it holds each weight once. Results are bitwise equal (the
    rows are the same bytes). `quill-compile --no-weight-sharing` keeps the
    separate copies, for A/B comparisons.

    Before (a prefill step, beside a decode step that packs `wq, wk, wv`):
    ```mlir
    %wk = quill.weight "wk" : tensor<32x64x!quill.q8_0>
    %k = quill.linear %h, %wk : tensor<16x64xf32>, tensor<32x64x!quill.q8_0> -> tensor<16x32xf32>
    ```
    After:
    ```mlir
    %p = quill.concat %wq, %wk, %wv : (...) -> tensor<128x64x!quill.q8_0>
    %wk = quill.slice %p[64] : tensor<128x64x!quill.q8_0> -> tensor<32x64x!quill.q8_0>
    %k = quill.linear %h, %wk : tensor<16x64xf32>, tensor<32x64x!quill.q8_0> -> tensor<16x32xf32>
    ```
  }];
}

def SplitAttention : Pass<"quill-split-attention", "ModuleOp"> {
  let summary = "Splits attention over long caches into chunks merged in a fixed order";
  let description = [{
    Flash-decoding for one query vector: `quill.attention` over a cache of at
    least 4 chunks becomes `quill.attention_partial` (one unit per kv head
    and chunk of cached positions, so even a model with few kv heads keeps
    every thread busy at long contexts) and `quill.attention_merge`, which
    combines the chunks in chunk order: the result does not depend on the
    thread count.

    Before:
    ```mlir
    %o = quill.attention %q, %k, %v at %pos {...} : ... -> tensor<2048xf32>
    ```
    After:
    ```mlir
    %p = quill.attention_partial %q, %k, %v at %pos {chunk = 256 : i64, ...} : ... -> tensor<32x528xf32>
    %o = quill.attention_merge %p {...} : tensor<32x528xf32> -> tensor<2048xf32>
    ```
  }];
  let options = [
    Option<"chunk", "chunk", "int64_t", /*default=*/"256",
           "Cached positions per unit of work (0: no splitting)">
  ];
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
    them across threads. An op marked `quill.units` by a target's pass
    (`"rows"`: a unit per leading row or element; `"query-rows"`: attention's
    (query row, kv head) pairs, `tile_rows`) is split that way instead.

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
    reported, naming the kernel and the buffer type, and so is a
    `memref.alloca` inside a loop (the stack would grow at every iteration).
  }];
}

#endif // QUILL_TRANSFORMS_PASSES_TD
