// quill-lower-to-linalg on quill.linear / quill.logits: a matrix-vector
// linalg.generic over the weight's rows, reducing with reassoc/contract.
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s --enable-var-scope

// Untiled linear: y[r] = sum_k W[r, k] * x[k] into a zero-filled result.
// CHECK-DAG: #[[$RK:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$K:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[$R:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8xf32>, %[[W:[^:]+]]: tensor<4x8xf32>)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[EMPTY:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<4xf32>)
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[$RK]], #[[$K]], #[[$R]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: ins(%[[W]], %[[X]] : tensor<4x8xf32>, tensor<8xf32>) outs(%[[INIT]] : tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[WV:[^:]+]]: f32, %[[XV:[^:]+]]: f32, %[[ACC:[^:]+]]: f32):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[WV]], %[[XV]] fastmath<reassoc,contract> : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[P]] fastmath<reassoc,contract> : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK-NEXT: } -> tensor<4xf32>
// CHECK-NOT: quill.linear
// CHECK: return %[[Y]]
func.func @linear(%x: tensor<8xf32>, %w: tensor<4x8xf32>) -> tensor<4xf32> {
  %y = quill.linear %x, %w : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tiled linear: only rows [b, e) of the weight are read, the result has e - b rows.
// CHECK-LABEL: func.func @linear_tiled
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8xf32>, %[[W:[^:]+]]: tensor<64x8xf32>, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK: %[[ROWS:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK-DAG: %[[SLICE:.*]] = tensor.extract_slice %[[W]][%[[B]], 0] [%[[ROWS]], 8] [1, 1] : tensor<64x8xf32> to tensor<?x8xf32>
// CHECK-DAG: %[[EMPTY:.*]] = tensor.empty(%[[ROWS]]) : tensor<?xf32>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[EMPTY]] : tensor<?xf32>)
// CHECK: %[[Y:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[SLICE]], %[[X]] : tensor<?x8xf32>, tensor<8xf32>) outs(%[[INIT]] : tensor<?xf32>)
// CHECK: arith.mulf {{.*}} fastmath<reassoc,contract>
// CHECK: arith.addf {{.*}} fastmath<reassoc,contract>
// CHECK: return %[[Y]] : tensor<?xf32>
func.func @linear_tiled(%x: tensor<8xf32>, %w: tensor<64x8xf32>, %b: index, %e: index) -> tensor<?xf32> {
  %y = quill.linear %x, %w tile[%b, %e] : tensor<8xf32>, tensor<64x8xf32> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Logits lower the same way; untiled, the whole weight is read.
// CHECK-LABEL: func.func @logits
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8xf32>, %[[W:[^:]+]]: tensor<16x8xf32>)
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[Y:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[W]], %[[X]] : tensor<16x8xf32>, tensor<8xf32>)
// CHECK-NOT: quill.logits
// CHECK: return %[[Y]] : tensor<16xf32>
func.func @logits(%x: tensor<8xf32>, %w: tensor<16x8xf32>) -> tensor<16xf32> {
  %l = quill.logits %x, %w : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}

// -----

// Tiled logits with a static result type: the dynamic rows are cast back.
// CHECK-LABEL: func.func @logits_tiled
// CHECK-SAME: (%{{[^:]+}}: tensor<8xf32>, %[[W:[^:]+]]: tensor<64x8xf32>, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK: %[[ROWS:.*]] = arith.subi %[[E]], %[[B]]
// CHECK: tensor.extract_slice %[[W]][%[[B]], 0] [%[[ROWS]], 8] [1, 1]
// CHECK: %[[Y:.*]] = linalg.generic
// CHECK: %[[CAST:.*]] = tensor.cast %[[Y]] : tensor<?xf32> to tensor<16xf32>
// CHECK: return %[[CAST]]
func.func @logits_tiled(%x: tensor<8xf32>, %w: tensor<64x8xf32>, %b: index, %e: index) -> tensor<16xf32> {
  %l = quill.logits %x, %w tile[%b, %e] : tensor<8xf32>, tensor<64x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
