// quill-cuda-warp-kernels: on the GPU a warp computes
// each output element of a matrix-vector kernel. Lane l sums elements
// l, l + 32, ... (a warp's loads are 128 contiguous bytes), then the lanes
// meet in a gpu.shuffle xor butterfly; 'emulate' builds the same sums in
// the same order for one CPU thread.
// RUN: quill-opt %s -split-input-file --quill-cuda-warp-kernels --quill-lower-to-linalg | FileCheck %s --check-prefix=GPU --enable-var-scope
// RUN: quill-opt %s -split-input-file --quill-cuda-warp-kernels=lanes=emulate --quill-lower-to-linalg | FileCheck %s --check-prefix=EMU --enable-var-scope
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s --check-prefix=NONE
// RUN: not quill-opt %s -split-input-file --quill-cuda-warp-kernels=lanes=warp 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: quill-cuda-warp-kernels: lanes must be gpu or emulate, not 'warp'

// A width that is a multiple of 128: four interleaved partial sums per lane
// (elements lane + 32 (4 i + u)), added pairwise, then the butterfly.
// GPU-LABEL: func.func @linear_tiled
// GPU-SAME: (%[[X:[^:]+]]: tensor<256xf32>, %[[W:[^:]+]]: tensor<64x256xf32>, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// GPU-SAME: attributes {quill.warp_lanes = 32 : i64}
// The rows go to a private (stack) buffer first: the 32 lanes never read
// back the kernel's output while another lane may be writing it.
// GPU: %[[ROWS:.*]] = arith.subi %[[E]], %[[B]] : index
// GPU: %[[PRIVATE:.*]] = bufferization.alloc_tensor() : tensor<64xf32>
// GPU: %[[SLICE:.*]] = tensor.extract_slice %[[PRIVATE]][0] [%[[ROWS]]] [1]
// GPU: scf.for %[[I:.*]] = %{{.*}} to %[[ROWS]] step %{{.*}} iter_args(%[[OUT:.*]] = %[[SLICE]]) -> (tensor<?xf32>)
// GPU: %[[ROW:.*]] = arith.addi %[[B]], %[[I]] : index
// GPU: %[[LANE:.*]] = gpu.lane_id upper_bound 32
// GPU: %[[P:.*]]:4 = scf.for %[[K:.*]] = %[[LANE]] to %c256 step %c128 iter_args({{.*}}) -> (f32, f32, f32, f32)
// GPU: %[[WK:.*]] = tensor.extract %[[W]][%[[ROW]], %[[K]]]
// GPU: %[[XK:.*]] = tensor.extract %[[X]][%[[K]]]
// GPU: math.fma %[[WK]], %[[XK]]
// GPU: %[[K1:.*]] = arith.addi %[[K]], %c32
// GPU: tensor.extract %[[W]][%[[ROW]], %[[K1]]]
// GPU-COUNT-2: math.fma
// GPU: %[[LOW:.*]] = arith.addf %[[P]]#0, %[[P]]#1 : f32
// GPU: %[[HIGH:.*]] = arith.addf %[[P]]#2, %[[P]]#3 : f32
// GPU: %[[S0:.*]] = arith.addf %[[LOW]], %[[HIGH]] : f32
// GPU: %[[O16:.*]], %{{.*}} = gpu.shuffle  xor %[[S0]], %c16_i32, %c32_i32 : f32
// GPU: %[[S1:.*]] = arith.addf %[[S0]], %[[O16]] : f32
// GPU: gpu.shuffle  xor %[[S1]], %c8_i32, %c32_i32 : f32
// GPU: gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32 : f32
// GPU: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// GPU: %[[O1:.*]], %{{.*}} = gpu.shuffle  xor %[[S4:.*]], %c1_i32, %c32_i32 : f32
// GPU: %[[SUM:.*]] = arith.addf %[[S4]], %[[O1]] : f32
// GPU: tensor.insert %[[SUM]] into %[[OUT]][%[[I]]] : tensor<?xf32>
// GPU-NOT: linalg.generic
// GPU: return

