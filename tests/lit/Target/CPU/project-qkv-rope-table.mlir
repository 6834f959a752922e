// RUN: quill-opt %s --quill-cpu-lower-kernels="vector-width=16" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s
// RUN: quill-opt %s --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=NEUTRAL

// On the CPU a decode projection's tile computes the cos and sin of a
// head's pairs once (head_dim 4: two pairs, angle pos / 10000^(d/4)) into
// two tables, and each Q and K row takes its pair's entry (row mod 4, over
// 2); the other targets compute them per row (a GPU unit is a few rows).
// CHECK-LABEL: func.func @project_qkv_tile
// CHECK: %[[TABLES:.*]]:2 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xf32>)
// CHECK: math.powf
// CHECK: %[[COS:.*]] = math.cos
// CHECK: %[[SIN:.*]] = math.sin
// CHECK: linalg.yield %[[COS]], %[[SIN]]
// CHECK: linalg.generic
// CHECK-NOT: math.
// CHECK: %[[D:.*]] = arith.remui %{{.*}}, %c4
// CHECK: %[[PAIR:.*]] = arith.divui %[[D]], %c2
// CHECK-DAG: tensor.extract %[[TABLES]]#0[%[[PAIR]]] : tensor<2xf32>
// CHECK-DAG: tensor.extract %[[TABLES]]#1[%[[PAIR]]] : tensor<2xf32>
// CHECK: arith.cmpi ult, %{{.*}}, %c12
// CHECK-NOT: math.
// CHECK: return
// NEUTRAL-LABEL: func.func @project_qkv_tile
// NEUTRAL-NOT: tensor<2xf32>
// NEUTRAL: linalg.generic
// NEUTRAL: math.powf
// NEUTRAL: math.cos
// NEUTRAL: math.sin
// NEUTRAL: arith.cmpi ult, %{{.*}}, %c12
func.func @project_qkv_tile(%x: tensor<8xf32>, %w: tensor<16x8xf32>, %k: tensor<32x4xf32>, %v: tensor<32x4xf32>, %pos: index, %b: index, %e: index) -> (tensor<?xf32>, tensor<32x4xf32>, tensor<32x4xf32>) {
  %y, %k1, %v1 = quill.project_qkv %x, %w into %k, %v at %pos tile[%b, %e] {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<8xf32>, tensor<16x8xf32>, tensor<32x4xf32> -> tensor<?xf32>
  return %y, %k1, %v1 : tensor<?xf32>, tensor<32x4xf32>, tensor<32x4xf32>
}
