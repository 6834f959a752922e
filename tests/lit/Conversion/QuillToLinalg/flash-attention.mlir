// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg --canonicalize --cse | FileCheck %s

// Partials of units [b, e): unit u is kv head u / 4, chunk u % 4, positions
// [256 c, min(256 (c + 1), pos + 1)); per query head the row holds o, max, sum.
// The tile is taken chunk by chunk: at chunk c its units are kv heads
// [(b + 3 - c) / 4, (e + 3 - c) / 4), handed to the builder together.
// CHECK-LABEL: func.func @partial
// CHECK-SAME: %[[POS:[^:]*]]: index, %[[B:[^:]*]]: index, %[[E:[^:]*]]: index
// CHECK: %[[N:.*]] = arith.addi %[[POS]], %c1
// CHECK: scf.for %[[C:.*]] = %c0 to %c4 step %c1
// CHECK: %[[BU:.*]] = arith.addi %[[B]], %c3
// CHECK: %[[BD:.*]] = arith.subi %[[BU]], %[[C]]
// CHECK: %[[H0:.*]] = arith.divui %[[BD]], %c4
// CHECK: %[[EU:.*]] = arith.addi %[[E]], %c3
// CHECK: %[[ED:.*]] = arith.subi %[[EU]], %[[C]]
// CHECK: %[[H1:.*]] = arith.divui %[[ED]], %c4
// CHECK: %[[HEADS:.*]] = arith.subi %[[H1]], %[[H0]]
// CHECK: arith.minui %{{.*}}, %[[N]]
// The scores and the weighted sum are the kernel builder's forms over the
// chunk's kv heads: q as [heads, group, d], the cache rows as [n, heads, d].
// CHECK: tensor.extract_slice %{{.*}}{{\[}}%[[H0]], 0, 0] [%[[HEADS]], 2, 8]
// CHECK: bufferization.alloc_tensor() : tensor<2x2x256xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} : tensor<?x2x8xf32>, tensor<?x?x8xf32>) outs(%{{.*}} : tensor<?x2x?xf32>)
// CHECK: arith.maximumf
// CHECK: math.exp
// Each head's row lands at unit (h0 + h) * 4 + c of the tile.
// CHECK: scf.for %[[H:.*]] = %c0 to %[[HEADS]] step %c1
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 8] [2, 1] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 9] [2, 1] [1, 1]
// CHECK: %[[HEAD:.*]] = arith.addi %[[H0]], %[[H]]
// CHECK: %[[ROW:.*]] = arith.muli %[[HEAD]], %c4
// CHECK: %[[UNIT:.*]] = arith.addi %[[ROW]], %[[C]]
// CHECK: arith.subi %[[UNIT]], %[[B]]
func.func @partial(%q: tensor<32xf32>, %k: tensor<1024x16xf32>, %v: tensor<1024x16xf32>, %pos: index, %b: index, %e: index) -> tensor<?x20xf32> {
  %p = quill.attention_partial %q, %k, %v at %pos tile[%b, %e] {chunk = 256 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<32xf32>, tensor<1024x16xf32>, tensor<1024x16xf32> -> tensor<?x20xf32>
  return %p : tensor<?x20xf32>
}

// -----

// The merge: chunk maxima, weights exp(m - M), and sums over the chunks in
// ascending order (the chunk loop is a reduction dimension of each generic).
// CHECK-LABEL: func.func @merge
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2, 3]] output_shape [2, 4, 2, 10]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel", "parallel"]
// CHECK: arith.divf
// CHECK: tensor.collapse_shape
func.func @merge(%p: tensor<8x20xf32>) -> tensor<32xf32> {
  %o = quill.attention_merge %p {num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<8x20xf32> -> tensor<32xf32>
  return %o : tensor<32xf32>
}

// -----

// Tiled merge (the GPU's units): output elements [b, e), each merging its
// column of the chunks in chunk order: element i is head i / 4, dimension
// i mod 4; its chunks are rows 4 * head + c (here one query head per kv
// head), m and l in columns 4 and 5.
// CHECK-LABEL: func.func @merge_tiled
// CHECK-SAME: (%[[P:[^:]+]]: tensor<8x6xf32>, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK: %[[N:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK: scf.for %[[I:.*]] = %c0 to %[[N]] step %c1 iter_args(%[[OUT:.*]] = %{{.*}}) -> (tensor<?xf32>)
// CHECK: %[[EL:.*]] = arith.addi %[[B]], %[[I]] : index
// CHECK: %[[HEAD:.*]] = arith.divui %[[EL]], %c4 : index
// CHECK: %[[D:.*]] = arith.remui %[[EL]], %c4 : index
// CHECK: %[[FIRST:.*]] = arith.muli %[[HEAD]], %c4 : index
// CHECK: %[[BEST:.*]] = scf.for %[[C:.*]] = %c0 to %c4 step %c1 iter_args(%[[M:.*]] = %cst{{.*}}) -> (f32)
// CHECK: arith.maximumf %[[M]], %{{.*}} : f32
// CHECK: %[[SUMS:.*]]:2 = scf.for
// CHECK: arith.subf %{{.*}}, %[[BEST]] : f32
// CHECK: math.exp
// CHECK: tensor.extract %[[P]][%{{.*}}, %c5]
// CHECK: tensor.extract %[[P]][%{{.*}}, %[[D]]]
// CHECK: %[[Y:.*]] = arith.divf %[[SUMS]]#1, %[[SUMS]]#0 : f32
// CHECK: tensor.insert %[[Y]] into %[[OUT]][%[[I]]] : tensor<?xf32>
func.func @merge_tiled(%p: tensor<8x6xf32>, %b: index, %e: index) -> tensor<?xf32> {
  %m = quill.attention_merge %p tile[%b, %e] {num_heads = 2 : i64, num_kv_heads = 2 : i64} : tensor<8x6xf32> -> tensor<?xf32>
  return %m : tensor<?xf32>
}
