// RUN: quill-opt %s -split-input-file --quill-fuse-gate-up | FileCheck %s

// Gate and up projections of one input feeding swiglu become one linear over
// the interleaved weights with the swiglu epilogue.
// CHECK-LABEL: func.func @fires
// CHECK-SAME: (%[[H:.*]]: tensor<8xf32>)
// CHECK-DAG: %[[W1:.*]] = quill.weight "w1" : tensor<12x8xf32>
// CHECK-DAG: %[[W3:.*]] = quill.weight "w3" : tensor<12x8xf32>
// CHECK: %[[P:.*]] = quill.concat %[[W1]], %[[W3]] {interleave} : (tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<24x8xf32>
// CHECK: %[[A:.*]] = quill.linear %[[H]], %[[P]] {swiglu} : tensor<8xf32>, tensor<24x8xf32> -> tensor<12xf32>
// CHECK-NOT: quill.swiglu
// CHECK: return %[[A]]
func.func @fires(%h: tensor<8xf32>) -> tensor<12xf32> {
  %w1 = quill.weight "w1" : tensor<12x8xf32>
  %g = quill.linear %h, %w1 : tensor<8xf32>, tensor<12x8xf32> -> tensor<12xf32>
  %w3 = quill.weight "w3" : tensor<12x8xf32>
  %u = quill.linear %h, %w3 : tensor<8xf32>, tensor<12x8xf32> -> tensor<12xf32>
  %a = quill.swiglu %g, %u : tensor<12xf32>
  return %a : tensor<12xf32>
}

// -----

// Must not fire: the gate projection has a second use, so it must stay.
// CHECK-LABEL: func.func @gate_used_twice
// CHECK-NOT: quill.concat
// CHECK: quill.swiglu
func.func @gate_used_twice(%h: tensor<8xf32>) -> (tensor<12xf32>, tensor<12xf32>) {
  %w1 = quill.weight "w1" : tensor<12x8xf32>
  %g = quill.linear %h, %w1 : tensor<8xf32>, tensor<12x8xf32> -> tensor<12xf32>
  %w3 = quill.weight "w3" : tensor<12x8xf32>
  %u = quill.linear %h, %w3 : tensor<8xf32>, tensor<12x8xf32> -> tensor<12xf32>
  %a = quill.swiglu %g, %u : tensor<12xf32>
  return %a, %g : tensor<12xf32>, tensor<12xf32>
}

// -----

// Must not fire: gate and up read different inputs.
// CHECK-LABEL: func.func @different_inputs
// CHECK-NOT: quill.concat
// CHECK: quill.swiglu
func.func @different_inputs(%h: tensor<8xf32>, %k: tensor<8xf32>) -> tensor<12xf32> {
  %w1 = quill.weight "w1" : tensor<12x8xf32>
  %g = quill.linear %h, %w1 : tensor<8xf32>, tensor<12x8xf32> -> tensor<12xf32>
  %w3 = quill.weight "w3" : tensor<12x8xf32>
  %u = quill.linear %k, %w3 : tensor<8xf32>, tensor<12x8xf32> -> tensor<12xf32>
  %a = quill.swiglu %g, %u : tensor<12xf32>
  return %a : tensor<12xf32>
}
