// RUN: quill-opt %s --quill-outline-kernels | FileCheck %s

// A decode step and a prefill step share weights and caches (same offsets)
// but not scratch; the prefill's token ids are bound to the input buffer;
// quill.row is a view of its rows (no kernel); tiled rank-2 kernels write
// columns [b, e) of every row through a 2-D subview.
// CHECK: quill.schedule "step"
// CHECK-SAME: kv_bytes = 1024
// CHECK: quill.schedule "prefill"
// CHECK-SAME: kv_bytes = 1024
// CHECK: quill.dispatch @embeddings_16x8_4([#quill.binding<"weights", 0, 512>, #quill.binding<"input", 0, 16>, #quill.binding<"scratch", 0, 128>])
// CHECK: quill.dispatch @kv_write_4x8_32x8([#quill.binding<"scratch", 0, 128>, #quill.binding<"kv", 0, 1024>])
// The last row (index 3) of scratch 0..128 is at 96.
// CHECK: quill.dispatch @logits_8_16x8([#quill.binding<"scratch", 96, 32>, #quill.binding<"weights", 0, 512>
// CHECK-NOT: quill.dispatch @row
// CHECK: func.func @logits_8_16x8(
// CHECK: func.func @embeddings_16x8_4(%{{.*}}: memref<16x8xf32>, %{{.*}}: memref<4xi32>, %{{.*}}: memref<4x8xf32>
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %kc = quill.kv_cache "key" layer 0 : tensor<32x8xf32>
  %kc1 = quill.kv_write %x into %kc at %pos : tensor<8xf32> into tensor<32x8xf32>
  %l = quill.logits %x, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
func.func @prefill(%tokens: tensor<4xi32>, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embeddings %emb[%tokens] : tensor<16x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  %kc = quill.kv_cache "key" layer 0 : tensor<32x8xf32>
  %kc1 = quill.kv_write %x into %kc at %pos : tensor<4x8xf32> into tensor<32x8xf32>
  %last = quill.row %x[3] : tensor<4x8xf32> -> tensor<8xf32>
  %l = quill.logits %last, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
