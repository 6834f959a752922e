// quill-lower-to-linalg on the batch step's ops: writes and attention through
// block tables, per-row rotary positions, and live-row bounds on matmuls.
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels=vector-width=16 --quill-lower-to-linalg | FileCheck %s --enable-var-scope
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s --check-prefix=NEUTRAL
// The neutral lowering alone: generic forms, no vectors.
// NEUTRAL-NOT: vector.

// paged_kv_write: row t goes to block tables[t, p / 16], slot p mod 16 of
// the pool, for p = positions[t], one row at a time.
// CHECK-LABEL: func.func @paged_kv_write
// CHECK-SAME: (%[[ROWS:[^:]+]]: tensor<4x8xf32>, %[[POOL:[^:]+]]: tensor<64x16x8xf32>, %[[TABLES:[^:]+]]: tensor<4x2xi32>, %[[POS:[^:]+]]: tensor<4xi32>)
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[OUT:.*]] = scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[POOL]])
// CHECK: %[[P32:.*]] = tensor.extract %[[POS]][%[[T]]]
// CHECK: %[[P:.*]] = arith.index_cast %[[P32]]
// CHECK: %[[ENTRY:.*]] = arith.divui %[[P]], %[[C16]]
// CHECK: %[[SLOT:.*]] = arith.remui %[[P]], %[[C16]]
// CHECK: %[[B32:.*]] = tensor.extract %[[TABLES]][%[[T]], %[[ENTRY]]]
// CHECK: %[[B:.*]] = arith.index_cast %[[B32]]
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[ROWS]][%[[T]], 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<8xf32>
// CHECK: %[[NEXT:.*]] = tensor.insert_slice %[[ROW]] into %[[ACC]][%[[B]], %[[SLOT]], 0] [1, 1, 8] [1, 1, 1] : tensor<8xf32> into tensor<64x16x8xf32>
// CHECK: scf.yield %[[NEXT]]
// CHECK: return %[[OUT]]
func.func @paged_kv_write(%rows: tensor<4x8xf32>, %pool: tensor<64x16x8xf32>,
                          %tables: tensor<4x2xi32>, %pos: tensor<4xi32>) -> tensor<64x16x8xf32> {
  %p = quill.paged_kv_write %rows into %pool through %tables at %pos
      : tensor<4x8xf32> into tensor<64x16x8xf32>, tensor<4x2xi32>, tensor<4xi32>
  return %p : tensor<64x16x8xf32>
}

// -----

// With `live %n` (the batch step's live rows), the loop stops at min(n, 4).
// CHECK-LABEL: func.func @paged_kv_write_live
// CHECK-SAME: %[[N:[^:]+]]: index)
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[END:.*]] = arith.minui %[[N]], %[[C4]] : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[END]] step
func.func @paged_kv_write_live(%rows: tensor<4x8xf32>, %pool: tensor<64x16x8xf32>,
                               %tables: tensor<4x2xi32>, %pos: tensor<4xi32>,
                               %n: index) -> tensor<64x16x8xf32> {
  %p = quill.paged_kv_write %rows into %pool through %tables at %pos live %n
      : tensor<4x8xf32> into tensor<64x16x8xf32>, tensor<4x2xi32>, tensor<4xi32>
  return %p : tensor<64x16x8xf32>
}

// -----

// paged_attention: a loop over the rows; per row, scores block by block
// through its table (the block's rows sliced out of the pool at the table's
// entry), one softmax, then the weighted sum block by block.
// CHECK-LABEL: func.func @paged_attention
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<4x16xf32>, %[[K:[^:]+]]: tensor<64x16x8xf32>, %[[V:[^:]+]]: tensor<64x16x8xf32>, %[[TABLES:[^:]+]]: tensor<4x2xi32>, %[[POS:[^:]+]]: tensor<4xi32>)
// CHECK: scf.for %[[T:[^ ]+]] =
// CHECK: tensor.extract %[[POS]][%[[T]]]
// CHECK: scf.for %[[J:[^ ]+]] =
// CHECK: %[[B32:.*]] = tensor.extract %[[TABLES]][%[[T]], %[[J]]]
// CHECK: %[[KVIEW:.*]] = tensor.expand_shape %[[K]] {{\[\[}}0], [1], [2, 3]] output_shape [64, 16, 2, 4]
// CHECK: tensor.extract_slice %[[KVIEW]][%{{.*}}, 0, 0, 0] [1, %{{.*}}, 2, 4] [1, 1, 1, 1] : tensor<64x16x2x4xf32> to tensor<?x2x4xf32>
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: scf.for
// CHECK: tensor.extract %[[TABLES]][%[[T]], %{{.*}}]
// CHECK: tensor.expand_shape %[[V]]
// CHECK: linalg.generic
func.func @paged_attention(%q: tensor<4x16xf32>, %k: tensor<64x16x8xf32>, %v: tensor<64x16x8xf32>,
                           %tables: tensor<4x2xi32>, %pos: tensor<4xi32>) -> tensor<4x16xf32> {
  %o = quill.paged_attention %q, %k, %v through %tables at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<4x16xf32>, tensor<64x16x8xf32>, tensor<4x2xi32>, tensor<4xi32> -> tensor<4x16xf32>
  return %o : tensor<4x16xf32>
}

