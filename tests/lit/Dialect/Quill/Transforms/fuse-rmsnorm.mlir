// RUN: quill-opt %s -split-input-file --quill-fuse-rmsnorm | FileCheck %s

// The norm feeds a linear over a named weight: the weight becomes a pack
// scaled by the norm's weight, the linear reads x and normalizes inside.
// CHECK-LABEL: func.func @fires
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8xf32>)
// CHECK-DAG: %[[G:.*]] = quill.weight "attention_norm" : tensor<8xf32>
// CHECK-DAG: %[[W:.*]] = quill.weight "wq" : tensor<4x8xf32>
// CHECK: %[[P:.*]] = quill.concat %[[W]] scale %[[G]] : tensor<8xf32> : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: quill.linear %[[X]], %[[P]] {norm_eps = 9.99999974E-6 : f32} : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NOT: quill.rmsnorm
func.func @fires(%x: tensor<8xf32>) -> tensor<4xf32> {
  %g = quill.weight "attention_norm" : tensor<8xf32>
  %h = quill.rmsnorm %x, %g {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<8xf32>
  %w = quill.weight "wq" : tensor<4x8xf32>
  %y = quill.linear %h, %w : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A packed (interleaved) weight keeps its layout and gains the scale.
// CHECK-LABEL: func.func @packed
// CHECK: %[[P:.*]] = quill.concat %{{.*}}, %{{.*}} scale %{{.*}} : tensor<8xf32> {interleave}
// CHECK: quill.linear %{{.*}}, %[[P]] {norm_eps = {{.*}}, swiglu}
func.func @packed(%x: tensor<8xf32>) -> tensor<4xf32> {
  %g = quill.weight "ffn_norm" : tensor<8xf32>
  %h = quill.rmsnorm %x, %g {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<8xf32>
  %w1 = quill.weight "w1" : tensor<4x8xf32>
  %w3 = quill.weight "w3" : tensor<4x8xf32>
  %w = quill.concat %w1, %w3 {interleave} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %y = quill.linear %h, %w {swiglu} : tensor<8xf32>, tensor<8x8xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Must not fire: the normalized vector is also used by something else than
// a linear layer (here the logits), so it has to exist.
// CHECK-LABEL: func.func @other_user
// CHECK: quill.rmsnorm
// CHECK-NOT: scale
func.func @other_user(%x: tensor<8xf32>) -> (tensor<4xf32>, tensor<16xf32>) {
  %g = quill.weight "norm" : tensor<8xf32>
  %h = quill.rmsnorm %x, %g {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<8xf32>
  %w = quill.weight "w" : tensor<4x8xf32>
  %y = quill.linear %h, %w : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %e = quill.weight "emb" : tensor<16x8xf32>
  %l = quill.logits %h, %e : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %y, %l : tensor<4xf32>, tensor<16xf32>
}
