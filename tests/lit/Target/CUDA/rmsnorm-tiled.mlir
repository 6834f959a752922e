// quill-cuda-warp-kernels on a tiled quill.rmsnorm (the GPU's units: elements
// [b, e) of one vector), each scaled by the whole vector's root mean square;
// a warp's lanes share the sum of squares.
// RUN: quill-opt %s --quill-cuda-warp-kernels --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=GPU
// RUN: quill-opt %s --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=ONE

// GPU-LABEL: func.func @norm_tiled
// GPU-SAME: (%[[X:[^:]+]]: tensor<64xf32>, %[[W:[^:]+]]: tensor<64xf32>, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// GPU-SAME: attributes {quill.warp_lanes = 32 : i64}
// GPU: %[[N:.*]] = arith.subi %[[E]], %[[B]] : index
// GPU: %[[LANE:.*]] = gpu.lane_id upper_bound 32
// GPU: scf.for %{{.*}} = %[[LANE]] to %c64 step %c32
// GPU-COUNT-5: gpu.shuffle  xor
// GPU: %[[MEAN:.*]] = arith.divf
// GPU: %[[ROOT:.*]] = math.sqrt
// GPU: %[[SCALE:.*]] = arith.divf %cst{{.*}}, %[[ROOT]] : f32
// GPU: %[[EMPTY:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// GPU: linalg.generic {{.*}} outs(%[[EMPTY]] : tensor<?xf32>)
// GPU: %[[I:.*]] = arith.addi %{{.*}}, %[[B]] : index
// GPU: %[[XI:.*]] = tensor.extract %[[X]][%[[I]]] : tensor<64xf32>
// GPU: %[[WI:.*]] = tensor.extract %[[W]][%[[I]]] : tensor<64xf32>
// GPU: %[[SX:.*]] = arith.mulf %[[SCALE]], %[[XI]] : f32
// GPU: arith.mulf %[[WI]], %[[SX]] : f32

// Without lanes (--no-warp-reductions): each unit sums the squares itself.
// ONE-LABEL: func.func @norm_tiled
// ONE-NOT: quill.warp_lanes
// ONE-NOT: gpu.
// ONE: linalg.generic {{.*}} iterator_types = ["reduction"]
// ONE: tensor.empty(%{{.*}}) : tensor<?xf32>
func.func @norm_tiled(%x: tensor<64xf32>, %w: tensor<64xf32>, %b: index, %e: index) -> tensor<?xf32> {
  %y = quill.rmsnorm %x, %w tile[%b, %e] {eps = 1.0e-05 : f32} : tensor<64xf32>, tensor<64xf32> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// Rows [b, e) of [T, width] (a prefill's final norm on the GPU), one row
// at a time (static temporaries): each row's own scale, its sum of squares
// shared by the warp's lanes.
// GPU-LABEL: func.func @norm_rows
// GPU-SAME: (%[[X:[^:]+]]: tensor<4x64xf32>, %[[W:[^:]+]]: tensor<64xf32>, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// GPU: %[[N:.*]] = arith.subi %[[E]], %[[B]] : index
// GPU: scf.for %[[T:.*]] = %c0 to %[[N]] step %c1
// GPU: %[[AT:.*]] = arith.addi %[[B]], %[[T]] : index
// GPU: %[[ROW:.*]] = tensor.extract_slice %[[X]][%[[AT]], 0] [1, 64] [1, 1] : tensor<4x64xf32> to tensor<1x64xf32>
// GPU: gpu.lane_id
// GPU: tensor.extract %[[ROW]][%{{.*}}, %{{.*}}] : tensor<1x64xf32>
// GPU-COUNT-5: gpu.shuffle  xor
// GPU: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x64xf32>)
// GPU: tensor.insert_slice %{{.*}} into %{{.*}}[%[[T]], 0] [1, 64] [1, 1] : tensor<1x64xf32> into tensor<?x64xf32>
// ONE-LABEL: func.func @norm_rows
// ONE: scf.for
// ONE: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// ONE: tensor.insert_slice {{.*}} : tensor<1x64xf32> into tensor<?x64xf32>
func.func @norm_rows(%x: tensor<4x64xf32>, %w: tensor<64xf32>, %b: index, %e: index) -> tensor<?x64xf32> {
  %y = quill.rmsnorm %x, %w tile[%b, %e] {eps = 1.0e-05 : f32} : tensor<4x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
