// The CPU target's passes: its kernel strategy (register-tiled vector
// microkernels sized for the instruction set) and its kernel ABI.
#ifndef QUILL_TARGET_CPU_PASSES_TD
#define QUILL_TARGET_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def CpuLowerKernels : Pass<"quill-cpu-lower-kernels", "ModuleOp"> {
  let summary = "Lowers products and attention to the CPU's register-tiled microkernels";
  let description = [{
    The CPU's strategy, before the target-neutral `quill-lower-to-linalg`
    lowers everything else. `quill.linear`, `quill.logits`,
    `quill.project_qkv`, `quill.attention` and `quill.paged_attention` are
    lowered by the neutral patterns (epilogues, tiles, cache writes) with
    the CPU's KernelBuilder for their reductions:
    - decode's matrix-vector product streams 8 weight rows together, each
      row keeping one `vector<W x f32>` of partial sums (W = `vector-width`:
      16 for AVX-512, 8 for AVX2), summed across lanes at the end;
    - the matrix-matrix product (prefill, batch step) keeps a register tile
      of (2 tokens x 8 weight rows) accumulators (2 x 4 with 8 lanes, whose
      ISA has half the registers) over 1024-column panels of the width, and
      prefetches the next block of weight rows (`prefetch-weights`);
    - with `int8-dot`, decode's products over Q8_0 and Q4_0 weights that
      take Q8_0 inputs (`q8_input`) round the input to int8 blocks once,
      then compute each 32-weight block of a row as one `vpdpbusd`
      (`llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"`; without
      `int8-vnni`, AVX2's `vpmaddubsw` and `vpmaddwd` with the same integer
      sums), its int32 sums scaled by the weight's and the input's block
      scales;
    - with `bf16-dot`, prefill's and the batch step's products over bf16
      weights that take bf16 inputs (`bf16_input`) round the token rows to
      bf16 once and run the same register tiles on 32 bf16 columns per
      step, each accumulator lane adding two exact products
      (`llvm.x86.avx512bf16.dpbf16ps.512`);
    - with `int8-dot` and `int8-matmul`, prefill's and the batch step's
      products over Q8_0, Q4_0, Q4_K and Q6_K weights with `q8_input`
      round the live token rows to int8 blocks, transpose each group of L
      weight rows (L = 16 with `int8-dot-512`, else 8) once into a stack
      buffer so that lane r of word vector j holds row r's four bytes that
      input word j multiplies, and run one `vpdpbusd` per word for the
      whole group (the input word broadcast), each step's exact int32 sums
      scaled into one f32 lane per row (Q4_K's minimum one more FMA, Q6_K's
      halves of 16 two accumulators);
    - attention over heads of 8 or 16 dimensions reads keys as transposed
      [8, head_dim] tiles and keeps the weighted sums in registers;
    - attention over heads of 24 or more (a multiple of 8) reads each key
      row once in vectors widened from the cache's type, sums a tile of 16
      positions' partial products (8 where the head is no multiple of 16)
      by a transpose-add tree into one vector of scores per query head,
      and keeps the weighted sums in registers;
      a prefill takes blocks of query rows together at each kv head
      (`attention-row-blocks`), their later positions masked to -inf;
    - `quill.rope` over a batch step's live rows builds its cos/sin table
      row by row, each row's pairs as vectors of up to 8 (as a [rows,
      pairs] generic, LLVM vectorized small heads across rows, mixing
      libmvec's and libm's cosf, so a row's bits depended on its
      neighbours), and every `quill.rope` rotates each head's pairs in
      vectors of up to 16 values (a shuffle swaps the partners) where the
      generic gathered them.
    Shapes that do not fit (a width no multiple of W, leftover rows) take
    the generic forms. Results depend on W, never on threads.

    Before:
    ```mlir
    %y = quill.linear %x, %w tile [%b, %e] : tensor<64xf32>, tensor<128x64xf32> -> tensor<?xf32>
    ```
    After (W = 16):
    ```mlir
    %r = scf.for %blk = %c0 to %blocks step %c1 iter_args(%o = %init) -> (tensor<?xf32>) {
      %acc:8 = scf.for %k = %c0 to %c4 step %c1 iter_args(...) -> (vector<16xf32>, ...) {
        %xv = vector.transfer_read %x[...] : tensor<64xf32>, vector<16xf32>
        %w0 = vector.transfer_read %w[...] : tensor<128x64xf32>, vector<16xf32>
        %f0 = vector.fma %w0, %xv, %a0 : vector<16xf32>
        ...
      }
      ...
    }
    ```
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "f32 lanes per vector register of the target ISA: 16 (AVX-512), "
           "8 (AVX2), 4 (SSE); quill-compile takes it from --cpu's features">,
    Option<"prefetchWeights", "prefetch-weights", "bool", /*default=*/"true",
           "Register-tiled matmuls prefetch the next block of weight rows "
           "(memref.prefetch) while computing this one: the hardware prefetcher "
           "does not run ahead across a block's strided row streams; decode's "
           "products over Q4_0, Q4_K and Q6_K row groups prefetch each chunk's "
           "lines 8 KiB ahead "
           "(quill-compile --no-prefetch turns both off)">,
    Option<"rowGroupPrefetchBytes", "weight-prefetch-distance", "int64_t", /*default=*/"-1",
           "With prefetch-weights: how many bytes ahead decode's products "
           "over row groups prefetch their weights, for every type (0: "
           "none); -1: per type, 8 KiB for Q4_0, Q4_K and Q6_K and none for "
           "Q8_0 (quill-compile --weight-prefetch-distance)">,
    Option<"int8Dot", "int8-dot", "bool", /*default=*/"false",
           "Decode's products over Q8_0, Q4_0, Q4_K and Q6_K weights with "
           "q8_input run as int8 dot products (vpdpbusd, or AVX2's with "
           "int8-vnni=false); quill-compile sets it for CPUs with AVX2">,
    Option<"int8Vnni", "int8-vnni", "bool", /*default=*/"true",
           "The int8 products take vpdpbusd (AVX-512 VNNI with VL, or "
           "AVX-VNNI); false: AVX2's vpmaddubsw and vpmaddwd, their pairs "
           "summed in i16 as far as they cannot overflow, Q8_0's signed "
           "bytes through vpabsb and vpsignb (Int8DotSums.cpp)">,
    Option<"int8Dot512", "int8-dot-512", "bool", /*default=*/"false",
           "The CPU has the 512-bit vpdpbusd (AVX-512 VNNI): the int8 matmul's "
           "row groups are 16 rows (with vector-width 16), not 8">,
    Option<"int8MatMul", "int8-matmul", "bool", /*default=*/"true",
           "With int8-dot, prefill's and the batch step's products over Q8_0, "
           "Q4_0, Q4_K and Q6_K weights with q8_input run as int8 dot products "
           "over transposed row groups (quill-compile --no-int8-matmul: the weights decoded to "
           "the f32 tiles, for A/B)">,
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "The CPU has vdpbf16ps (AVX512_BF16): prefill's and the batch step's "
           "products over bf16 weights with bf16_input multiply bf16 pairs in "
           "register tiles; quill-compile takes it from --cpu's features">,
    Option<"attentionRowBlocks", "attention-row-blocks", "bool", /*default=*/"true",
           "A prefill's attention over heads of 24 or more takes blocks of query "
           "rows together at each kv head (their query heads one group, later "
           "positions masked to -inf), each key and value row read once per "
           "block (quill-compile --no-attention-row-blocks: one row at a time, "
           "for A/B)">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::bufferization::BufferizationDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect", "::mlir::memref::MemRefDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

