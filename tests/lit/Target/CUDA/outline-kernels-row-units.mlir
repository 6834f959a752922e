// RUN: quill-opt %s --quill-cuda-split-units --quill-outline-kernels | FileCheck %s
// RUN: quill-opt %s --quill-outline-kernels | FileCheck %s --check-prefix=WHOLE

// quill-cuda-split-units (the GPU's tiling), read by quill-outline-kernels: what the CPU runs as one unit gets one unit
// per token row (a prefill's embeddings, rope, kv_write) or per output
// element (attention_merge), so a GPU spreads it over threads.
// CHECK: quill.schedule "step"
// CHECK: quill.dispatch @embedding_16x8({{.*}}) work(8, 1)
// CHECK: quill.dispatch @attention_merge_8x6({{.*}}) work(8, 1)
// CHECK: quill.dispatch @rmsnorm_8_8({{.*}}) work(8, 1)
// CHECK: quill.schedule "prefill"
// CHECK: quill.dispatch @embeddings_16x8_4({{.*}}) work(4, 1)
// CHECK: quill.dispatch @rope_4x8({{.*}}) work(4, 1)
// CHECK: quill.dispatch @kv_write_4x8_32x8({{.*}}) work(4, 1) writes [1]

// The decode embedding and a vector's RMSNorm: elements [b, e).
// CHECK-LABEL: func.func @embedding_16x8(
// CHECK: quill.embedding %{{.*}}[%{{.*}}] tile[%{{.*}}, %{{.*}}] : tensor<16x8xf32> -> tensor<?xf32>

// A merge kernel writes elements [b, e) through a subview.
// CHECK-LABEL: func.func @attention_merge_8x6(
// CHECK-SAME: %[[MB:[a-z0-9]+]]: index, %[[ME:[a-z0-9]+]]: index)
// CHECK: memref.subview %{{.*}}[%{{.*}}] [%{{.*}}] [1] : memref<8xf32>
// CHECK: quill.attention_merge %{{.*}} tile[%[[MB]], %[[ME]]] {{.*}} -> tensor<?xf32>
// CHECK-LABEL: func.func @rmsnorm_8_8(
// CHECK: quill.rmsnorm %{{.*}}, %{{.*}} tile[%{{.*}}, %{{.*}}] {eps = {{.*}}} : tensor<8xf32>, tensor<8xf32> -> tensor<?xf32>

// Token rows [b, e) of the embeddings and the rotary embedding.
// CHECK-LABEL: func.func @embeddings_16x8_4(
// CHECK-SAME: %[[EB:[a-z0-9]+]]: index, %[[EE:[a-z0-9]+]]: index)
// CHECK: memref.subview %{{.*}}[%{{.*}}, 0] [%{{.*}}, 8] [1, 1] : memref<4x8xf32>
// CHECK: quill.embeddings %{{.*}}[%{{.*}}] tile[%[[EB]], %[[EE]]] : {{.*}} -> tensor<?x8xf32>
// CHECK-LABEL: func.func @rope_4x8(
// CHECK: quill.rope %{{.*}} at %{{.*}} tile[%{{.*}}, %{{.*}}] {{.*}} -> tensor<?x8xf32>

// The cache write stays in place: its result is the whole cache, and rows
// [b, e) of the chunk go to it.
// CHECK-LABEL: func.func @kv_write_4x8_32x8(
// CHECK-SAME: %[[KB:[a-z0-9]+]]: index, %[[KE:[a-z0-9]+]]: index)
// CHECK-NOT: memref.subview
// CHECK: quill.kv_write %{{.*}} into %{{.*}} at %{{.*}} tile[%[[KB]], %[[KE]]] : tensor<4x8xf32> into tensor<32x8xf32>

// Without it (the CPU's): one unit each.
// WHOLE: quill.dispatch @embedding_16x8({{.*}}) work(1, 1)
// WHOLE: quill.dispatch @attention_merge_8x6({{.*}}) work(1, 1)
// WHOLE: quill.dispatch @rmsnorm_8_8({{.*}}) work(1, 1)
// WHOLE: quill.dispatch @embeddings_16x8_4({{.*}}) work(1, 1)
// WHOLE: quill.dispatch @rope_4x8({{.*}}) work(1, 1)
// WHOLE: quill.dispatch @kv_write_4x8_32x8({{.*}}) work(1, 1)
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %p = quill.weight "partials" : tensor<8x6xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %m = quill.attention_merge %p {num_heads = 2 : i64, num_kv_heads = 2 : i64}
      : tensor<8x6xf32> -> tensor<8xf32>
  %nw = quill.weight "norm" : tensor<8xf32>
  %s = quill.add %m, %x : tensor<8xf32>
  %n = quill.rmsnorm %s, %nw {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<8xf32>
  %l = quill.logits %n, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
func.func @prefill(%tokens: tensor<4xi32>, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embeddings %emb[%tokens] : tensor<16x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  %r = quill.rope %x at %pos {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<4x8xf32>
  %kc = quill.kv_cache "key" layer 0 : tensor<32x8xf32>
  %k1 = quill.kv_write %r into %kc at %pos : tensor<4x8xf32> into tensor<32x8xf32>
  %last = quill.row %r[3] : tensor<4x8xf32> -> tensor<8xf32>
  %l = quill.logits %last, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
