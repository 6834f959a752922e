// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg --canonicalize --cse | FileCheck %s

// Partials of units [b, e): unit u is kv head u / 4, chunk u % 4, positions
// [256 c, min(256 (c + 1), pos + 1)); per query head the row holds o, max, sum.
// CHECK-LABEL: func.func @partial
// CHECK-SAME: %[[POS:[^:]*]]: index, %[[B:[^:]*]]: index, %[[E:[^:]*]]: index
// CHECK: %[[N:.*]] = arith.addi %[[POS]], %c1
// CHECK: scf.for %[[U:.*]] = %[[B]] to %[[E]] step %c1
// CHECK: arith.divui %[[U]], %c4
// CHECK: arith.remui %[[U]], %c4
// CHECK: arith.minui %{{.*}}, %[[N]]
// CHECK: bufferization.alloc_tensor() : tensor<2x256xf32>
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 8] [2, 1] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 9] [2, 1] [1, 1]
func.func @partial(%q: tensor<32xf32>, %k: tensor<1024x16xf32>, %v: tensor<1024x16xf32>, %pos: index, %b: index, %e: index) -> tensor<?x20xf32> {
  %p = quill.attention_partial %q, %k, %v at %pos tile[%b, %e] {chunk = 256 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<32xf32>, tensor<1024x16xf32>, tensor<1024x16xf32> -> tensor<?x20xf32>
  return %p : tensor<?x20xf32>
}

// -----

// The merge: chunk maxima, weights exp(m - M), and sums over the chunks in
// ascending order (the chunk loop is a reduction dimension of each generic).
// CHECK-LABEL: func.func @merge
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2, 3]] output_shape [2, 4, 2, 10]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel", "parallel"]
// CHECK: arith.divf
// CHECK: tensor.collapse_shape
func.func @merge(%p: tensor<8x20xf32>) -> tensor<32xf32> {
  %o = quill.attention_merge %p {num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<8x20xf32> -> tensor<32xf32>
  return %o : tensor<32xf32>
}
