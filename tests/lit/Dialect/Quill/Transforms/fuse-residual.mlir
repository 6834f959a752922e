// RUN: quill-opt %s -split-input-file --quill-fuse-residual | FileCheck %s

// add(x, linear(...)) -> linear(...) residual x, whichever side the linear is.
// CHECK-LABEL: func.func @fires
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>, %[[A:.*]]: tensor<8xf32>)
// CHECK: %[[Y:.*]] = quill.linear %[[A]], %{{.*}} residual %[[X]] : tensor<8xf32> : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
// CHECK: %[[Z:.*]] = quill.linear %[[A]], %{{.*}} residual %[[Y]] : tensor<8xf32>
// CHECK-NOT: quill.add
// CHECK: return %[[Z]]
func.func @fires(%x: tensor<8xf32>, %a: tensor<8xf32>) -> tensor<8xf32> {
  %w = quill.weight "wo" : tensor<8x8xf32>
  %o = quill.linear %a, %w : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %x1 = quill.add %x, %o : tensor<8xf32>
  %o2 = quill.linear %a, %w : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %x2 = quill.add %o2, %x1 : tensor<8xf32>
  return %x2 : tensor<8xf32>
}

// -----

// Must not fire: the linear's result is used again, so the sum cannot
// replace it; and a residual defined after the linear is not available.
// CHECK-LABEL: func.func @not_fusable
// CHECK-COUNT-2: quill.add
func.func @not_fusable(%x: tensor<8xf32>, %a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %w = quill.weight "wo" : tensor<8x8xf32>
  %o = quill.linear %a, %w : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %x1 = quill.add %x, %o : tensor<8xf32>
  %o2 = quill.linear %a, %w : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %late = quill.add %x, %x : tensor<8xf32>
  %x2 = quill.add %late, %o2 : tensor<8xf32>
  return %x1, %o, %x2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