// -----

// paged_attention tiled: units [b, e) of (row, kv head), unit u being kv head
// u mod 2 of row u / 2 (one sequence's row splits between threads). Each
// unit scales its head's query slice, slices that head's [len, 1, 4] rows
// out of each block, and writes row u - b of the [e - b, 8] result.
// CHECK-LABEL: func.func @paged_attention_units
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<4x16xf32>, %[[K:[^:]+]]: tensor<64x16x8xf32>, %{{[^:]+}}: tensor<64x16x8xf32>, %[[TABLES:[^:]+]]: tensor<4x2xi32>, %[[POS:[^:]+]]: tensor<4xi32>, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[N:.*]] = arith.subi %[[E]], %[[B]]
// CHECK: %[[INIT:.*]] = tensor.empty(%[[N]]) : tensor<?x8xf32>
// CHECK: scf.for %[[U:[^ ]+]] = %[[B]] to %[[E]] step %{{.*}} iter_args(%{{.*}} = %[[INIT]])
// CHECK: %[[T:.*]] = arith.divui %[[U]], %[[C2]]
// CHECK: %[[H:.*]] = arith.remui %[[U]], %[[C2]]
// CHECK: tensor.extract %[[POS]][%[[T]]]
// CHECK: tensor.extract_slice %[[Q]][%[[T]], 0] [1, 16]
// CHECK: tensor.extract_slice %{{.*}}[%[[H]], 0, 0] [1, 2, 4] [1, 1, 1] : tensor<2x2x4xf32> to tensor<1x2x4xf32>
// CHECK: scf.for %[[J:[^ ]+]] =
// CHECK: tensor.extract %[[TABLES]][%[[T]], %[[J]]]
// CHECK: %[[KVIEW:.*]] = tensor.expand_shape %[[K]]
// CHECK: tensor.extract_slice %[[KVIEW]][%{{.*}}, 0, %[[H]], 0] [1, %{{.*}}, 1, 4] [1, 1, 1, 1] : tensor<64x16x2x4xf32> to tensor<?x1x4xf32>
// CHECK: math.exp
// CHECK: %[[AT:.*]] = arith.subi %[[U]], %[[B]]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[AT]], 0] [1, 8]
func.func @paged_attention_units(%q: tensor<4x16xf32>, %k: tensor<64x16x8xf32>, %v: tensor<64x16x8xf32>,
                                 %tables: tensor<4x2xi32>, %pos: tensor<4xi32>, %b: index, %e: index) -> tensor<?x8xf32> {
  %o = quill.paged_attention %q, %k, %v through %tables at %pos tile [%b, %e] {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<4x16xf32>, tensor<64x16x8xf32>, tensor<4x2xi32>, tensor<4xi32> -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

// rope with per-row positions: row t rotates by positions[t].
// CHECK-LABEL: func.func @rope_positions
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>, %[[POS:[^:]+]]: tensor<4xi32>)
// CHECK: linalg.generic
// CHECK: %[[T:.*]] = linalg.index 0
// CHECK: %[[P:.*]] = tensor.extract %[[POS]][%[[T]]]
// CHECK: arith.index_cast %[[P]]
// CHECK: math.cos
func.func @rope_positions(%x: tensor<4x8xf32>, %pos: tensor<4xi32>) -> tensor<4x8xf32> {
  %r = quill.rope %x at %pos {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<4x8xf32>, tensor<4xi32>
  return %r : tensor<4x8xf32>
}

// -----

// rope over a batch step's live rows: the table of cos and sin is built row
// by row, each row's pairs as one vector (here 2 pairs), so that every row
// is the same code whatever the live row count (a [rows, pairs] generic let
// LLVM vectorize across rows, libmvec for some rows and libm for others).
// Then each row's heads rotate in vectors of head_dim 4: the pairs' cos and
// sin doubled ([c0, c0, c1, c1]), the partners swapped ([x1, x0, x3, x2]),
// and the even lanes take x * cos - partner * sin, the odd ones
// x * cos + partner * sin (rotateWith's products, difference and sum).
// CHECK-LABEL: func.func @rope_live_rows
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>, %[[POS:[^:]+]]: tensor<4xi32>, %[[N:[^:]+]]: index)
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// CHECK: tensor.extract %[[POS]][%[[T]]]
// CHECK: %[[COSV:.*]] = math.cos {{.*}} : vector<2xf32>
// CHECK: %[[SINV:.*]] = math.sin {{.*}} : vector<2xf32>
// CHECK: vector.transfer_write %[[COSV]], {{.*}}[%[[T]], %{{.*}}]
// CHECK: vector.transfer_write %[[SINV]], {{.*}}[%[[T]], %{{.*}}]
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[R:[^ ]+]] = {{.*}} iter_args(%[[ROWS:[^ ]+]] =
// CHECK: scf.for %[[H:[^ ]+]] = %{{.*}} to %c2{{.*}} step %c1{{.*}} iter_args(%[[OUT:[^ ]+]] = %[[ROWS]])
// CHECK: %[[COL:.*]] = arith.muli %[[H]], %c4
// CHECK: %[[XV:.*]] = vector.transfer_read %[[X]][%[[R]], %[[COL]]]{{.*}} : tensor<4x8xf32>, vector<4xf32>
// CHECK: %[[CH:.*]] = vector.transfer_read %{{.*}}[%[[R]], %c0{{.*}} : tensor<?x2xf32>, vector<2xf32>
// CHECK: %[[C:.*]] = vector.shuffle %[[CH]], %[[CH]] [0, 0, 1, 1]
// CHECK: %[[SH:.*]] = vector.transfer_read %{{.*}}[%[[R]], %c0{{.*}} : tensor<?x2xf32>, vector<2xf32>
// CHECK: %[[S:.*]] = vector.shuffle %[[SH]], %[[SH]] [0, 0, 1, 1]
// CHECK: %[[P:.*]] = vector.shuffle %[[XV]], %[[XV]] [1, 0, 3, 2]
// CHECK: %[[OWN:.*]] = arith.mulf %[[XV]], %[[C]] : vector<4xf32>
// CHECK: %[[CROSS:.*]] = arith.mulf %[[P]], %[[S]] : vector<4xf32>
// CHECK: %[[DIFF:.*]] = arith.subf %[[OWN]], %[[CROSS]] : vector<4xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[OWN]], %[[CROSS]] : vector<4xf32>
// CHECK: %[[ROT:.*]] = vector.shuffle %[[DIFF]], %[[SUM]] [0, 5, 2, 7]
// CHECK: vector.transfer_write %[[ROT]], %[[OUT]][%[[R]], %[[COL]]]
func.func @rope_live_rows(%x: tensor<4x8xf32>, %pos: tensor<4xi32>, %n: index) -> tensor<4x8xf32> {
  %r = quill.rope %x at %pos rows %n {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<4x8xf32>, tensor<4xi32>
  return %r : tensor<4x8xf32>
}

// -----

// linear with live rows: floor(rows / 2) whole register tiles of 2 token
// rows, then the rest one token row per tile (the same sums per element).
// CHECK-LABEL: func.func @live_rows
// CHECK-SAME: (%[[X:[^:]+]]: tensor<32x16xf32>, %[[W:[^:]+]]: tensor<8x16xf32>, %[[N:[^:]+]]: index)
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[LIVE:.*]] = arith.minui %[[N]], %[[C32]]
// CHECK: %[[TILES:.*]] = arith.divui %[[LIVE]], %[[C2]]
// CHECK: %[[TAIL:.*]] = arith.remui %[[LIVE]], %[[C2]]
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[TILES]]
// CHECK-COUNT-16: vector.fma
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[TAIL]]
// CHECK-COUNT-8: vector.fma
// CHECK-NOT: vector.fma
// CHECK: return
func.func @live_rows(%x: tensor<32x16xf32>, %w: tensor<8x16xf32>, %n: index) -> tensor<32x8xf32> {
  %y = quill.linear %x, %w rows %n : tensor<32x16xf32>, tensor<8x16xf32> -> tensor<32x8xf32>
  return %y : tensor<32x8xf32>
}

