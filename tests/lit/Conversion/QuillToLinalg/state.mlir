// quill-lower-to-linalg on quill.embedding and quill.kv_write: tensor slices
// of the table and of the cache.
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s --enable-var-scope

// embedding: the rank-reducing slice of row `token` of the table.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:[^:]+]]: tensor<16x8xf32>, %[[TOK:[^:]+]]: index)
// CHECK-NEXT: %[[X:.*]] = tensor.extract_slice %[[T]][%[[TOK]], 0] [1, 8] [1, 1] : tensor<16x8xf32> to tensor<8xf32>
// CHECK-NEXT: return %[[X]]
func.func @embedding(%t: tensor<16x8xf32>, %tok: index) -> tensor<8xf32> {
  %x = quill.embedding %t[%tok] : tensor<16x8xf32> -> tensor<8xf32>
  return %x : tensor<8xf32>
}

// -----

// kv_write: the row is inserted as row `pos` of the cache.
// CHECK-LABEL: func.func @kv_write
// CHECK-SAME: (%[[ROW:[^:]+]]: tensor<4xf32>, %[[C:[^:]+]]: tensor<32x4xf32>, %[[POS:[^:]+]]: index)
// CHECK-NEXT: %[[C1:.*]] = tensor.insert_slice %[[ROW]] into %[[C]][%[[POS]], 0] [1, 4] [1, 1] : tensor<4xf32> into tensor<32x4xf32>
// CHECK-NEXT: return %[[C1]]
func.func @kv_write(%row: tensor<4xf32>, %c: tensor<32x4xf32>, %pos: index) -> tensor<32x4xf32> {
  %c1 = quill.kv_write %row into %c at %pos : tensor<4xf32> into tensor<32x4xf32>
  return %c1 : tensor<32x4xf32>
}

// -----

// Must not fire: quill.weight and quill.kv_cache have no lowering and are left
// as they are (outside kernels); the ops using them are lowered.
// CHECK-LABEL: func.func @state_ops_kept
// CHECK-SAME: (%[[ROW:[^:]+]]: tensor<4xf32>, %[[TOK:[^:]+]]: index, %[[POS:[^:]+]]: index)
// CHECK-DAG: %[[T:.*]] = quill.weight "tok_embeddings" : tensor<16x8xf32>
// CHECK-DAG: %[[C:.*]] = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
// CHECK-DAG: %[[X:.*]] = tensor.extract_slice %[[T]][%[[TOK]], 0] [1, 8] [1, 1]
// CHECK-DAG: %[[C1:.*]] = tensor.insert_slice %[[ROW]] into %[[C]][%[[POS]], 0] [1, 4] [1, 1]
// CHECK: return %[[X]], %[[C1]], %[[T]]
func.func @state_ops_kept(%row: tensor<4xf32>, %tok: index, %pos: index)
    -> (tensor<8xf32>, tensor<32x4xf32>, tensor<16x8xf32>) {
  %t = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %c = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
  %x = quill.embedding %t[%tok] : tensor<16x8xf32> -> tensor<8xf32>
  %c1 = quill.kv_write %row into %c at %pos : tensor<4xf32> into tensor<32x4xf32>
  return %x, %c1, %t : tensor<8xf32>, tensor<32x4xf32>, tensor<16x8xf32>
}

// -----

// Must not fire: a schedule and its dispatches are left alone.
// CHECK-LABEL: quill.schedule "step"
// CHECK-NEXT: quill.dispatch @k([#quill.binding<"scratch", 0, 32>]) work(1, 1)
quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 32>,
    scratch_bytes = 64 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
  quill.dispatch @k([#quill.binding<"scratch", 0, 32>]) work(1, 1)
}

// -----

// Tiled kv_write (a prefill's rows on the GPU): rows [b, e) of the chunk
// into cache rows pos + b .. pos + e - 1; the result is the whole cache.
// CHECK-LABEL: func.func @write_tiled
// CHECK-SAME: (%[[R:[^:]+]]: tensor<4x8xf32>, %[[C:[^:]+]]: tensor<32x8xf32>, %[[POS:[^:]+]]: index, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK: %[[AT:.*]] = arith.addi %[[POS]], %[[B]] : index
// CHECK: %[[N:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[R]][%[[B]], 0] [%[[N]], 8] [1, 1] : tensor<4x8xf32> to tensor<?x8xf32>
// CHECK: %[[NEW:.*]] = tensor.insert_slice %[[ROWS]] into %[[C]][%[[AT]], 0] [%[[N]], 8] [1, 1] : tensor<?x8xf32> into tensor<32x8xf32>
// CHECK: return %[[NEW]] : tensor<32x8xf32>
func.func @write_tiled(%r: tensor<4x8xf32>, %c: tensor<32x8xf32>, %pos: index, %b: index, %e: index) -> tensor<32x8xf32> {
  %k = quill.kv_write %r into %c at %pos tile[%b, %e] : tensor<4x8xf32> into tensor<32x8xf32>
  return %k : tensor<32x8xf32>
}

// -----

// Tiled embeddings: token rows [b, e), row t of the tile is token b + t.
// CHECK-LABEL: func.func @embeddings_tiled
// CHECK-SAME: (%[[T:[^:]+]]: tensor<16x8xf32>, %[[IDS:[^:]+]]: tensor<4xi32>, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK: %[[N:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[N]]) : tensor<?x8xf32>
// CHECK: linalg.generic {{.*}} outs(%[[EMPTY]] : tensor<?x8xf32>)
// CHECK: %[[ROW:.*]] = linalg.index 0 : index
// CHECK: %[[TOKEN:.*]] = arith.addi %[[ROW]], %[[B]] : index
// CHECK: tensor.extract %[[IDS]][%[[TOKEN]]] : tensor<4xi32>
func.func @embeddings_tiled(%t: tensor<16x8xf32>, %ids: tensor<4xi32>, %b: index, %e: index) -> tensor<?x8xf32> {
  %x = quill.embeddings %t[%ids] tile[%b, %e] : tensor<16x8xf32>, tensor<4xi32> -> tensor<?x8xf32>
  return %x : tensor<?x8xf32>
}

// -----

// Tiled embedding (the decode step on the GPU): elements [b, e) of the row.
// CHECK-LABEL: func.func @embedding_tiled
// CHECK-SAME: (%[[T:[^:]+]]: tensor<16x8xf32>, %[[TOKEN:[^:]+]]: index, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK: %[[N:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK: tensor.extract_slice %[[T]][%[[TOKEN]], %[[B]]] [1, %[[N]]] [1, 1] : tensor<16x8xf32> to tensor<?xf32>
func.func @embedding_tiled(%t: tensor<16x8xf32>, %token: index, %b: index, %e: index) -> tensor<?xf32> {
  %x = quill.embedding %t[%token] tile[%b, %e] : tensor<16x8xf32> -> tensor<?xf32>
  return %x : tensor<?xf32>
}
