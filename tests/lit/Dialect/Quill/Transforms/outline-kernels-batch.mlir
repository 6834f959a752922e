// RUN: quill-opt %s --quill-outline-kernels | FileCheck %s

// The batch step: its tokens, positions and block tables go one after the
// other into the input buffer (listed as the schedule's inputs); the paged
// caches bind sections of the runtime's pool (2 * layer + kind, one block's
// bytes); the paged write updates the pool in place (no result binding;
// `writes` names the pool binding); paged attention is split over slices of
// the live token rows' kv heads (here 2 per row: `live_rows = 2`), the norm
// over its live rows; the index arguments (rows, logit rows) become the
// kernels' two scalar parameters.
// CHECK: quill.schedule "batch"
// CHECK-SAME: inputs = [#quill.binding<"input", 0, 16>, #quill.binding<"input", 64, 16>, #quill.binding<"input", 128, 32>]
// CHECK: quill.dispatch @embeddings_16x8_4([#quill.binding<"weights", 0, 512>, #quill.binding<"input", 0, 16>, #quill.binding<"scratch", 0, 128>])
// CHECK: quill.dispatch @paged_kv_write_4x8_64x4x8_4x2_4([#quill.binding<"scratch", 0, 128>, #quill.binding<"kv_pool", 0, 128>, #quill.binding<"input", 128, 32>, #quill.binding<"input", 64, 16>]) work(1, 1) writes [1]
// CHECK: quill.dispatch @paged_kv_write_4x8_64x4x8_4x2_4([#quill.binding<"scratch", 0, 128>, #quill.binding<"kv_pool", 1, 128>, #quill.binding<"input", 128, 32>, #quill.binding<"input", 64, 16>]) work(1, 1) writes [1]
// CHECK: quill.dispatch @paged_attention_{{.*}} work(8, 1) writes [5] {live_rows = 2 : i64}
// The norm over live rows is split by rows, the live ones only.
// CHECK: quill.dispatch @rmsnorm_4x8_8({{.*}}) work(4, 1) writes [2] {live_rows = 1 : i64}
// CHECK: quill.dispatch @logits_4x8_16x8
// CHECK: func.func @paged_kv_write_4x8_64x4x8_4x2_4(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<64x4x8xf32>, %{{.*}}: memref<4x2xi32>, %{{.*}}: memref<4xi32>, %[[LIVE:[^:]+]]: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
// CHECK: quill.paged_kv_write {{.*}} live %[[LIVE]]
// CHECK: func.func @paged_attention_{{.*}}(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<64x4x8xf32>, %{{.*}}: memref<64x4x8xf32>, %{{.*}}: memref<4x2xi32>, %{{.*}}: memref<4xi32>, %{{.*}}: memref<4x8xf32>
// CHECK: func.func @rmsnorm_4x8_8(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<4x8xf32>, %[[NLIVE:[^:]+]]: index, %{{.*}}: index, %[[BEGIN:[^:]+]]: index, %[[END:[^:]+]]: index)
// CHECK: quill.rmsnorm {{.*}} rows %[[NLIVE]] tile[%[[BEGIN]], %[[END]]]
// The logits kernel reads the logit rows from the second scalar parameter.
// CHECK: func.func @logits_4x8_16x8(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<16x8xf32>, %{{.*}}: memref<4x16xf32>, %{{.*}}: index, %[[LOGITROWS:[^:]+]]: index, %{{.*}}: index, %{{.*}}: index)
// CHECK: quill.logits %{{.*}}, %{{.*}} rows %[[LOGITROWS]] tile[
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %l = quill.logits %x, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
func.func @batch(%tokens: tensor<4xi32>, %positions: tensor<4xi32>, %tables: tensor<4x2xi32>,
                 %rows: index, %logit_rows: index) -> tensor<4x16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embeddings %emb[%tokens] : tensor<16x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  %kc = quill.kv_cache "key" layer 0 : tensor<64x4x8xf32>
  %vc = quill.kv_cache "value" layer 0 : tensor<64x4x8xf32>
  %kc1 = quill.paged_kv_write %x into %kc through %tables at %positions live %rows
      : tensor<4x8xf32> into tensor<64x4x8xf32>, tensor<4x2xi32>, tensor<4xi32>
  %vc1 = quill.paged_kv_write %x into %vc through %tables at %positions live %rows
      : tensor<4x8xf32> into tensor<64x4x8xf32>, tensor<4x2xi32>, tensor<4xi32>
  %a = quill.paged_attention %x, %kc1, %vc1 through %tables at %positions
      {num_heads = 2 : i64, num_kv_heads = 2 : i64}
      : tensor<4x8xf32>, tensor<64x4x8xf32>, tensor<4x2xi32>, tensor<4xi32> -> tensor<4x8xf32>
  %nw = quill.weight "norm" : tensor<8xf32>
  %n = quill.rmsnorm %a, %nw rows %rows {eps = 1.0e-05 : f32} : tensor<4x8xf32>, tensor<8xf32>
  %l = quill.logits %n, %emb rows %logit_rows : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %l : tensor<4x16xf32>
}