// The emulation: a loop over the 32 lanes fills a vector of partial sums;
// the butterfly is a shuffle of it by i ^ 16, i ^ 8, ..., i ^ 1; lane 0's
// sum is the result. The kernel is not marked: it runs on one CPU thread.
// EMU-LABEL: func.func @linear_tiled
// EMU-NOT: quill.warp_lanes
// EMU-NOT: gpu.
// EMU: scf.for %[[L:.*]] = %c0 to %c32 step %c1 iter_args(%[[V:.*]] = %{{.*}}) -> (vector<32xf32>)
// EMU: %[[P:.*]]:4 = scf.for %{{.*}} = %[[L]] to %c256 step %c128
// EMU: vector.insert %{{.*}}, %[[V]] [%[[L]]] : f32 into vector<32xf32>
// EMU: vector.shuffle %{{.*}} [16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
// EMU: vector.shuffle %{{.*}} [8, 9, 10, 11, 12, 13, 14, 15, 0, 1
// EMU: vector.shuffle %{{.*}} [4, 5, 6, 7, 0, 1, 2, 3, 12
// EMU: vector.shuffle %{{.*}} [2, 3, 0, 1, 6, 7, 4, 5, 10
// EMU: vector.shuffle %{{.*}} [1, 0, 3, 2, 5, 4, 7, 6, 9
// EMU: %[[ALL:.*]] = arith.addf {{.*}} : vector<32xf32>
// EMU: %[[SUM:.*]] = vector.extract %[[ALL]][0] : f32 from vector<32xf32>
// EMU: tensor.insert %[[SUM]]
// Must not fire without the warp pass (the neutral lowering alone).
// NONE-LABEL: func.func @linear_tiled
// NONE-NOT: quill.warp_lanes
// NONE-NOT: gpu.
// NONE: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
func.func @linear_tiled(%x: tensor<256xf32>, %w: tensor<64x256xf32>, %b: index, %e: index) -> tensor<?xf32> {
  %y = quill.linear %x, %w tile [%b, %e] : tensor<256xf32>, tensor<64x256xf32> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Any other width: one partial sum per lane, stepping by 32 (lanes 0-7 take
// two elements of 40, the others one). The folded RMSNorm's sum of squares
// is shared by the lanes too.
// GPU-LABEL: func.func @normed
// GPU-SAME: attributes {quill.warp_lanes = 32 : i64}
// GPU: %[[LANE:.*]] = gpu.lane_id upper_bound 32
// GPU: scf.for %[[K:.*]] = %[[LANE]] to %c40 step %c32 iter_args(%{{.*}} = %{{.*}}) -> (f32)
// GPU-COUNT-5: gpu.shuffle  xor
// GPU: %[[LANE2:.*]] = gpu.lane_id upper_bound 32
// GPU: scf.for %[[J:.*]] = %[[LANE2]] to %c40 step %c32
// GPU: %[[XJ:.*]] = tensor.extract %{{.*}}[%[[J]]] : tensor<40xf32>
// GPU: math.fma %[[XJ]], %[[XJ]]
// GPU-COUNT-5: gpu.shuffle  xor
// GPU: arith.divf %{{.*}}, %cst{{.*}} : f32
// GPU: math.sqrt
// GPU: tensor.from_elements %{{.*}} : tensor<f32>
// EMU-LABEL: func.func @normed
// EMU: scf.for %[[L:.*]] = %c0 to %c32 step %c1
// EMU: scf.for %{{.*}} = %[[L]] to %c40 step %c32 iter_args(%{{.*}} = %{{.*}}) -> (f32)
func.func @normed(%x: tensor<40xf32>, %w: tensor<4x40xf32>) -> tensor<4xf32> {
  %y = quill.linear %x, %w {norm_eps = 1.0e-05 : f32} : tensor<40xf32>, tensor<4x40xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Token rows (prefill): token by token, each element a warp's sum.
// GPU-LABEL: func.func @prefill
// GPU: scf.for %[[T:.*]] = %c0 to %c2 step %c1
// GPU: scf.for %[[I:.*]] = %c0 to %c4 step %c1
// GPU: gpu.lane_id
// GPU: tensor.extract %{{.*}}[%[[T]], %{{.*}}] : tensor<2x40xf32>
// GPU-COUNT-5: gpu.shuffle  xor
// GPU: tensor.insert %{{.*}} into %{{.*}}[%[[T]], %[[I]]] : tensor<2x4xf32>
func.func @prefill(%x: tensor<2x40xf32>, %w: tensor<4x40xf32>) -> tensor<2x4xf32> {
  %y = quill.linear %x, %w : tensor<2x40xf32>, tensor<4x40xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
