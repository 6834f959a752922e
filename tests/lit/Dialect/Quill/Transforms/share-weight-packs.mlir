// RUN: quill-opt %s -split-input-file --quill-share-weight-packs | FileCheck %s

// The decode step packs Q, K and V (Q8_0 blocks); the prefill step's three
// projections read their rows of that pack, and its own weights go.
// CHECK-LABEL: func.func @step
// CHECK: quill.concat %{{.*}}, %{{.*}}, %{{.*}} : (tensor<64x64x!quill.q8_0>, tensor<32x64x!quill.q8_0>, tensor<32x64x!quill.q8_0>) -> tensor<128x64x!quill.q8_0>
// CHECK-NOT: quill.slice
// CHECK-LABEL: func.func @prefill
// CHECK-DAG: %[[WQ:.*]] = quill.weight "wq" : tensor<64x64x!quill.q8_0>
// CHECK-DAG: %[[WK:.*]] = quill.weight "wk" : tensor<32x64x!quill.q8_0>
// CHECK-DAG: %[[WV:.*]] = quill.weight "wv" : tensor<32x64x!quill.q8_0>
// CHECK: %[[P:.*]] = quill.concat %[[WQ]], %[[WK]], %[[WV]] : {{.*}} -> tensor<128x64x!quill.q8_0>
// CHECK-DAG: %[[Q:.*]] = quill.slice %[[P]][0] : tensor<128x64x!quill.q8_0> -> tensor<64x64x!quill.q8_0>
// CHECK-DAG: %[[K:.*]] = quill.slice %[[P]][64] : tensor<128x64x!quill.q8_0> -> tensor<32x64x!quill.q8_0>
// CHECK-DAG: %[[V:.*]] = quill.slice %[[P]][96] : tensor<128x64x!quill.q8_0> -> tensor<32x64x!quill.q8_0>
// CHECK: quill.linear %{{.*}}, %[[Q]] :
// CHECK: quill.linear %{{.*}}, %[[K]] :
// CHECK: quill.linear %{{.*}}, %[[V]] :
// CHECK-NOT: quill.weight
// CHECK: return
func.func @step(%h: tensor<64xf32>) -> tensor<128xf32> {
  %wq = quill.weight "wq" : tensor<64x64x!quill.q8_0>
  %wk = quill.weight "wk" : tensor<32x64x!quill.q8_0>
  %wv = quill.weight "wv" : tensor<32x64x!quill.q8_0>
  %p = quill.concat %wq, %wk, %wv : (tensor<64x64x!quill.q8_0>, tensor<32x64x!quill.q8_0>, tensor<32x64x!quill.q8_0>) -> tensor<128x64x!quill.q8_0>
  %y = quill.linear %h, %p : tensor<64xf32>, tensor<128x64x!quill.q8_0> -> tensor<128xf32>
  return %y : tensor<128xf32>
}
func.func @prefill(%h: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x32xf32>, tensor<4x32xf32>) {
  %wq = quill.weight "wq" : tensor<64x64x!quill.q8_0>
  %q = quill.linear %h, %wq : tensor<4x64xf32>, tensor<64x64x!quill.q8_0> -> tensor<4x64xf32>
  %wk = quill.weight "wk" : tensor<32x64x!quill.q8_0>
  %k = quill.linear %h, %wk : tensor<4x64xf32>, tensor<32x64x!quill.q8_0> -> tensor<4x32xf32>
  %wv = quill.weight "wv" : tensor<32x64x!quill.q8_0>
  %v = quill.linear %h, %wv : tensor<4x64xf32>, tensor<32x64x!quill.q8_0> -> tensor<4x32xf32>
  return %q, %k, %v : tensor<4x64xf32>, tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// A folded RMSNorm: the prefill step's one-part scaled packs become rows of
// the decode step's pack with the same scale; biases, rows of its packed
// bias.
// CHECK-LABEL: func.func @prefill
// CHECK-DAG: %[[P:.*]] = quill.concat %{{.*}}, %{{.*}} scale %{{.*}} : tensor<8xf32> : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<12x8xf32>
// CHECK-DAG: %[[K:.*]] = quill.slice %[[P]][8] : tensor<12x8xf32> -> tensor<4x8xf32>
// CHECK-DAG: %[[B:.*]] = quill.concat %{{.*}}, %{{.*}} : (tensor<8xf32>, tensor<4xf32>) -> tensor<12xf32>
// CHECK-DAG: %[[BK:.*]] = quill.slice %[[B]][8] : tensor<12xf32> -> tensor<4xf32>
// CHECK: quill.linear %{{.*}}, %[[K]] bias %[[BK]] : tensor<4xf32> {norm_eps = {{.*}}} : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
func.func @step(%x: tensor<8xf32>) -> tensor<12xf32> {
  %g = quill.weight "g" : tensor<8xf32>
  %wq = quill.weight "wq" : tensor<8x8xf32>
  %wk = quill.weight "wk" : tensor<4x8xf32>
  %bq = quill.weight "bq" : tensor<8xf32>
  %bk = quill.weight "bk" : tensor<4xf32>
  %p = quill.concat %wq, %wk scale %g : tensor<8xf32> : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<12x8xf32>
  %b = quill.concat %bq, %bk : (tensor<8xf32>, tensor<4xf32>) -> tensor<12xf32>
  %y = quill.linear %x, %p bias %b : tensor<12xf32> : tensor<8xf32>, tensor<12x8xf32> -> tensor<12xf32>
  return %y : tensor<12xf32>
}
func.func @prefill(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %g = quill.weight "g" : tensor<8xf32>
  %wk = quill.weight "wk" : tensor<4x8xf32>
  %bk = quill.weight "bk" : tensor<4xf32>
  %p = quill.concat %wk scale %g : tensor<8xf32> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = quill.linear %x, %p bias %bk : tensor<4xf32> {norm_eps = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
  return %k : tensor<2x4xf32>
}

// -----

// Must not fire: the scales differ (the unscaled rows are not those bytes),
// and interleaved packs have no contiguous part.
// CHECK-LABEL: func.func @prefill
// CHECK-NOT: quill.slice
func.func @step(%x: tensor<8xf32>) -> (tensor<12xf32>, tensor<4xf32>) {
  %g = quill.weight "g" : tensor<8xf32>
  %wq = quill.weight "wq" : tensor<8x8xf32>
  %wk = quill.weight "wk" : tensor<4x8xf32>
  %p = quill.concat %wq, %wk scale %g : tensor<8xf32> : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<12x8xf32>
  %y = quill.linear %x, %p : tensor<8xf32>, tensor<12x8xf32> -> tensor<12xf32>
  %w1 = quill.weight "w1" : tensor<4x8xf32>
  %w3 = quill.weight "w3" : tensor<4x8xf32>
  %i = quill.concat %w1, %w3 {interleave} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %a = quill.linear %x, %i {swiglu} : tensor<8xf32>, tensor<8x8xf32> -> tensor<4xf32>
  return %y, %a : tensor<12xf32>, tensor<4xf32>
}
func.func @prefill(%x: tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %wk = quill.weight "wk" : tensor<4x8xf32>
  %k = quill.linear %x, %wk : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
  %w1 = quill.weight "w1" : tensor<4x8xf32>
  %g1 = quill.linear %x, %w1 : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
  return %k, %g1 : tensor<2x4xf32>, tensor<2x4xf32>
}
