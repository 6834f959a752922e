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
