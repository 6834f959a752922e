// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg --canonicalize --cse | FileCheck %s

// The swiglu epilogue: 2n weight rows (gate and up interleaved) into a
// fixed-size stack buffer, then out[i] = silu(row 2i) * row 2i+1.
// CHECK-LABEL: func.func @swiglu_epilogue
// CHECK: %[[RAW:.*]] = bufferization.alloc_tensor() : tensor<24xf32>
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK: linalg.index 0
// CHECK: tensor.extract %[[ROWS]]
// CHECK: math.exp
// CHECK: -> tensor<12xf32>
func.func @swiglu_epilogue(%h: tensor<8xf32>, %w: tensor<24x8xf32>) -> tensor<12xf32> {
  %a = quill.linear %h, %w {swiglu} : tensor<8xf32>, tensor<24x8xf32> -> tensor<12xf32>
  return %a : tensor<12xf32>
}

// -----

// The residual epilogue of a tile: rows [b, e) plus elements [b, e) of r.
// CHECK-LABEL: func.func @residual_epilogue
// CHECK-SAME: %[[R:[^:]*]]: tensor<16xf32>, %[[B:[^:]*]]: index, %[[E:[^:]*]]: index
// CHECK: %[[N:.*]] = arith.subi %[[E]], %[[B]]
// CHECK: %[[Y:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: %[[PART:.*]] = tensor.extract_slice %[[R]][%[[B]]] [%[[N]]] [1]
// CHECK: linalg.generic {{.*}} ins(%[[PART]] : tensor<?xf32>) outs(%[[Y]] : tensor<?xf32>)
// CHECK: arith.addf
func.func @residual_epilogue(%x: tensor<8xf32>, %w: tensor<16x8xf32>, %r: tensor<16xf32>, %b: index, %e: index) -> tensor<?xf32> {
  %y = quill.linear %x, %w residual %r : tensor<16xf32> tile[%b, %e] : tensor<8xf32>, tensor<16x8xf32> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// The folded norm: each output row times 1/sqrt(mean(x^2) + eps) of the
// whole input, before any epilogue.
// CHECK-LABEL: func.func @norm_prologue
// CHECK: %[[Y:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = []} ins(%[[SUM]] : tensor<f32>)
// CHECK: math.sqrt
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%[[S]] : tensor<f32>) outs(%[[Y]] : tensor<4xf32>)
// CHECK: arith.mulf
func.func @norm_prologue(%x: tensor<8xf32>, %w: tensor<4x8xf32>) -> tensor<4xf32> {
  %y = quill.linear %x, %w {norm_eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// project_qkv on a tile of row pairs [b, e): rows [2b, 2e) into a stack
// buffer, Q and K rows (row < 12) rotated, then the K rows [8, 12) and V
// rows [12, 16) of the tile (clamped, possibly empty) stored into row pos of
// the caches.
// CHECK-LABEL: func.func @project_qkv_tile
// CHECK-SAME: %[[POS:[^:]*]]: index, %[[B:[^:]*]]: index, %[[E:[^:]*]]: index
// CHECK: %[[FIRST:.*]] = arith.muli %[[B]], %c2
// CHECK: bufferization.alloc_tensor() : tensor<16xf32>
// CHECK: math.cos
// CHECK: arith.cmpi ult, %{{.*}}, %c12
// CHECK: arith.maxsi %[[FIRST]], %c8
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[POS]], %{{.*}}] [1, %{{.*}}] [1, 1] : tensor<?xf32> into tensor<32x4xf32>
// CHECK: arith.maxsi %[[FIRST]], %c12
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[POS]], %{{.*}}] [1, %{{.*}}] [1, 1] : tensor<?xf32> into tensor<32x4xf32>
func.func @project_qkv_tile(%x: tensor<8xf32>, %w: tensor<16x8xf32>, %k: tensor<32x4xf32>, %v: tensor<32x4xf32>, %pos: index, %b: index, %e: index) -> (tensor<?xf32>, tensor<32x4xf32>, tensor<32x4xf32>) {
  %y, %k1, %v1 = quill.project_qkv %x, %w into %k, %v at %pos tile[%b, %e] {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<8xf32>, tensor<16x8xf32>, tensor<32x4xf32> -> tensor<?xf32>
  return %y, %k1, %v1 : tensor<?xf32>, tensor<32x4xf32>, tensor<32x4xf32>
}

// -----

// The bias epilogue (Qwen2's Q/K/V biases) of a tile: rows [b, e) plus
// bias[b + i], read in place of the rows.
// CHECK-LABEL: func.func @bias_epilogue
// CHECK-SAME: %[[BIAS:[^:]*]]: tensor<16xf32>, %[[B:[^:]*]]: index, %[[E:[^:]*]]: index
// CHECK: %[[Y:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]} outs(%[[Y]] : tensor<?xf32>)
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: %[[AT:.*]] = arith.addi %[[I]], %[[B]]
// CHECK: %[[T:.*]] = tensor.extract %[[BIAS]][%[[AT]]]
// CHECK: arith.addf %{{.*}}, %[[T]]
func.func @bias_epilogue(%x: tensor<8xf32>, %w: tensor<16x8xf32>, %bias: tensor<16xf32>, %b: index, %e: index) -> tensor<?xf32> {
  %y = quill.linear %x, %w bias %bias : tensor<16xf32> tile[%b, %e] : tensor<8xf32>, tensor<16x8xf32> -> tensor<?xf32>
  return %y : tensor<?xf32>
}
