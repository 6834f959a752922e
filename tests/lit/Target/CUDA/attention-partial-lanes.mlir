// quill-cuda-warp-kernels on quill.attention_partial: a
// warp per unit (kv head, chunk). Lane l scores the chunk's positions l,
// l + 32, ... (-inf past the live ones); the maximum and the sum of
// exp(score - max) meet in xor butterflies; lane l sums the values of
// dimensions l, l + 32, ... over the positions in order, each weight taken
// from its lane (shuffle idx); then the warp shares the row so every lane
// stores all of it. 'emulate' computes the same per-lane values in loops.
// RUN: quill-opt %s -split-input-file --quill-cuda-warp-kernels --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=GPU
// RUN: quill-opt %s -split-input-file --quill-cuda-warp-kernels=lanes=emulate --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=EMU

// Two query heads of 32 over one kv head, chunks of 32 positions.
// GPU-LABEL: func.func @partial
// GPU-SAME: attributes {quill.warp_lanes = 32 : i64}
// GPU: scf.for %[[U:.*]] = %{{.*}} to %{{.*}} step %c1
// GPU: scf.for %[[G:.*]] = %c0 to %c2 step %c1
// GPU: %[[LANE:.*]] = gpu.lane_id upper_bound 32
// GPU: %[[LIVE:.*]] = arith.cmpi ult, %[[LANE]], %[[N:.*]] : index
// GPU: %[[S:.*]] = scf.if %[[LIVE]] -> (f32) {
// GPU: math.fma
// GPU: arith.divf
// GPU: } else {
// GPU: scf.yield %cst{{.*}} : f32
// GPU: gpu.shuffle  xor %[[S]], %c16_i32, %c32_i32 : f32
// GPU-COUNT-4: gpu.shuffle  xor
// GPU: math.exp
// GPU: %[[E:.*]] = arith.select %[[LIVE]], %{{.*}}, %cst{{.*}} : f32
// GPU-COUNT-5: gpu.shuffle  xor
// Only the live positions' weights are gathered: min(n, 32) sources.
// GPU: %[[SOURCES:.*]] = arith.minui %[[N]], %c32 : index
// GPU: scf.for %[[SRC:.*]] = %c0 to %[[SOURCES]] step %c1 iter_args(%[[O:.*]] = %{{.*}}) -> (f32)
// GPU: %[[ET:.*]], %{{.*}} = gpu.shuffle  idx %[[E]], %{{.*}}, %c32_i32 : f32
// GPU: math.fma %[[ET]], %{{.*}}, %[[O]] : f32
// GPU: gpu.shuffle  idx %{{.*}}, %c0_i32, %c32_i32 : f32
// GPU: gpu.shuffle  idx %{{.*}}, %c31_i32, %c32_i32 : f32
// GPU-NOT: gpu.shuffle
// GPU: tensor.insert
// GPU: tensor.insert
// GPU: scf.yield

// EMU-LABEL: func.func @partial
// EMU-NOT: quill.warp_lanes
// EMU-NOT: gpu.
// EMU: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<32xf32>)
// EMU: vector.insert
// EMU-COUNT-5: vector.shuffle
// EMU: vector.extract %{{.*}}[0] : f32 from vector<32xf32>
// EMU: math.exp
// EMU-COUNT-5: vector.shuffle
// EMU: scf.for %[[D:.*]] = %c0 to %c32 step %c1 iter_args
// EMU: scf.for %[[SRC:.*]] = %c0 to %{{.*}} step %c1 iter_args
// EMU: vector.extract %{{.*}}[%[[SRC]]] : f32 from vector<32xf32>
func.func @partial(%q: tensor<64xf32>, %k: tensor<64x32xf32>, %v: tensor<64x32xf32>, %pos: index,
                   %b: index, %e: index) -> tensor<?x68xf32> {
  %p = quill.attention_partial %q, %k, %v at %pos tile[%b, %e] {chunk = 32 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64}
      : tensor<64xf32>, tensor<64x32xf32>, tensor<64x32xf32> -> tensor<?x68xf32>
  return %p : tensor<?x68xf32>
}

// -----

// Heads of 8 (not whole warps of dimensions): one thread per unit, as on
// the CPU; the kernel is not a warp kernel.
// GPU-LABEL: func.func @small_heads
// GPU-NOT: quill.warp_lanes
// GPU-NOT: gpu.
// GPU: linalg.generic
// EMU-LABEL: func.func @small_heads
// EMU-NOT: vector<32xf32>
func.func @small_heads(%q: tensor<16xf32>, %k: tensor<64x8xf32>, %v: tensor<64x8xf32>, %pos: index) -> tensor<2x20xf32> {
  %p = quill.attention_partial %q, %k, %v at %pos {chunk = 32 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64}
      : tensor<16xf32>, tensor<64x8xf32>, tensor<64x8xf32> -> tensor<2x20xf32>
  return %p : tensor<2x20xf32>
}
