// Types of the quill dialect: the block-quantized weight encodings GGUF
// defines, as element types of weight tensors.
#ifndef QUILL_TYPES_TD
#define QUILL_TYPES_TD

include "dialects/Quill/IR/QuillBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

// A weight element type that stores its values in blocks of `elements`
// consecutive weights of a row, `bytes` each: the scales and the quantized
// values together, exactly as GGUF lays them out (ggml's block structs).
class Quill_BlockType<string name, string typeMnemonic, int elements, int bytes,
                      string layout>
    : Quill_Type<name, typeMnemonic> {
  let summary = "GGUF " # name # " blocks: " # elements # " weights in " # bytes # " bytes";
  let description = layout;
  let extraClassDeclaration = [{
    static constexpr int64_t kBlockElements = }] # elements # [{;
    static constexpr int64_t kBlockBytes = }] # bytes # [{;
  }];
}

def Quill_Q8_0 : Quill_BlockType<"Q8_0", "q8_0", 32, 34, [{
  An fp16 scale `d`, then 32 int8 values `q`: weight i is `d * q[i]`.

  ```mlir
  %w = quill.weight "layers.0.wq" : tensor<64x64x!quill.q8_0>
  ```
}]>;

def Quill_Q4_0 : Quill_BlockType<"Q4_0", "q4_0", 32, 18, [{
  An fp16 scale `d`, then 16 bytes of 4-bit values: weight j (j < 16) is the
  low nibble of byte j, weight j + 16 its high nibble; a weight is
  `d * (nibble - 8)`.
}]>;

def Quill_Q4_K : Quill_BlockType<"Q4_K", "q4_k", 256, 144, [{
  A super-block of 8 sub-blocks of 32: fp16 `d` and `dmin`, 12 bytes of
  6-bit sub-block scales and mins (packed as ggml's get_scale_min_k4
  reads them), then 128 bytes of 4-bit values (each 64 weights: 32 low
  nibbles, then the 32 high nibbles of the same bytes). A weight is
  `d * scale * q - dmin * min` of its sub-block.
}]>;

def Quill_Q6_K : Quill_BlockType<"Q6_K", "q6_k", 256, 210, [{
  A super-block of 16 sub-blocks of 16: 128 bytes of the low 4 bits, 64
  bytes of the high 2 bits, 16 int8 sub-block scales, then an fp16 `d`. A
  weight is `d * scale * (q - 32)`, q in [0, 64).
}]>;

// The element types a weight matrix may have: plain floats, or blocks.
def Quill_WeightElement : AnyTypeOf<[F32, F16, BF16, Quill_Q8_0, Quill_Q4_0, Quill_Q4_K,
                                     Quill_Q6_K]>;
// A weight matrix [rows, columns] in any of them; columns are logical
// weights, a whole number of blocks.
def Quill_WeightMatrix
    : AnyTypeOf<[2DTensorOf<[F32, F16, BF16, Quill_Q8_0, Quill_Q4_0, Quill_Q4_K, Quill_Q6_K]>],
                "weight matrix of f32, f16, bf16 or GGUF blocks", "::mlir::TensorType">;

// One layer's keys or values: [context, kv width], in the compile-time KV
// type (--kv-type); attention widens what it reads to f32. A Q8_0 cache
// holds each row in blocks of 32 that never straddle two heads.
def Quill_Cache : 2DTensorOf<[F32, F16, BF16, Quill_Q8_0]>;
// A paged KV cache section: [blocks, block size, kv width]. The block count
// is a bound, not the allocation: the runtime sizes the pool.
def Quill_BlockPool : 3DTensorOf<[F32, F16, BF16, Quill_Q8_0]>;
// The bytes behind a kernel's block-quantized weight or Q8_0 cache: one row
// of bytes per row of the typed tensor.
def Quill_StorageBytes : TensorRankOf<[I8], [2, 3]>;

#endif // QUILL_TYPES_TD
