// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels=vector-width=16 --quill-lower-to-linalg --canonicalize --cse -verify-diagnostics | FileCheck %s
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg -verify-diagnostics | FileCheck %s --check-prefix=NEUTRAL
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=16 attention-row-blocks=false" --quill-lower-to-linalg --canonicalize --cse -verify-diagnostics | FileCheck %s --check-prefix=ROWS
// The neutral lowering alone: generic forms, no vectors.
// NEUTRAL-NOT: vector.

// T token rows through a linear layer: a register-tiled matmul, 2 tokens x 8
// weight rows, 16 vector<16xf32> accumulators carried over the width; each
// weight row is loaded once per token block, not once per token.
// CHECK-LABEL: func.func @matmul_blocked
// CHECK: scf.for %{{.*}} = %c0 to %c3 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK: %[[ACC:.*]]:16 = scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args
// CHECK-COUNT-10: vector.transfer_read
// CHECK-COUNT-16: vector.fma
// CHECK-COUNT-2: vector.from_elements
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @matmul_blocked(%x: tensor<8x32xf32>, %w: tensor<24x32xf32>) -> tensor<8x24xf32> {
  %y = quill.linear %x, %w : tensor<8x32xf32>, tensor<24x32xf32> -> tensor<8x24xf32>
  return %y : tensor<8x24xf32>
}

// -----

// Must not take the blocked form: the width is no multiple of 16.
// CHECK-LABEL: func.func @matmul_odd_width
// CHECK-NOT: vector.
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
func.func @matmul_odd_width(%x: tensor<8x24xf32>, %w: tensor<20x24xf32>) -> tensor<8x20xf32> {
  %y = quill.linear %x, %w : tensor<8x24xf32>, tensor<20x24xf32> -> tensor<8x20xf32>
  return %y : tensor<8x20xf32>
}

// -----

// Causal attention of T query rows: row t sees positions 0..pos+t. Kv head
// by kv head (outermost, so one head's keys and values stay in cache), then
// row by row (heads of 2 take no row blocks).
// CHECK-LABEL: func.func @attention_rows
// CHECK-SAME: %[[POS:[^:]*]]: index
// CHECK: scf.for %[[H:.*]] = %c0 to %c2 step %c1
// CHECK: %[[COL:.*]] = arith.muli %[[H]], %c4
// CHECK: scf.for %[[T:.*]] = %c0 to %c4 step %c1
// CHECK: %[[P:.*]] = arith.addi %[[POS]], %[[T]]
// CHECK: arith.addi %[[P]], %c1
// CHECK: math.exp
// CHECK: tensor.insert_slice {{.*}}[%[[T]], %[[COL]]] [1, 4] [1, 1]
func.func @attention_rows(%q: tensor<4x8xf32>, %k: tensor<32x4xf32>, %v: tensor<32x4xf32>, %pos: index) -> tensor<4x8xf32> {
  %o = quill.attention %q, %k, %v at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<4x8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

// -----

// Heads of 32 over an f16 cache: the rows are taken in blocks (here all 4
// rows, 4 x 2 query heads of one kv head as one group of 8), so each key and
// value row is read once for the block. Scores run to the block's last
// position, pos + 4; entry e (row e / 2) masks its later positions to -inf,
// which exp turns into exact zeros.
// CHECK-LABEL: func.func @attention_row_blocks
// CHECK-SAME: %[[POS:[^:]*]]: index
// CHECK: scf.for %[[H:.*]] = %c0 to %c2 step %c1
// CHECK: %[[COL:.*]] = arith.muli %[[H]], %c64
// CHECK: %[[END:.*]] = arith.addi %[[POS]], %c4
// CHECK: tensor.extract_slice %{{.*}}[0, %[[COL]]] [4, 64] [1, 1] : tensor<4x128xf32> to tensor<4x64xf32>
// CHECK: tensor.expand_shape {{.*}} output_shape [1, 8, 32] : tensor<256xf32> into tensor<1x8x32xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, %[[H]], 0] [%[[END]], 1, 32]
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%c0, %c7, %{{.*}}] : vector<16xf32>, tensor<1x8x?xf32>
// CHECK: linalg.generic
// CHECK: %[[E:.*]] = linalg.index 1
// CHECK: %[[P:.*]] = linalg.index 2
// CHECK: %[[ROW:.*]] = arith.divui %[[E]], %c2
// CHECK: %[[LAST:.*]] = arith.addi %[[POS]], %[[ROW]]
// CHECK: %[[LATER:.*]] = arith.cmpi ugt, %[[P]], %[[LAST]]
// CHECK: arith.select %[[LATER]], %cst, %{{.*}}
// CHECK: math.exp
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: arith.divf
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, %[[COL]]] [4, 64] [1, 1] : tensor<4x64xf32> into tensor<4x128xf32>
// Without row blocks: one row at a time, inside the loop over kv heads.
// ROWS-LABEL: func.func @attention_row_blocks
// ROWS: scf.for %[[H:.*]] = %c0 to %c2 step %c1
// ROWS: scf.for %[[T:.*]] = %c0 to %c4 step %c1
// ROWS-NOT: arith.cmpi ugt
// ROWS: tensor.insert_slice %{{.*}} into %{{.*}}[%[[T]], %{{.*}}] [1, 64] [1, 1] : tensor<1x64xf32> into tensor<4x128xf32>
func.func @attention_row_blocks(%q: tensor<4x128xf32>, %k: tensor<32x64xf16>, %v: tensor<32x64xf16>, %pos: index) -> tensor<4x128xf32> {
  %o = quill.attention %q, %k, %v at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<4x128xf32>, tensor<32x64xf16>, tensor<32x64xf16> -> tensor<4x128xf32>
  return %o : tensor<4x128xf32>
}

