// quill-lower-to-linalg on quill.rmsnorm: a sum-of-squares reduction, the
// scale 1/sqrt(mean + eps), and an elementwise weight * (scale * x).
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s --enable-var-scope

// The reduction into a 0-d tensor carries reassoc/contract; the scaling does not.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[$SCALAR:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @rmsnorm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8xf32>, %[[W:[^:]+]]: tensor<8xf32>)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK-DAG: %[[N:.*]] = arith.constant 8.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<f32>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E0]] : tensor<f32>)
// CHECK: %[[SUMT:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$SCALAR]]], iterator_types = ["reduction"]}
// CHECK-SAME: ins(%[[X]] : tensor<8xf32>) outs(%[[INIT]] : tensor<f32>)
// CHECK-NEXT: ^bb0(%[[V:[^:]+]]: f32, %[[ACC:[^:]+]]: f32):
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[V]], %[[V]] fastmath<reassoc,contract> : f32
// CHECK-NEXT: %[[ADD:.*]] = arith.addf %[[ACC]], %[[SQ]] fastmath<reassoc,contract> : f32
// CHECK-NEXT: linalg.yield %[[ADD]]
// The per-row scale (no rows here: a 0-d generic) in llama2.c's order.
// CHECK: %[[SCALET:.*]] = linalg.generic {indexing_maps = [#[[$NONE:.*]], #[[$NONE]]], iterator_types = []}
// CHECK-SAME: ins(%[[SUMT]] : tensor<f32>)
// CHECK-NEXT: ^bb0(%[[SUM:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT: %[[MEAN:.*]] = arith.divf %[[SUM]], %[[N]] : f32
// CHECK-NEXT: %[[SHIFTED:.*]] = arith.addf %[[MEAN]], %[[EPS]] : f32
// CHECK-NEXT: %[[ROOT:.*]] = math.sqrt %[[SHIFTED]] : f32
// CHECK-NEXT: %[[SCALE:.*]] = arith.divf %[[ONE]], %[[ROOT]] : f32
// CHECK: %[[OUT:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$SCALAR]], #[[$ID]]], iterator_types = ["parallel"]}
// CHECK-SAME: ins(%[[X]], %[[W]], %[[SCALET]] : tensor<8xf32>, tensor<8xf32>, tensor<f32>) outs(%[[OUT]] : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[XV:[^:]+]]: f32, %[[WV:[^:]+]]: f32, %[[S:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT: %[[SX:.*]] = arith.mulf %[[S]], %[[XV]] : f32
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[WV]], %[[SX]] : f32
// CHECK-NEXT: linalg.yield %[[Y]]
// CHECK-NOT: quill.rmsnorm
// CHECK: return %[[R]]
func.func @rmsnorm(%x: tensor<8xf32>, %w: tensor<8xf32>) -> tensor<8xf32> {
  %h = quill.rmsnorm %x, %w {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<8xf32>
  return %h : tensor<8xf32>
}

// -----

// The mean divides by the vector's own width and adds the op's own eps.
// CHECK-LABEL: func.func @rmsnorm_wide
// CHECK-DAG: arith.constant 1.000000e-01 : f32
// CHECK-DAG: arith.constant 6.400000e+01 : f32
// CHECK: iterator_types = ["reduction"]
// CHECK-SAME: ins(%{{.*}} : tensor<64xf32>)
func.func @rmsnorm_wide(%x: tensor<64xf32>, %w: tensor<64xf32>) -> tensor<64xf32> {
  %h = quill.rmsnorm %x, %w {eps = 0.1 : f32} : tensor<64xf32>, tensor<64xf32>
  return %h : tensor<64xf32>
}

// -----

// T token rows: one sum and one scale per row; the weight broadcast over rows.
// CHECK-LABEL: func.func @rmsnorm_rows
// CHECK: %[[SUMS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[SCALES:.*]] = linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK-SAME: ins(%[[SUMS]] : tensor<4xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK-SAME: ins(%{{.*}}, %{{.*}}, %[[SCALES]] : tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>)
func.func @rmsnorm_rows(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %h = quill.rmsnorm %x, %w {eps = 1.0e-05 : f32} : tensor<4x8xf32>, tensor<8xf32>
  return %h : tensor<4x8xf32>
}

// -----

// A grouped norm (Qwen3's per-head q/k norms) is the plain one over
// [n / g, g]: one scale per group, the g-element weight along the group.
// CHECK-LABEL: func.func @grouped
// CHECK: %[[E:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: ins(%[[E]] : tensor<2x4xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK: %[[N:.*]] = linalg.generic {{.*}} ins(%[[E]], %{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<4xf32>, tensor<2xf32>) outs(%{{.*}} : tensor<2x4xf32>)
// CHECK: tensor.collapse_shape %[[N]] {{\[\[}}0, 1]] : tensor<2x4xf32> into tensor<8xf32>
func.func @grouped(%x: tensor<8xf32>, %w: tensor<4xf32>) -> tensor<8xf32> {
  %0 = quill.rmsnorm %x, %w {eps = 1.0e-06 : f32, group = 4 : i64} : tensor<8xf32>, tensor<4xf32>
  return %0 : tensor<8xf32>
}
