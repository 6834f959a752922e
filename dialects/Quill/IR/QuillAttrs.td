// Attributes of the quill dialect.
#ifndef QUILL_ATTRS_TD
#define QUILL_ATTRS_TD

include "dialects/Quill/IR/QuillBase.td"

def Quill_BindingAttr : Quill_Attr<"Binding", "binding"> {
  let summary = "A byte range of one runtime memory space bound to a kernel argument";
  let description = [{
    Names where a kernel argument lives at run time: `space` is one of
    `weights` (the artifact's mapped weight blob), `kv` (the KV cache of
    one sequence), `scratch` (activations), `input` (what the runtime
    writes before a step: token ids, positions, block tables) or `kv_pool`
    (the paged KV cache: `offset` is a section number, `bytes` the size of
    one block of it); otherwise `offset` and `bytes` delimit the range.

    Example: `#quill.binding<"weights", 4096, 16384>`
  }];
  let parameters = (ins StringRefParameter<"memory space">:$space,
                        "int64_t":$offset, "int64_t":$bytes);
  let assemblyFormat = "`<` $space `,` $offset `,` $bytes `>`";
}

def Quill_WeightPackAttr : Quill_Attr<"WeightPack", "weight_pack"> {
  let summary = "A weight the compiler packs from named weights, and where it lies";
  let description = [{
    Placed at byte `offset` of the weight blob: the rows of the weights named
    in `parts`, either one after another (`layout = "concat"`) or alternating
    row by row (`"interleave"`, so a tile of rows holds matching rows of
    every part). Written by fusion passes; executed when the artifact's
    weights are laid out.

    With `scale`, every row's columns are multiplied by the named vector
    (an RMSNorm weight folded into the layer that follows it).

    With `row_groups L`, the pack's rows are stored in groups of L
    (`#quill.row_groups`).

    Example: `#quill.weight_pack<4096, "concat", ["l.wq", "l.wk", "l.wv"] scale "l.attention_norm">`
  }];
  let parameters = (ins "int64_t":$offset, StringRefParameter<"layout">:$layout,
                        "::mlir::ArrayAttr":$parts,
                        OptionalParameter<"::mlir::StringAttr">:$scale,
                        DefaultValuedParameter<"int64_t", "0">:$row_groups);
  let assemblyFormat = [{
    `<` $offset `,` $layout `,` $parts (`scale` $scale^)? (`row_groups` $row_groups^)? `>`
  }];
}

def Quill_RowGroupsAttr : Quill_Attr<"RowGroups", "row_groups"> {
  let summary = "A block-quantized weight stored in interleaved groups of rows";
  let description = [{
    The encoding of a Q8_0, Q4_0, Q4_K or Q6_K weight matrix (`tensor<R x C
    x !quill.q8_0, #quill.row_groups<16>>`) whose rows are stored in groups
    of `lanes` consecutive rows, each group where its rows would lie and as
    many bytes, so that an int8 kernel reads a block (Q4_K, Q6_K: a
    super-block) of all the group's rows as whole vectors: no transposes, no
    horizontal sums. For block b of a group:
    - the `lanes` rows' f16 block scales, row 0 first: Q8_0's and Q4_0's
      (the block's first two bytes) and Q6_K's d (its last two); Q4_K has
      none here (its d and dmin are its word 0);
    - then, for each 4-byte word j of the rest of the block (8 for Q8_0, 4
      for Q4_0, 36 for Q4_K, 52 for Q6_K), that word of each row, row 0
      first: lane r of vector j. The words are in the file's order, except
      Q6_K's, which lie in the order decode reads them (RowGroupLayout.h):
      its 4 words of scales, then for each half h (0, 1) and j < 8 the
      file's ql word 16h + j, ql word 16h + 8 + j and qh word 32 + 8h + j.
    Q8_0's quants are stored with their sign bits flipped (q + 128, the
    unsigned bytes `vpdpbusd` multiplies); the other types' bytes are as in
    the file. Lossless; the artifact's writer rearranges the bytes, the CPU
    target's int8 kernels read them (`quill-cpu-group-weight-rows`).

    Example: `tensor<64x64x!quill.q8_0, #quill.row_groups<16>>`
  }];
  let parameters = (ins "int64_t":$lanes);
  let assemblyFormat = "`<` $lanes `>`";
}

#endif // QUILL_ATTRS_TD