// -----

// Two blocks of 4 rows over a tile of kv heads [%b, %e): block i starts at
// row t0 = 4i, its scores run to pos + t0 + 4 and entry e masks the
// positions past pos + t0 + e / 2; the query is read at the kv head's
// absolute column ((%b + k) x 64), the result stored at the tile's (k x 64).
// CHECK-LABEL: func.func @attention_two_row_blocks
// CHECK-SAME: %[[POS:[^:]*]]: index, %[[B:[^:]*]]: index, %[[E:[^:]*]]: index
// CHECK: scf.for %[[K:.*]] = %c0 to %{{.*}} step %c1
// CHECK: %[[HEAD:.*]] = arith.addi %[[B]], %[[K]]
// CHECK: %[[COL:.*]] = arith.muli %[[K]], %c64
// CHECK: scf.for %[[I:.*]] = %c0 to %c2 step %c1
// CHECK: %[[T0:.*]] = arith.muli %[[I]], %c4
// CHECK: %[[FIRST:.*]] = arith.addi %[[POS]], %[[T0]]
// CHECK: %[[END:.*]] = arith.addi %[[FIRST]], %c4
// CHECK: %[[QCOL:.*]] = arith.muli %[[HEAD]], %c64
// CHECK: tensor.extract_slice %{{.*}}[%[[T0]], %[[QCOL]]] [4, 64] [1, 1] : tensor<8x128xf32> to tensor<4x64xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, %[[HEAD]], 0] [%[[END]], 1, 32]
// CHECK: %[[E2:.*]] = linalg.index 1
// CHECK: %[[P:.*]] = linalg.index 2
// CHECK: %[[ROW:.*]] = arith.divui %[[E2]], %c2
// CHECK: %[[LAST:.*]] = arith.addi %[[FIRST]], %[[ROW]]
// CHECK: arith.cmpi ugt, %[[P]], %[[LAST]]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[T0]], %[[COL]]] [4, 64] [1, 1] : tensor<4x64xf32> into tensor<8x?xf32>
func.func @attention_two_row_blocks(%q: tensor<8x128xf32>, %k: tensor<32x64xf16>, %v: tensor<32x64xf16>, %pos: index, %b: index, %e: index) -> tensor<8x?xf32> {
  %o = quill.attention %q, %k, %v at %pos tile[%b, %e] {num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<8x128xf32>, tensor<32x64xf16>, tensor<32x64xf16> -> tensor<8x?xf32>
  return %o : tensor<8x?xf32>
}

// -----

// Rotary embedding of rows: row t is at position pos + t.
// CHECK-LABEL: func.func @rope_rows
// CHECK-SAME: %[[POS:[^:]*]]: index
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: %[[T:.*]] = linalg.index 0
// CHECK: arith.addi %[[POS]], %[[T]]
// CHECK: math.cos
func.func @rope_rows(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  %r = quill.rope %x at %pos {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// T rows into the cache at pos .. pos + T - 1; T token ids gathered.
// CHECK-LABEL: func.func @state_rows
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<4xi32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%{{.*}}, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<32x8xf32>
// CHECK: linalg.generic
// CHECK: tensor.extract %[[TOK]]
// CHECK: arith.index_cast
func.func @state_rows(%rows: tensor<4x8xf32>, %cache: tensor<32x8xf32>, %pos: index, %table: tensor<16x8xf32>, %tokens: tensor<4xi32>) -> (tensor<32x8xf32>, tensor<4x8xf32>) {
  %c = quill.kv_write %rows into %cache at %pos : tensor<4x8xf32> into tensor<32x8xf32>
  %e = quill.embeddings %table[%tokens] : tensor<16x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  return %c, %e : tensor<32x8xf32>, tensor<4x8xf32>
}

// -----

// A 2048-wide matmul in two panels of 1024 columns (the outer loop): each
// panel's dot products are added into the zero-filled output.
// CHECK-LABEL: func.func @matmul_panels
// CHECK: linalg.fill
// CHECK: scf.for %[[P:.*]] = %c0 to %c2 step %c1
// CHECK: %[[FIRST:.*]] = arith.muli %[[P]], %c64
// CHECK: arith.minui
// CHECK: vector.fma
// CHECK: %[[OLD:.*]] = vector.transfer_read {{.*}} : tensor<8x8xf32>, vector<8xf32>
// CHECK: arith.addf %[[OLD]], %{{.*}} : vector<8xf32>
func.func @matmul_panels(%x: tensor<8x2048xf32>, %w: tensor<8x2048xf32>) -> tensor<8x8xf32> {
  %y = quill.linear %x, %w : tensor<8x2048xf32>, tensor<8x2048xf32> -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// tile_rows (the GPU's tiling): units [b, e) of (query row, kv head); unit
// u is query row u / 2 at position pos + u / 2, the query heads of kv head
// u mod 2, into row u - b of the [e - b, 4] result.
// CHECK-LABEL: func.func @attention_row_tile
// CHECK-SAME: %[[POS:[^:]*]]: index, %[[B:[^:]*]]: index, %[[E:[^:]*]]: index
// CHECK: %[[N:.*]] = arith.subi %[[E]], %[[B]]
// CHECK: scf.for %[[I:.*]] = %c0 to %[[N]] step %c1
// CHECK: %[[U:.*]] = arith.addi %[[B]], %[[I]]
// CHECK: %[[T:.*]] = arith.divui %[[U]], %c2
// CHECK: %[[K:.*]] = arith.remui %[[U]], %c2
// CHECK: arith.addi %[[POS]], %[[T]]
// CHECK: math.exp
// CHECK: tensor.insert_slice {{.*}}[%[[I]], 0] [1, 4] [1, 1]
func.func @attention_row_tile(%q: tensor<4x8xf32>, %k: tensor<32x4xf32>, %v: tensor<32x4xf32>,
                              %pos: index, %b: index, %e: index) -> tensor<?x4xf32> {
  %o = quill.attention %q, %k, %v at %pos tile[%b, %e] {num_heads = 4 : i64, num_kv_heads = 2 : i64, tile_rows}
      : tensor<4x8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}

// -----

// A tile_rows result row is one kv head's query heads (4 here), not a row.
func.func @attention_row_tile_width(%q: tensor<4x8xf32>, %k: tensor<32x4xf32>, %v: tensor<32x4xf32>,
                                    %pos: index, %b: index, %e: index) -> tensor<?x8xf32> {
  // expected-error @+1 {{result rows have 8 elements but a kv head's query heads have 4}}
  %o = quill.attention %q, %k, %v at %pos tile[%b, %e] {num_heads = 4 : i64, num_kv_heads = 2 : i64, tile_rows}
      : tensor<4x8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

// tile_rows needs a tile and a [T, width] query.
func.func @attention_row_tile_untiled(%q: tensor<4x8xf32>, %k: tensor<32x4xf32>, %v: tensor<32x4xf32>,
                                      %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{tile_rows needs a tile and a [T, width] query}}
  %o = quill.attention %q, %k, %v at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, tile_rows}
      : tensor<4x8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}