def CpuGroupWeightRows : Pass<"quill-cpu-group-weight-rows", "ModuleOp"> {
  let summary = "Stores the block-quantized weights the int8 products read in row groups";
  let description = [{
    Before kernel outlining, on a CPU with `vpdpbusd`: every Q8_0, Q4_0,
    Q4_K or Q6_K weight matrix (a named weight or a pack, with the slices of it that
    steps read) whose rows are whole groups of `lanes` and whose every use
    in every step is a linear, logits or QKV projection with `q8_input`
    gets the encoding `#quill.row_groups<lanes>`: the artifact stores each
    group's block as the group's f16 scales and then word vectors of the
    rest of its blocks (QuillAttrs.td), and the int8 kernels of decode, prefill and the batch
    step read it as is. The weights' tiles then split on whole groups.
    Others (a tied embedding's table, a width of partial groups, no int8
    products) keep the file's layout. quill-compile --no-row-groups keeps
    every weight in it, for A/B.

    Before:
    ```mlir
    %w = quill.weight "l.w1" : tensor<64x64x!quill.q8_0>
    %y = quill.linear %x, %w {q8_input} : tensor<64xf32>, tensor<64x64x!quill.q8_0> -> tensor<64xf32>
    ```
    After (lanes = 16):
    ```mlir
    %w = quill.weight "l.w1" : tensor<64x64x!quill.q8_0, #quill.row_groups<16>>
    %y = quill.linear %x, %w {q8_input} : tensor<64xf32>,
        tensor<64x64x!quill.q8_0, #quill.row_groups<16>> -> tensor<64xf32>
    ```
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "Rows per group: the i32 lanes of the int8 kernels' vectors, 16 with "
           "AVX-512 VNNI, 8 with AVX-VNNI">
  ];
}

def CpuExpandBf16Rounding : Pass<"quill-cpu-expand-bf16-rounding", "ModuleOp"> {
  let summary = "Rounds f32 to bf16 (and widens bf16) with integer arithmetic";
  let description = [{
    For CPUs without AVX512_BF16, where LLVM would lower `arith.truncf` to
    bf16 as a call of `__truncsfbf2`, a symbol the kernel library cannot
    resolve when the runtime loads it. Rewrites `arith.truncf` f32 -> bf16
    into round-to-nearest-even on the bits (NaN kept quiet) and `arith.extf`
    bf16 -> f32 into a shift, scalars and vectors alike: the values are the
    ones `vcvtneps2bf16` gives for normal numbers. Runs in the llvm-dialect
    stage, before arith is lowered to LLVM; the target adds it only where
    the CPU lacks AVX512_BF16. A module that holds bf16 values also gets a
    definition of `__truncsfbf2` (the same rounding): LLVM's code generator
    carries bf16 values that live across blocks as f32 and calls it to round
    them back.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect"];
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

#endif // QUILL_TARGET_CPU_PASSES_TD
