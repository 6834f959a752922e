// Operations of the quill dialect: the model-level step and its schedule.
#ifndef QUILL_OPS_TD
#define QUILL_OPS_TD

include "dialects/Quill/IR/QuillBase.td"
include "dialects/Quill/IR/QuillAttrs.td"
include "dialects/Quill/IR/QuillTypes.td"
include "dialects/Quill/IR/QuillInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"

//===----------------------------------------------------------------------===//
// State: weights and the KV cache
//===----------------------------------------------------------------------===//

def Quill_WeightOp : Quill_Op<"weight", [Pure]> {
  let summary = "A weight tensor, referenced by name into the weight table";
  let description = [{
    Stands for the tensor `name` of the model's weight table. The data stays
    in the model file and later in the artifact's mapped weight blob; it is
    never inlined into the IR.

    ```mlir
    %wq = quill.weight "layers.0.wq" : tensor<64x64xf32>
    ```

    A matrix may keep the encoding its file has, or the one
    `quill-quantize-weights` picks: f16, bf16, or GGUF blocks
    (`tensor<64x64x!quill.q8_0>`); its columns must be a whole number of
    blocks. Vectors (norm weights) are f32.
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs AnyTypeOf<[Quill_Tensor, Quill_WeightMatrix],
                                "f32 tensor or weight matrix">:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Quill_KVCacheOp : Quill_Op<"kv_cache", [Pure]> {
  let summary = "The key or value cache of one layer: [context, kv width]";
  let description = [{
    The cached keys (`kind = "key"`) or values (`"value"`) of layer `layer`,
    one row per position of the context. Its state persists across steps.
    Its element type is the KV type chosen at compile time (f32, f16 or
    bf16): the ops that write it round f32 rows to it (to nearest even),
    those that read it widen its elements back to f32.

    ```mlir
    %k = quill.kv_cache "key" layer 0 : tensor<512x32xf32>
    %v = quill.kv_cache "value" layer 0 : tensor<512x32xf16>
    ```

    In a batch step the cache is paged: `[blocks, block size, kv width]`,
    one section of the runtime's block pool; sequences reach their
    positions through block tables (`quill.paged_kv_write`,
    `quill.paged_attention`).

    ```mlir
    %k = quill.kv_cache "key" layer 0 : tensor<65536x16x32xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kind, I64Attr:$layer);
  let results = (outs AnyTypeOf<[Quill_Cache, Quill_BlockPool]>:$result);
  let assemblyFormat = "$kind `layer` $layer attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Quill_KVWriteOp : Quill_Op<"kv_write",
    [DeclareOpInterfaceMethods<Quill_CacheUpdateOpInterface>, Quill_TiledOpInterface,
     AllTypesMatch<["cache", "result"]>, MemoryEffects<[MemWrite]>]> {
  let summary = "Stores the key or value row of position `pos` into a cache";
  let description = [{
    Returns `cache` with row `pos` replaced by `row` (or, for T rows, rows
    `pos .. pos + T - 1`). It writes the persistent cache state, so it is
    never removed as dead code. Inside a kernel, `tile [%b, %e]` restricts
    the op to rows `[b, e)` of T rows (written at `pos + b ..`); the result
    is still the whole cache, updated in place.

    ```mlir
    %k1 = quill.kv_write %krow into %k at %pos : tensor<32xf32> into tensor<512x32xf32>
    ```
  }];
  let arguments = (ins Quill_Rows:$row, Quill_Cache:$cache, Index:$pos, Variadic<Index>:$tile);
  let results = (outs Quill_Cache:$result);
  let assemblyFormat = [{
    $row `into` $cache `at` $pos (`tile` `[` $tile^ `]`)? attr-dict `:` type($row) `into` type($cache)
  }];
  let hasVerifier = 1;
}

def Quill_ConcatOp : Quill_Op<"concat", [Pure, AttrSizedOperandSegments]> {
  let summary = "Rows of several weights packed into one weight at compile time";
  let description = [{
    The rows of every part, one part after another, or with `interleave`
    row by row (part 0 row 0, part 1 row 0, part 0 row 1, ...), so that one
    kernel streams them together. Parts must be `quill.weight`s with the same
    number of columns (and of rows, to interleave): the packing happens when
    the artifact's weights are laid out, never at run time. With `scale %g`
    (a named vector weight), every column k is also multiplied by g[k]: an
    RMSNorm weight folded into the layer. Vector parts (the biases of
    packed layers) are concatenated likewise, element after element.

    ```mlir
    %wqkv = quill.concat %wq, %wk, %wv : (tensor<64x64xf32>, tensor<32x64xf32>,
        tensor<32x64xf32>) -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyTypeOf<[Quill_WeightMatrix, Quill_Vector]>>:$parts,
                       Optional<Quill_Vector>:$scale, UnitAttr:$interleave);
  let results = (outs AnyTypeOf<[Quill_WeightMatrix, Quill_Vector]>:$result);
  let assemblyFormat = [{
    $parts (`scale` $scale^ `:` type($scale))? attr-dict `:` functional-type($parts, $result)
  }];
  let hasVerifier = 1;
}

def Quill_SliceOp : Quill_Op<"slice", [Pure]> {
  let summary = "A contiguous part of a vector or of a packed weight: a view, no kernel";
  let description = [{
    Elements `[offset, offset + size)` of a vector `input`, where `size` is
    the result's length: the output of a fused projection split again, or a
    packed bias. Of a weight matrix (a `quill.concat` of named weights),
    rows `[offset, offset + rows)`: one step's projection reads its part of
    the weight another step streams packed, so the artifact holds the rows
    once. The result has the input's columns and encoding.

    ```mlir
    %k = quill.slice %qkv[64] : tensor<128xf32> -> tensor<32xf32>
    %wk = quill.slice %wqkv[64] : tensor<128x64x!quill.q8_0> -> tensor<32x64x!quill.q8_0>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Quill_Vector, Quill_WeightMatrix]>:$input, I64Attr:$offset);
  let results = (outs AnyTypeOf<[Quill_Vector, Quill_WeightMatrix]>:$result);
  let assemblyFormat = [{
    $input `[` $offset `]` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Quill_WeightViewOp : Quill_Op<"weight_view", [Pure]> {
  let summary = "A kernel's weight bytes seen as the block-quantized weight they hold";
  let description = [{
    Inside a kernel, a block-quantized weight (or a Q8_0 KV cache) arrives
    as its bytes, one row of `[rows, row bytes]` per weight row; this names the encoding again so
    that the compute op keeps its logical shape. The lowering reads the
    bytes, and the view disappears with the op.

    ```mlir
    %w = quill.weight_view %bytes : tensor<64x68xi8> -> tensor<64x64x!quill.q8_0>
    ```
  }];
  let arguments = (ins Quill_StorageBytes:$bytes);
  let results = (outs AnyTypeOf<[Quill_WeightMatrix, Quill_Cache, Quill_BlockPool]>:$result);
  let assemblyFormat = "$bytes attr-dict `:` type($bytes) `->` type($result)";
  let hasVerifier = 1;
}

def Quill_StorageBytesOp : Quill_Op<"storage_bytes", [Pure]> {
  let summary = "The bytes a quill.weight_view names again";
  let description = [{
    The inverse of `quill.weight_view`: where a kernel updates a Q8_0 cache
    in place, the updated cache goes back to the kernel's byte buffer
    through this. Once the update is lowered to byte writes, the pair folds
    away: `storage_bytes(weight_view(x))` is `x`.

    ```mlir
    %b = quill.storage_bytes %cache : tensor<64x64x!quill.q8_0> -> tensor<64x68xi8>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Quill_WeightMatrix, Quill_Cache, Quill_BlockPool]>:$typed);
  let results = (outs Quill_StorageBytes:$bytes);
  let assemblyFormat = "$typed attr-dict `:` type($typed) `->` type($bytes)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

def Quill_EmbeddingOp : Quill_Op<"embedding", [Quill_TiledOpInterface, Pure]> {
  let summary = "Looks up the embedding row of a token";
  let description = [{
    ```mlir
    %x = quill.embedding %table[%token] : tensor<512x64xf32> -> tensor<64xf32>
    ```
    Inside a kernel, `tile [%b, %e]` restricts the op to elements `[b, e)`
    of the row.
  }];
  let arguments = (ins Quill_WeightMatrix:$table, Index:$token, Variadic<Index>:$tile);
  let results = (outs Quill_Vector:$result);
  let assemblyFormat = [{
    $table `[` $token `]` (`tile` `[` $tile^ `]`)? attr-dict `:` type($table) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Quill_EmbeddingsOp : Quill_Op<"embeddings", [Quill_TiledOpInterface, Pure]> {
  let summary = "Looks up the embedding rows of T tokens (a prefill chunk)";
  let description = [{
    Inside a kernel, `tile [%b, %e]` restricts the op to token rows
    `[b, e)`: the result has `e - b` rows.

    ```mlir
    %x = quill.embeddings %table[%tokens] : tensor<512x64xf32>, tensor<32xi32> -> tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Quill_WeightMatrix:$table, 1DTensorOf<[I32]>:$tokens, Variadic<Index>:$tile);
  let results = (outs Quill_Matrix:$result);
  let assemblyFormat = [{
    $table `[` $tokens `]` (`tile` `[` $tile^ `]`)? attr-dict `:` type($table) `,` type($tokens) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Quill_RowOp : Quill_Op<"row", [Pure]> {
  let summary = "Row `index` of [T, width] activations: a view, no kernel";
  let description = [{
    Used to take the last token's row of a prefill chunk for the logits.

    ```mlir
    %last = quill.row %x[31] : tensor<32x64xf32> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Quill_Matrix:$input, I64Attr:$index);
  let results = (outs Quill_Vector:$result);
  let assemblyFormat = [{
    $input `[` $index `]` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Quill_RMSNormOp : Quill_Op<"rmsnorm", [Quill_TiledOpInterface, Pure, AttrSizedOperandSegments]> {
  let summary = "Root-mean-square normalization scaled by a weight";
  let description = [{
    `result[i] = weight[i] * input[i] / sqrt(mean(input^2) + eps)`. Inside
    a kernel, `tile [%b, %e]` restricts the op to elements `[b, e)` of one
    vector (each still scaled by the whole vector's root mean square), or
    to rows `[b, e)` of a [T, width] input.

    With `group = g`, each run of g consecutive elements (one attention
    head: Qwen3's q/k norms) is normalized on its own, all by the same
    g-element weight. Such an op is never tiled.

    In a batch step, `rows %n` (T rows, no group) says only the first n rows
    are live: a kernel splits the op by rows and runs the live ones only;
    the other rows of the result are left undefined.

    ```mlir
    %h = quill.rmsnorm %x, %w {eps = 1.0e-05 : f32} : tensor<64xf32>, tensor<64xf32>
    %qn = quill.rmsnorm %q, %qw {eps = 1.0e-06 : f32, group = 16 : i64}
        : tensor<64xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Quill_Rows:$input, Quill_Vector:$weight, F32Attr:$eps,
                       Optional<Index>:$rows, Variadic<Index>:$tile,
                       OptionalAttr<I64Attr>:$group);
  let results = (outs Quill_Rows:$result);
  let assemblyFormat = [{
    $input `,` $weight (`rows` $rows^)? (`tile` `[` $tile^ `]`)? attr-dict `:` type($input) `,`
    type($weight)
    custom<TiledResult>(ref(type($input)), type($result))
  }];
  let hasVerifier = 1;
}

class Quill_MatVecOp<string mnemonic>
    : Quill_Op<mnemonic, [Quill_TiledOpInterface, Pure, AttrSizedOperandSegments]> {
  let arguments = (ins Quill_Rows:$input, Quill_WeightMatrix:$weight,
                       Optional<Quill_Rows>:$residual, Optional<Quill_Vector>:$bias,
                       Variadic<Index>:$tile, Optional<Index>:$rows,
                       UnitAttr:$swiglu, OptionalAttr<F32Attr>:$norm_eps,
                       UnitAttr:$q8_input, UnitAttr:$bf16_input);
  let results = (outs Quill_Rows:$result);
  let assemblyFormat = [{
    $input `,` $weight (`rows` $rows^)? (`bias` $bias^ `:` type($bias))?
    (`residual` $residual^ `:` type($residual))?
    (`tile` `[` $tile^ `]`)? attr-dict `:` type($input) `,`
    type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Weight rows per result element: 2 with the SwiGLU epilogue.
    int64_t getRowsPerOutput() { return getSwiglu() ? 2 : 1; }
    /// Result elements per unit of a tile (`tile [%b, %e]` counts units):
    /// one, or over a weight stored in row groups (#quill.row_groups<L>)
    /// a whole group's, L / rows per output.
    int64_t getOutputsPerUnit();
  }];
}

def Quill_LinearOp : Quill_MatVecOp<"linear"> {
  let summary = "A linear layer: `result = weight @ input (+ bias)`";
  let description = [{
    `weight` has one row per output. Inside a kernel, `tile [%b, %e]` restricts
    the op to output rows `[b, e)` and the result holds just those rows.
    Epilogues fused in: `bias %b` adds one element per weight row (Qwen2's
    Q, K and V biases), after the RMSNorm prologue's scale; `residual %r` adds `%r` to the result (the residual
    connection); `swiglu` takes a weight whose rows alternate gate and up
    rows and returns `silu(gate) * up`, half as many elements. A prologue:
    with `norm_eps`, the input is RMS-normalized first (its weight folded
    into the weight's columns): `result = (W' x) / sqrt(mean(x^2) + eps)`.
    In a batch step, `rows %n` says only the first `n` token rows of a
    [T, width] input are live: the rest of the result is left undefined
    (the runtime fills a batch of fewer than T sequences).
    With `q8_input` (a block-quantized weight, set by
    `quill-quantize-activations`), each row of the input is first rounded
    to Q8_0 blocks of 32, as llama.cpp quantizes the activations of such
    products: `d = max|x| / 127`, `q = roundeven(x * (1 / d))` (0 where `d`
    is 0), and the product runs on `d * q`, so a target may compute it as
    integer dot products of the weights' and the input's int8 values.
    With `bf16_input` (a bf16 weight), each input element is first rounded
    to bf16 (to nearest even), as llama.cpp rounds the activations of bf16
    products, so a target may multiply bf16 pairs exactly into f32 sums
    (AVX512_BF16's `vdpbf16ps`).

    ```mlir
    %q = quill.linear %h, %wq : tensor<64xf32>, tensor<64x64xf32> -> tensor<64xf32>
    ```
  }];
}

def Quill_LogitsOp : Quill_MatVecOp<"logits"> {
  let summary = "The final classifier: one logit per vocabulary entry";
  let description = [{
    Same arithmetic as `quill.linear`; kept apart because it is the step's
    output and the largest matrix, so passes and the runtime treat it apart.

    ```mlir
    %l = quill.logits %h, %wcls : tensor<64xf32>, tensor<512x64xf32> -> tensor<512xf32>
    ```
  }];
}

def Quill_ProjectQKVOp : Quill_Op<"project_qkv",
    [DeclareOpInterfaceMethods<Quill_CacheUpdateOpInterface>, Quill_TiledOpInterface,
     MemoryEffects<[MemWrite]>, AttrSizedOperandSegments,
     AllTypesMatch<["keys", "values", "new_keys", "new_values"]>]> {
  let summary = "The QKV projection with rotary embedding and the KV-cache write as epilogue";
  let description = [{
    `y = W x` (RMS-normalized first with `norm_eps`) over a weight whose rows
    are Q, then K, then V (K and V as wide as a cache row). Q and K rows are
    rotated (interleaved pairs, position `pos`, by `theta` or by the
    inverse frequencies of `freqs` and `attention_factor` as `quill.rope`
    has them), after `bias` is added to every row where there is one; the
    K and V rows are also
    written into row `pos` of `keys` and `values`. Returns `y` and the
    updated caches. Inside a kernel, `tile [%b, %e]` restricts the op to
    the pairs of rows `[b, e)`, rows `[2b, 2e)` of `y` (and the cache
    elements among them): a rotated pair is never split. `q8_input` rounds
    the input to Q8_0 blocks first, as for `quill.linear`.

    ```mlir
    %y, %k1, %v1 = quill.project_qkv %x, %w into %k, %v at %pos
        {head_dim = 8 : i64, theta = 1.0e+04 : f32}
        : tensor<64xf32>, tensor<128x64xf32>, tensor<512x32xf32> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins Quill_Vector:$input, Quill_WeightMatrix:$weight, Quill_Cache:$keys,
                       Quill_Cache:$values, Index:$pos, Optional<Quill_Vector>:$bias,
                       Optional<Quill_Vector>:$freqs, Variadic<Index>:$tile,
                       I64Attr:$head_dim, F32Attr:$theta, OptionalAttr<F32Attr>:$norm_eps,
                       OptionalAttr<F32Attr>:$attention_factor, UnitAttr:$q8_input,
                       UnitAttr:$bf16_input);
  let results = (outs Quill_Vector:$result, Quill_Cache:$new_keys, Quill_Cache:$new_values);
  let assemblyFormat = [{
    $input `,` $weight `into` $keys `,` $values `at` $pos (`bias` $bias^ `:` type($bias))?
    (`freqs` $freqs^ `:` type($freqs))? (`tile` `[` $tile^ `]`)? attr-dict
    `:` type($input) `,` type($weight) `,` type($keys) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Elements of a cache row: the width of K and of V.
    int64_t getKvWidth() { return getKeys().getType().getDimSize(1); }
    /// Rows of Q: the weight's rows less K and V.
    int64_t getQueryRows() {
      return getWeight().getType().getDimSize(0) - 2 * getKvWidth();
    }
    /// Rows per unit of a tile: a pair (rotated together), or writing a
    /// Q8_0 cache a whole block of 32 (quantized at once); over a weight
    /// stored in row groups, whole groups too.
    int64_t getRowsPerUnit();
  }];
}

def Quill_RoPEOp : Quill_Op<"rope", [Quill_TiledOpInterface, Pure, AttrSizedOperandSegments]> {
  let summary = "Rotary position embedding of interleaved pairs, per head";
  let description = [{
    For each pair `(x[2j], x[2j+1])` of the input, with `d = 2j mod head_dim`,
    rotates by the angle `pos / theta^(d / head_dim)` (llama2.c's layout);
    row t of a [T, width] input is at position `pos + t`, or at `pos[t]`
    when `pos` is a tensor of per-row positions (a batch step). With
    `rows %n` only the first n rows are live: the others are left undefined.
    Inside a kernel, `tile [%b, %e]` restricts the op to rows `[b, e)` of a
    [T, width] input.

    A RoPE scaling (linear, llama3, YaRN) replaces `1 / theta^(d /
    head_dim)` by the table `freqs` of head_dim / 2 inverse frequencies,
    pair `d / 2`'s at index `d / 2`, computed at compile time; YaRN also
    multiplies cos and sin by `attention_factor`.

    ```mlir
    %qr = quill.rope %q at %pos {head_dim = 8 : i64, theta = 1.0e+04 : f32} : tensor<64xf32>
    %kr = quill.rope %k at %pos freqs %f : tensor<4xf32> {head_dim = 8 : i64, theta = 5.0e+05 : f32}
        : tensor<32xf32>
    ```
  }];
  let arguments = (ins Quill_Rows:$input, AnyTypeOf<[Index, Quill_RowInts]>:$pos,
                       Optional<Index>:$rows, Optional<Quill_Vector>:$freqs,
                       Variadic<Index>:$tile, I64Attr:$head_dim,
                       F32Attr:$theta, OptionalAttr<F32Attr>:$attention_factor);
  let results = (outs Quill_Rows:$result);
  let assemblyFormat = [{
    $input `at` $pos (`rows` $rows^)? (`freqs` $freqs^ `:` type($freqs))?
    (`tile` `[` $tile^ `]`)? attr-dict `:` type($input)
    custom<RowPositions>(type($pos)) custom<TiledResult>(ref(type($input)), type($result))
  }];
  let hasVerifier = 1;
}

def Quill_AttentionOp : Quill_Op<"attention", [Quill_TiledOpInterface, Pure]> {
  let summary = "Multi-head attention of one query over cached positions 0..pos";
  let description = [{
    For each query head `h` (kv head `h / (num_heads / num_kv_heads)`):
    scores over cached positions `0..pos` (`0..pos + t` for row t of a
    [T, width] query: causal) scaled by `1/sqrt(head_dim)`,
    softmax, and the weighted sum of cached values. Inside a kernel,
    `tile [%b, %e]` restricts the op to kv heads `[b, e)`: the query heads
    that share them, and those rows of the result; with `tile_rows` (a
    [T, width] query) it restricts it to units `[b, e)` of (query row, kv
    head) instead, unit u being row u / num_kv_heads and the query heads of
    kv head u mod num_kv_heads: row u - b of the [e - b, width /
    num_kv_heads] result (the GPU's tiling: many more units than kv heads).

    With `window = W` (Mistral's sliding window), a query at position p
    attends to positions `max(0, p - W + 1)..p` only.

    ```mlir
    %o = quill.attention %q, %k, %v at %pos {num_heads = 8 : i64, num_kv_heads = 4 : i64}
        : tensor<64xf32>, tensor<512x32xf32>, tensor<512x32xf32> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Quill_Rows:$query, Quill_Cache:$keys,
                       Quill_Cache:$values, Index:$pos, I64Attr:$num_heads,
                       I64Attr:$num_kv_heads, Variadic<Index>:$tile, UnitAttr:$tile_rows,
                       OptionalAttr<I64Attr>:$window);
  let results = (outs Quill_Rows:$result);
  let assemblyFormat = [{
    $query `,` $keys `,` $values `at` $pos (`tile` `[` $tile^ `]`)? attr-dict
    `:` type($query) `,` type($keys) `,` type($values) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getHeadDim() {
      auto type = getQuery().getType();
      return type.getDimSize(type.getRank() - 1) / getNumHeads();
    }
  }];
}

def Quill_PagedKVWriteOp : Quill_Op<"paged_kv_write",
    [DeclareOpInterfaceMethods<Quill_CacheUpdateOpInterface>,
     AllTypesMatch<["cache", "result"]>, MemoryEffects<[MemWrite]>]> {
  let summary = "Stores each row's keys or values through its block table";
  let description = [{
    Row `t` of `rows` goes to position `p = positions[t]` of its sequence:
    block `tables[t, p / block size]`, slot `p mod block size` of the
    paged cache. Rows of one sequence share a table; the runtime makes sure
    no two sequences write the same block (copy-on-write) and points rows
    it leaves unused at a reserved block. With `live %n`, only the first n
    rows are stored (the rest are not live).

    ```mlir
    %k1 = quill.paged_kv_write %k into %kc through %tables at %positions
        : tensor<4x32xf32> into tensor<1024x16x32xf32>, tensor<4x8xi32>, tensor<4xi32>
    ```
  }];
  let arguments = (ins Quill_Matrix:$rows, Quill_BlockPool:$cache,
                       Quill_BlockTables:$tables, Quill_RowInts:$positions,
                       Optional<Index>:$live);
  let results = (outs Quill_BlockPool:$result);
  let assemblyFormat = [{
    $rows `into` $cache `through` $tables `at` $positions (`live` $live^)? attr-dict `:`
    type($rows) `into`
    type($cache) `,` type($tables) `,` type($positions)
  }];
  let hasVerifier = 1;
}

def Quill_PagedAttentionOp : Quill_Op<"paged_attention",
    [Quill_TiledOpInterface, Pure, AllTypesMatch<["keys", "values"]>]> {
  let summary = "Attention of each row over its own sequence in a paged cache";
  let description = [{
    Row `t` of `query` is one token of some sequence at position
    `positions[t]`: it attends to that sequence's positions
    `0..positions[t]`, read block by block through row `t` of `tables`
    (scores scaled by `1/sqrt(head_dim)`, softmax, weighted sum of values,
    as `quill.attention`). Rows never see each other, so a row's result
    does not depend on the rest of the batch. Inside a kernel,
    `tile [%b, %e]` restricts the op to units `[b, e)` of (row, slice of
    kv heads): with s slices of num_kv_heads / s kv heads each (the tiled
    result's rows are width / s wide), unit u is slice u mod s of row
    u / s: row u - b of the [e - b, width / s] result. With `window = W`
    a row attends to its last W positions only and never reads the blocks
    before them (the runtime may have freed them).

    ```mlir
    %o = quill.paged_attention %q, %kc, %vc through %tables at %positions
        {num_heads = 8 : i64, num_kv_heads = 4 : i64}
        : tensor<4x64xf32>, tensor<1024x16x32xf32>, tensor<4x8xi32>, tensor<4xi32> -> tensor<4x64xf32>
    ```
  }];
  let arguments = (ins Quill_Matrix:$query, Quill_BlockPool:$keys, Quill_BlockPool:$values,
                       Quill_BlockTables:$tables, Quill_RowInts:$positions,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads, Variadic<Index>:$tile,
                       OptionalAttr<I64Attr>:$window);
  let results = (outs Quill_Matrix:$result);
  let assemblyFormat = [{
    $query `,` $keys `,` $values `through` $tables `at` $positions (`tile` `[` $tile^ `]`)?
    attr-dict `:` type($query) `,` type($keys) `,` type($tables) `,` type($positions) `->`
    type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getHeadDim() { return getQuery().getType().getDimSize(1) / getNumHeads(); }
    int64_t getBlockSize() { return getKeys().getType().getDimSize(1); }
  }];
}

def Quill_AttentionPartialOp : Quill_Op<"attention_partial", [Quill_TiledOpInterface, Pure]> {
  let summary = "Attention over one chunk of cached positions, unnormalized";
  let description = [{
    Flash-decoding's first half. Unit `u = k * chunks + c` covers kv head `k`
    and cached positions `[c * chunk, min((c + 1) * chunk, pos + 1))`; row
    `u` of the result holds, for each of the kv head's query heads in turn,
    the unnormalized weighted sum of values (`head_dim` elements), the
    chunk's maximum score and its sum of `exp(score - max)`. A chunk past
    `pos` (or, with `window = W`, before `pos - W + 1`) is empty: max
    `-inf`, sum 0. Inside a kernel, `tile [%b, %e]`
    restricts the op to units `[b, e)` (rows of the result).

    ```mlir
    %p = quill.attention_partial %q, %k, %v at %pos {chunk = 256 : i64, num_heads = 32 : i64,
        num_kv_heads = 4 : i64} : tensor<2048xf32>, tensor<2048x256xf32>, tensor<2048x256xf32>
        -> tensor<32x528xf32>
    ```
  }];
  let arguments = (ins Quill_Vector:$query, Quill_Cache:$keys, Quill_Cache:$values,
                       Index:$pos, I64Attr:$num_heads, I64Attr:$num_kv_heads, I64Attr:$chunk,
                       Variadic<Index>:$tile, OptionalAttr<I64Attr>:$window);
  let results = (outs Quill_Matrix:$result);
  let assemblyFormat = [{
    $query `,` $keys `,` $values `at` $pos (`tile` `[` $tile^ `]`)? attr-dict
    `:` type($query) `,` type($keys) `,` type($values) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getHeadDim() { return getQuery().getType().getDimSize(0) / getNumHeads(); }
    int64_t getGroup() { return getNumHeads() / getNumKvHeads(); }
    int64_t getChunks() {
      int64_t context = getKeys().getType().getDimSize(0);
      return (context + getChunk() - 1) / getChunk();
    }
  }];
}

def Quill_AttentionMergeOp : Quill_Op<"attention_merge", [Quill_TiledOpInterface, Pure]> {
  let summary = "Combines the chunks of quill.attention_partial, in chunk order";
  let description = [{
    Flash-decoding's second half: for each query head, with M the largest
    chunk maximum, `out = sum_c exp(m_c - M) o_c / sum_c exp(m_c - M) l_c`,
    the chunks taken in a fixed order so the result never depends on how
    the partials were computed.

    Inside a kernel, `tile [%b, %e]` restricts the op to output elements
    `[b, e)`, each merging its own column of the chunks.

    ```mlir
    %o = quill.attention_merge %p {num_heads = 32 : i64, num_kv_heads = 4 : i64}
        : tensor<32x528xf32> -> tensor<2048xf32>
    ```
  }];
  let arguments = (ins Quill_Matrix:$partials, I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       Variadic<Index>:$tile);
  let results = (outs Quill_Vector:$result);
  let assemblyFormat = [{
    $partials (`tile` `[` $tile^ `]`)? attr-dict `:` type($partials) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Quill_SwiGLUOp : Quill_Op<"swiglu", [Pure, AllTypesMatch<["gate", "up", "result"]>]> {
  let summary = "SwiGLU activation: `silu(gate) * up`";
  let description = [{
    ```mlir
    %a = quill.swiglu %g, %u : tensor<172xf32>
    ```
  }];
  let arguments = (ins Quill_Rows:$gate, Quill_Rows:$up);
  let results = (outs Quill_Rows:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Quill_AddOp : Quill_Op<"add", [Pure, AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "Elementwise sum, the residual connection";
  let description = [{
    ```mlir
    %x1 = quill.add %x, %o : tensor<64xf32>
    ```
  }];
  let arguments = (ins Quill_Rows:$lhs, Quill_Rows:$rhs);
  let results = (outs Quill_Rows:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Schedule: what quill-outline-kernels leaves for the runtime
//===----------------------------------------------------------------------===//

def Quill_ScheduleOp : Quill_Op<"schedule", [NoTerminator, SingleBlock]> {
  let summary = "The ordered kernel launches of one step, with their memory plan";
  let description = [{
    Holds the `quill.dispatch` ops of one step in execution order. The
    attributes give the runtime its memory plan: the bytes of scratch
    (activations), of KV cache and of weights, where the logits land, and the
    byte offset of every named weight in the weight blob, and the weights
    that fusion passes pack from several named ones (`weight_packs`), and
    where the step's tensor arguments go in the runtime's input buffer
    (`inputs`, in argument order). Bindings in space `kv_pool` name a section
    of the paged KV cache (offset `2 * layer` for keys, `+ 1` for values;
    bytes: one block of it); the runtime places the sections.
    `weight_encodings` names the encoding of every weight not stored as f32
    ("q8_0", ...), so that the artifact's weights are written in it, and
    `weight_row_groups` the rows per group of those stored in row groups
    (`#quill.row_groups`).
  }];
  let arguments = (ins StrAttr:$name, I64Attr:$scratch_bytes,
                       I64Attr:$kv_bytes, I64Attr:$weight_bytes,
                       Quill_BindingAttr:$logits,
                       DictionaryAttr:$weight_offsets,
                       OptionalAttr<TypedArrayAttrBase<Quill_WeightPackAttr,
                                    "packed weights">>:$weight_packs,
                       OptionalAttr<TypedArrayAttrBase<Quill_BindingAttr,
                                    "step inputs">>:$inputs,
                       OptionalAttr<DictionaryAttr>:$weight_encodings,
                       OptionalAttr<DictionaryAttr>:$weight_row_groups);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$name attr-dict-with-keyword $body";
}

def Quill_DispatchOp : Quill_Op<"dispatch", [HasParent<"ScheduleOp">]> {
  let summary = "Launches a kernel over `work` units in chunks of `grain`";
  let description = [{
    The runtime calls `kernel(bindings, token, pos, begin, end)` for disjoint
    ranges `[begin, end)` covering `[0, work)`, each a multiple of `grain`
    long except the last, possibly in parallel. Results do not depend on how
    the range is split. With `live_rows = k` (batch step) the units are k
    per token row, in row order, and only the live rows' run:
    `[0, min(work, k * rows))`. `writes` lists
    the bindings the kernel writes (the others it only reads; without it,
    every binding counts as written): the runtime runs consecutive
    dispatches that do not touch each other's writes concurrently.

    ```mlir
    quill.dispatch @linear_64x64([#quill.binding<"scratch", 0, 256>, ...]) work(64, 8)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel,
                       TypedArrayAttrBase<Quill_BindingAttr, "bindings">:$bindings,
                       I64Attr:$work, I64Attr:$grain, OptionalAttr<I64Attr>:$live_rows,
                       OptionalAttr<DenseI64ArrayAttr>:$writes);
  let assemblyFormat = [{
    $kernel `(` $bindings `)` `work` `(` $work `,` $grain `)` (`writes` $writes^)? attr-dict
  }];
  let hasVerifier = 1;
}

#endif // QUILL_OPS_TD
