// quill-lower-to-linalg on attention with a sliding window (Mistral): a
// query at pos reads the cache from max(0, pos + 1 - window) on, so the
// positions before the window are never read.
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @decode_window
// CHECK-SAME: %[[POS:[^:]*]]: index
// CHECK-DAG: %[[W:.*]] = arith.constant 6 : index
// CHECK: arith.addi %[[POS]], %{{.*}} : index
// CHECK-NEXT: %[[END:.*]] = arith.addi %[[POS]], %{{.*}} : index
// CHECK-NEXT: %[[INSIDE:.*]] = arith.cmpi ugt, %[[END]], %[[W]] : index
// CHECK: %[[SHIFT:.*]] = arith.subi %[[END]], %[[W]] : index
// CHECK: %[[FIRST:.*]] = arith.select %[[INSIDE]], %[[SHIFT]], %{{.*}} : index
// CHECK: %[[N:.*]] = arith.subi %{{.*}}, %[[FIRST]] : index
// CHECK: tensor.extract_slice %{{.*}}[%[[FIRST]], 0, 0] [%[[N]], 1, 4] [1, 1, 1]
func.func @decode_window(%q: tensor<8xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>, %pos: index) -> tensor<8xf32> {
  %a = quill.attention %q, %k, %v at %pos {num_heads = 2 : i64, num_kv_heads = 1 : i64, window = 6 : i64} : tensor<8xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

// The paged step starts its block loops at the window's first block.
// CHECK-LABEL: func.func @paged_window
// CHECK: %[[FIRST:.*]] = arith.select
// CHECK: %[[FB:.*]] = arith.divui %[[FIRST]], %{{.*}} : index
// CHECK: scf.for %{{.*}} = %[[FB]] to
// CHECK: scf.for %{{.*}} = %[[FB]] to
func.func @paged_window(%q: tensor<2x8xf32>, %k: tensor<8x4x4xf32>, %v: tensor<8x4x4xf32>, %t: tensor<2x4xi32>, %p: tensor<2xi32>) -> tensor<2x8xf32> {
  %a = quill.paged_attention %q, %k, %v through %t at %p {num_heads = 2 : i64, num_kv_heads = 1 : i64, window = 6 : i64} : tensor<2x8xf32>, tensor<8x4x4xf32>, tensor<2x4xi32>, tensor<2xi32> -> tensor<2x8xf32>
  return %a : tensor<2x8xf32>
}