// -----

// The epilogues of a linear with live rows run on those rows only: the
// SwiGLU row by row over the live rows, each written into its row of one
// empty tensor of all rows carried through the loop (the result itself, so
// that empty-tensor elimination makes it the kernel's output: no buffer
// whose every row is copied out).
// CHECK-LABEL: func.func @live_rows_swiglu
// CHECK-SAME: (%[[X:[^:]+]]: tensor<32x16xf32>, %[[W:[^:]+]]: tensor<8x16xf32>, %[[N:[^:]+]]: index)
// CHECK: %[[WHOLE:.*]] = tensor.empty() : tensor<32x4xf32>
// CHECK: %[[ROWS:.*]] = scf.for %[[T:[^ ]+]] = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[ACC:[^ ]+]] = %[[WHOLE]]) -> (tensor<32x4xf32>)
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[ACC]][%[[T]], 0] [1, 4] [1, 1]
// CHECK: %[[ACT:.*]] = linalg.generic {{.*}} outs(%[[ROW]] : tensor<1x4xf32>)
// CHECK: math.exp
// CHECK: tensor.insert_slice %[[ACT]] into %[[ACC]][%[[T]], 0] [1, 4] [1, 1]
// CHECK-NOT: bufferization.alloc_tensor() : tensor<32x4xf32>
// CHECK: return %[[ROWS]]
func.func @live_rows_swiglu(%x: tensor<32x16xf32>, %w: tensor<8x16xf32>, %n: index) -> tensor<32x4xf32> {
  %y = quill.linear %x, %w rows %n {swiglu} : tensor<32x16xf32>, tensor<8x16xf32> -> tensor<32x4xf32>
  return %y : tensor<32x4xf32>
}

