// Regression: two references to one (kind, layer) cache with different shapes
// are diagnosed instead of being bound past the end of the KV memory.
// RUN: not quill-opt %s --quill-outline-kernels 2>&1 | FileCheck %s

// CHECK: error:
func.func @step(%token: index, %pos: index) -> tensor<8xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %k0 = quill.kv_cache "key" layer 0 : tensor<4x8xf32>
  %k1 = quill.kv_cache "key" layer 0 : tensor<64x8xf32>
  %w0 = quill.kv_write %x into %k0 at %pos : tensor<8xf32> into tensor<4x8xf32>
  %w1 = quill.kv_write %x into %k1 at %pos : tensor<8xf32> into tensor<64x8xf32>
  return %x : tensor<8xf32>
}
