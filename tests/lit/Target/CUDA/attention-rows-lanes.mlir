// quill-cuda-warp-kernels on a prefill's attention tiled
// by (query row, kv head) units (tile_rows, the GPU's units): a warp per
// unit, each of the kv head's query heads in turn (one kv head here, so a
// unit is a row). Lane l runs an online softmax over positions l, l + 32,
// ... up to the row's own (pos + t, causal), keeping its maximum, sum and
// weighted values; the maxima meet in a butterfly, then each lane's sum and
// values, rescaled by exp(its max - the max), in butterflies too.
// RUN: quill-opt %s --quill-cuda-warp-kernels --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=GPU
// RUN: quill-opt %s --quill-cuda-warp-kernels=lanes=emulate --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=EMU
// RUN: quill-opt %s --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=NONE

// GPU-LABEL: func.func @rows
// GPU-SAME: (%[[Q:[^:]+]]: tensor<4x8xf32>, %[[K:[^:]+]]: tensor<32x4xf32>, %[[V:[^:]+]]: tensor<32x4xf32>, %[[POS:[^:]+]]: index, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// GPU-SAME: attributes {quill.warp_lanes = 32 : i64}
// GPU: scf.for %[[T:.*]] = %[[B]] to %[[E]] step %c1
// GPU: %[[AT:.*]] = arith.addi %[[POS]], %[[T]] : index
// GPU: %[[N:.*]] = arith.addi %[[AT]], %c1 : index
// GPU: scf.for %[[H:.*]] = %c0 to %c2 step %c1
// GPU: %[[LANE:.*]] = gpu.lane_id upper_bound 32
// GPU: %[[SOFT:.*]]:6 = scf.for %[[P:.*]] = %[[LANE]] to %[[N]] step %c32 iter_args(%[[M:[^ ]+]] = %cst{{[_0-9]*}}, %[[L:[^ ]+]] = %cst{{[_0-9]*}}, {{.*}}) -> (f32, f32, f32, f32, f32, f32)
// GPU: tensor.extract %[[K]]{{\[}}%[[P]], 
// GPU: %[[S:.*]] = arith.divf
// GPU: %[[NEWM:.*]] = arith.maximumf %[[M]], %[[S]] : f32
// GPU: %[[OLD:.*]] = arith.subf %[[M]], %[[NEWM]] : f32
// GPU: %[[RESCALE:.*]] = math.exp %[[OLD]] : f32
// GPU: %[[THIS:.*]] = arith.subf %[[S]], %[[NEWM]] : f32
// GPU: %[[W:.*]] = math.exp %[[THIS]] : f32
// GPU: math.fma %[[L]], %[[RESCALE]], %[[W]] : f32
// GPU: tensor.extract %[[V]]{{\[}}%[[P]], 
// GPU: gpu.shuffle  xor %[[SOFT]]#0, %c16_i32, %c32_i32 : f32
// GPU-COUNT-4: arith.maximumf
// GPU: math.exp
// GPU: arith.mulf %[[SOFT]]#1
// GPU-COUNT-5: gpu.shuffle  xor
// GPU: arith.mulf %[[SOFT]]#2
// GPU-COUNT-5: gpu.shuffle  xor
// GPU: arith.divf
// GPU: tensor.insert

// EMU-LABEL: func.func @rows
// EMU-NOT: gpu.
// EMU: scf.for %[[LANE:.*]] = %c0 to %c32 step %c1 iter_args({{.*}}) -> (vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>)
// EMU: scf.for %{{.*}} = %[[LANE]] to %{{.*}} step %c32
// EMU: vector.insert %{{.*}} [%[[LANE]]] : f32 into vector<32xf32>
// EMU-COUNT-5: vector.shuffle
// EMU: math.exp
// EMU: arith.mulf %{{.*}} : vector<32xf32>
// EMU-COUNT-5: vector.shuffle
// Must not fire without lane reductions (the CPU): one thread per row.
// NONE-LABEL: func.func @rows
// NONE-NOT: quill.warp_lanes
// NONE-NOT: gpu.
// NONE-NOT: vector<32xf32>
// NONE: linalg.generic
func.func @rows(%q: tensor<4x8xf32>, %k: tensor<32x4xf32>, %v: tensor<32x4xf32>, %pos: index,
                %b: index, %e: index) -> tensor<?x8xf32> {
  %o = quill.attention %q, %k, %v at %pos tile[%b, %e] {num_heads = 2 : i64, num_kv_heads = 1 : i64, tile_rows}
      : tensor<4x8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}
