// RUN: quill-opt %s --quill-cuda-split-units --quill-outline-kernels | FileCheck %s
// RUN: quill-opt %s --quill-outline-kernels | FileCheck %s --check-prefix=HEADS

// quill-cuda-split-units (the GPU's tiling), read by quill-outline-kernels: attention over T query rows takes
// (query row, kv head) pairs as its units (one per GPU thread or warp; kv
// heads alone are few): 4 rows x 2 kv heads. A unit's output, the query
// heads of one kv head in one row, is a row of the [4, 8] result viewed as
// [8, 4]; the kernel writes units [b, e) through a subview of that view.
// CHECK: quill.dispatch @attention_4x8_32x4_32x4({{.*}}) work(8, 1)
// CHECK-LABEL: func.func @attention_4x8_32x4_32x4(
// CHECK-SAME: %{{[a-z0-9]+}}: memref<32x4xf32>, %[[OUT:[a-z0-9]+]]: memref<4x8xf32>, %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: index, %[[B:[a-z0-9]+]]: index, %[[E:[a-z0-9]+]]: index)
// CHECK: %[[SPLIT:.*]] = memref.expand_shape %[[OUT]] {{\[}}[0], [1, 2]] output_shape [4, 2, 4] : memref<4x8xf32> into memref<4x2x4xf32>
// CHECK: %[[UNITS:.*]] = memref.collapse_shape %[[SPLIT]] {{\[}}[0, 1], [2]] : memref<4x2x4xf32> into memref<8x4xf32>
// CHECK: memref.subview %[[UNITS]][%{{.*}}, 0] [%{{.*}}, 4] [1, 1] : memref<8x4xf32>
// CHECK: quill.attention {{.*}} tile[%[[B]], %[[E]]] {num_heads = 4 : i64, num_kv_heads = 2 : i64, tile_rows} : {{.*}} -> tensor<?x4xf32>
// Without it (the CPU's): kv heads, each over every row.
// HEADS: quill.dispatch @attention_4x8_32x4_32x4({{.*}}) work(2, 1)
// HEADS-NOT: tile_rows
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %l = quill.logits %x, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
func.func @prefill(%tokens: tensor<4xi32>, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embeddings %emb[%tokens] : tensor<16x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  %kc = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
  %vc = quill.kv_cache "value" layer 0 : tensor<32x4xf32>
  %att = quill.attention %x, %kc, %vc at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<4x8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<4x8xf32>
  %last = quill.row %att[3] : tensor<4x8xf32> -> tensor<8xf32>
  %l = quill.logits %last, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