// -----

// A width the register tiles do not fit (20): the plain form, over the live
// rows only (a batch of one must not pay for all 32 rows).
// CHECK-LABEL: func.func @linear_rows_plain
// CHECK-SAME: (%[[X:[^:]+]]: tensor<32x20xf32>, %[[W:[^:]+]]: tensor<8x20xf32>, %[[N:[^:]+]]: index)
// CHECK: %[[LIVE:.*]] = arith.minui %[[N]], %c32 : index
// CHECK: %[[OUT:.*]] = linalg.fill {{.*}} -> tensor<32x8xf32>
// CHECK: %[[XS:.*]] = tensor.extract_slice %[[X]][0, 0] [%[[LIVE]], 20] [1, 1] : tensor<32x20xf32> to tensor<?x20xf32>
// CHECK: %[[OS:.*]] = tensor.extract_slice %[[OUT]][0, 0] [%[[LIVE]], 8] [1, 1]
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[XS]], %[[W]] : tensor<?x20xf32>, tensor<8x20xf32>)
// CHECK: tensor.insert_slice %[[Y]] into %[[OUT]][0, 0] [%[[LIVE]], 8] [1, 1] : tensor<?x8xf32> into tensor<32x8xf32>
func.func @linear_rows_plain(%x: tensor<32x20xf32>, %w: tensor<8x20xf32>, %n: index) -> tensor<32x8xf32> {
  %y = quill.linear %x, %w rows %n : tensor<32x20xf32>, tensor<8x20xf32> -> tensor<32x8xf32>
  return %y : tensor<32x8xf32>
}

// -----

// Encoded weights with live rows: with exactly one live row, the whole
// tiles' rows (here all 8) take the matrix-vector form that decodes each
// Q8_0 block in registers into one FMA chain per row (4 rows per block of
// the loop, two 16-lane FMAs per 32-weight block, no buffer), and the tiles
// get none of them; with more, the tiles get all the rows.
// CHECK-LABEL: func.func @live_rows_decoded
// CHECK-SAME: %[[N:[^:]+]]: index)
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %[[N]], %c1
// CHECK: %[[MATVEC:.*]] = arith.select %[[ONE]], %c8, %c0
// CHECK: arith.divui %[[MATVEC]], %c4
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK-COUNT-8: vector.fma
// CHECK: vector.reduction <add>
// CHECK: arith.subi %c8, %[[MATVEC]]
// CHECK: return
func.func @live_rows_decoded(%x: tensor<32x64xf32>, %bytes: tensor<8x68xi8>, %n: index) -> tensor<32x8xf32> {
  %w = quill.weight_view %bytes : tensor<8x68xi8> -> tensor<8x64x!quill.q8_0>
  %y = quill.linear %x, %w rows %n : tensor<32x64xf32>, tensor<8x64x!quill.q8_0> -> tensor<32x8xf32>
  return %y : tensor<32x8xf32>
}
