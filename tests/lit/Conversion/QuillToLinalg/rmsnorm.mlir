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
// CHECK: %[[SUM:.*]] = tensor.extract %[[SUMT]][] : tensor<f32>
// CHECK: %[[MEAN:.*]] = arith.divf %[[SUM]], %[[N]] : f32
// CHECK: %[[SHIFTED:.*]] = arith.addf %[[MEAN]], %[[EPS]] : f32
// CHECK: %[[ROOT:.*]] = math.sqrt %[[SHIFTED]] : f32
// CHECK: %[[SCALE:.*]] = arith.divf %[[ONE]], %[[ROOT]] : f32
// CHECK: %[[OUT:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$ID]]], iterator_types = ["parallel"]}
// CHECK-SAME: ins(%[[X]], %[[W]] : tensor<8xf32>, tensor<8xf32>) outs(%[[OUT]] : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[XV:[^:]+]]: f32, %[[WV:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT: %[[SX:.*]] = arith.mulf %[[SCALE]], %[[XV]] : f32
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
