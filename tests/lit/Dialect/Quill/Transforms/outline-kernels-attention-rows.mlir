// RUN: quill-opt %s --quill-outline-kernels="attention-rows=1" | FileCheck %s
// RUN: quill-opt %s --quill-outline-kernels | FileCheck %s --check-prefix=HEADS

// attention-rows (the GPU's tiling): attention over T query rows takes rows
// as its units (one per GPU thread; kv heads are few), every head of them:
// the kernel writes rows [b, e) through a row subview.
// CHECK: quill.dispatch @attention_4x8_32x4_32x4({{.*}}) work(4, 1)
// CHECK-LABEL: func.func @attention_4x8_32x4_32x4(
// CHECK-SAME: %[[B:[a-z0-9]+]]: index, %[[E:[a-z0-9]+]]: index)
// CHECK: memref.subview %{{.*}}[%{{.*}}, 0] [%{{.*}}, 8] [1, 1] : memref<4x8xf32>
// CHECK: quill.attention {{.*}} tile[%[[B]], %[[E]]] {num_heads = 4 : i64, num_kv_heads = 2 : i64, tile_rows} : {{.*}} -> tensor<?x8xf32>
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
