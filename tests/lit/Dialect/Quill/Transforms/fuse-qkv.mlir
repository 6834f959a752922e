// RUN: quill-opt %s -split-input-file --quill-fuse-qkv | FileCheck %s

// Q, K and V read one input: one linear over the concatenated weights,
// split by slice views, placed where the first projection was.
// CHECK-LABEL: func.func @fires
// CHECK-SAME: (%[[H:[^:]*]]: tensor<8xf32>,
// CHECK-DAG: %[[WQ:.*]] = quill.weight "wq" : tensor<8x8xf32>
// CHECK-DAG: %[[WK:.*]] = quill.weight "wk" : tensor<4x8xf32>
// CHECK-DAG: %[[WV:.*]] = quill.weight "wv" : tensor<4x8xf32>
// CHECK: %[[P:.*]] = quill.concat %[[WQ]], %[[WK]], %[[WV]] : (tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
// CHECK: %[[Y:.*]] = quill.linear %[[H]], %[[P]] : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
// CHECK: %[[Q:.*]] = quill.slice %[[Y]][0] : tensor<16xf32> -> tensor<8xf32>
// CHECK: %[[K:.*]] = quill.slice %[[Y]][8] : tensor<16xf32> -> tensor<4xf32>
// CHECK: %[[V:.*]] = quill.slice %[[Y]][12] : tensor<16xf32> -> tensor<4xf32>
// CHECK: %[[QR:.*]] = quill.rope %[[Q]]
// CHECK: return %[[QR]], %[[K]], %[[V]]
func.func @fires(%h: tensor<8xf32>, %pos: index) -> (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %wq = quill.weight "wq" : tensor<8x8xf32>
  %q = quill.linear %h, %wq : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %qr = quill.rope %q at %pos {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<8xf32>
  %wk = quill.weight "wk" : tensor<4x8xf32>
  %k = quill.linear %h, %wk : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %wv = quill.weight "wv" : tensor<4x8xf32>
  %v = quill.linear %h, %wv : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  return %qr, %k, %v : tensor<8xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Must not fire: one linear per input, nothing to share.
// CHECK-LABEL: func.func @lonely
// CHECK-NOT: quill.concat
// CHECK-NOT: quill.slice
// CHECK: quill.linear %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8x8xf32>
// CHECK: quill.linear %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8x8xf32>
func.func @lonely(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %w = quill.weight "w" : tensor<8x8xf32>
  %x = quill.linear %a, %w : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %y = quill.linear %b, %w : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  return %x, %y : tensor<8xf32>, tensor<8xf32>
}

// -----

// Biased projections (Qwen2) pack their biases too, in the same order; the
// fused linear keeps them as its epilogue.
// CHECK-LABEL: func.func @biases
// CHECK-DAG: %[[BQ:.*]] = quill.weight "bq" : tensor<8xf32>
// CHECK-DAG: %[[BK:.*]] = quill.weight "bk" : tensor<4xf32>
// CHECK-DAG: %[[BV:.*]] = quill.weight "bv" : tensor<4xf32>
// CHECK: %[[P:.*]] = quill.concat %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
// CHECK: %[[B:.*]] = quill.concat %[[BQ]], %[[BK]], %[[BV]] : (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<16xf32>
// CHECK: quill.linear %{{.*}}, %[[P]] bias %[[B]] : tensor<16xf32> : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
func.func @biases(%h: tensor<8xf32>) -> (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %wq = quill.weight "wq" : tensor<8x8xf32>
  %bq = quill.weight "bq" : tensor<8xf32>
  %q = quill.linear %h, %wq bias %bq : tensor<8xf32> : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %wk = quill.weight "wk" : tensor<4x8xf32>
  %bk = quill.weight "bk" : tensor<4xf32>
  %k = quill.linear %h, %wk bias %bk : tensor<4xf32> : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %wv = quill.weight "wv" : tensor<4x8xf32>
  %bv = quill.weight "bv" : tensor<4xf32>
  %v = quill.linear %h, %wv bias %bv : tensor<4xf32> : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  return %q, %k, %v : tensor<8xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Must not fire across biased and unbiased layers: a packed layer has a
// bias for every row or none.
// CHECK-LABEL: func.func @mixed_biases
// CHECK-NOT: quill.concat
func.func @mixed_biases(%h: tensor<8xf32>) -> (tensor<8xf32>, tensor<4xf32>) {
  %wq = quill.weight "wq" : tensor<8x8xf32>
  %bq = quill.weight "bq" : tensor<8xf32>
  %q = quill.linear %h, %wq bias %bq : tensor<8xf32> : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %wk = quill.weight "wk" : tensor<4x8xf32>
  %k = quill.linear %h, %wk : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  return %q, %k : tensor<8xf32>, tensor<4xf32>
}
