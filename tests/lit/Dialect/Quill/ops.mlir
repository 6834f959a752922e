// Round trip of every quill op and attribute: custom form, and generic form
// read back into the custom form.
// RUN: quill-opt %s -split-input-file | quill-opt -split-input-file | FileCheck %s
// RUN: quill-opt %s -split-input-file -mlir-print-op-generic | quill-opt -split-input-file | FileCheck %s

// State ops: a named weight, the two caches of a layer and a cache write.
// CHECK-LABEL: func.func @state
// CHECK-SAME: (%[[ROW:[^:]+]]: tensor<4xf32>, %[[POS:[^:]+]]: index)
// CHECK: %[[W:.*]] = quill.weight "layers.0.wq" : tensor<8x8xf32>
// CHECK: %[[K:.*]] = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
// CHECK: %[[V:.*]] = quill.kv_cache "value" layer 3 : tensor<32x4xf32>
// CHECK: %[[K1:.*]] = quill.kv_write %[[ROW]] into %[[K]] at %[[POS]] : tensor<4xf32> into tensor<32x4xf32>
// CHECK: return %[[W]], %[[K1]], %[[V]]
func.func @state(%row: tensor<4xf32>, %pos: index) -> (tensor<8x8xf32>, tensor<32x4xf32>, tensor<32x4xf32>) {
  %w = quill.weight "layers.0.wq" : tensor<8x8xf32>
  %k = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
  %v = quill.kv_cache "value" layer 3 : tensor<32x4xf32>
  %k1 = quill.kv_write %row into %k at %pos : tensor<4xf32> into tensor<32x4xf32>
  return %w, %k1, %v : tensor<8x8xf32>, tensor<32x4xf32>, tensor<32x4xf32>
}

// -----

// Embedding lookup and rmsnorm with its eps attribute.
// CHECK-LABEL: func.func @embedding_rmsnorm
// CHECK-SAME: (%[[TABLE:[^:]+]]: tensor<16x8xf32>, %[[NW:[^:]+]]: tensor<8xf32>, %[[TOK:[^:]+]]: index)
// CHECK: %[[X:.*]] = quill.embedding %[[TABLE]][%[[TOK]]] : tensor<16x8xf32> -> tensor<8xf32>
// CHECK: %[[H:.*]] = quill.rmsnorm %[[X]], %[[NW]] {eps = 9.99999974E-6 : f32} : tensor<8xf32>, tensor<8xf32>
// CHECK: return %[[H]]
func.func @embedding_rmsnorm(%table: tensor<16x8xf32>, %nw: tensor<8xf32>, %tok: index) -> tensor<8xf32> {
  %x = quill.embedding %table[%tok] : tensor<16x8xf32> -> tensor<8xf32>
  %h = quill.rmsnorm %x, %nw {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<8xf32>
  return %h : tensor<8xf32>
}

// -----

// Linear and logits, whole and tiled to rows [b, e) with a dynamic result.
// CHECK-LABEL: func.func @matvec
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8xf32>, %[[W:[^:]+]]: tensor<4x8xf32>, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK: %[[Y:.*]] = quill.linear %[[X]], %[[W]] : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
// CHECK: %[[YT:.*]] = quill.linear %[[X]], %[[W]] tile[%[[B]], %[[E]]] : tensor<8xf32>, tensor<4x8xf32> -> tensor<?xf32>
// CHECK: %[[L:.*]] = quill.logits %[[X]], %[[W]] : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
// CHECK: %[[LT:.*]] = quill.logits %[[X]], %[[W]] tile[%[[B]], %[[E]]] : tensor<8xf32>, tensor<4x8xf32> -> tensor<?xf32>
// CHECK: return %[[Y]], %[[YT]], %[[L]], %[[LT]]
func.func @matvec(%x: tensor<8xf32>, %w: tensor<4x8xf32>, %b: index, %e: index)
    -> (tensor<4xf32>, tensor<?xf32>, tensor<4xf32>, tensor<?xf32>) {
  %y = quill.linear %x, %w : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %yt = quill.linear %x, %w tile[%b, %e] : tensor<8xf32>, tensor<4x8xf32> -> tensor<?xf32>
  %l = quill.logits %x, %w : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %lt = quill.logits %x, %w tile[%b, %e] : tensor<8xf32>, tensor<4x8xf32> -> tensor<?xf32>
  return %y, %yt, %l, %lt : tensor<4xf32>, tensor<?xf32>, tensor<4xf32>, tensor<?xf32>
}

// -----

// Rotary embedding with its head_dim and theta.
// CHECK-LABEL: func.func @rope
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<8xf32>, %[[POS:[^:]+]]: index)
// CHECK: %[[R:.*]] = quill.rope %[[Q]] at %[[POS]] {head_dim = 4 : i64, theta = 5.000000e+05 : f32} : tensor<8xf32>
// CHECK: return %[[R]]
func.func @rope(%q: tensor<8xf32>, %pos: index) -> tensor<8xf32> {
  %r = quill.rope %q at %pos {head_dim = 4 : i64, theta = 5.0e+05 : f32} : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Attention, whole and tiled, with grouped kv heads.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<8xf32>, %[[K:[^:]+]]: tensor<32x4xf32>, %[[V:[^:]+]]: tensor<32x4xf32>, %[[POS:[^:]+]]: index, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK: %[[O:.*]] = quill.attention %[[Q]], %[[K]], %[[V]] at %[[POS]] {num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<8xf32>
// CHECK: %[[OT:.*]] = quill.attention %[[Q]], %[[K]], %[[V]] at %[[POS]] tile[%[[B]], %[[E]]] {num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<?xf32>
// CHECK: return %[[O]], %[[OT]]
func.func @attention(%q: tensor<8xf32>, %k: tensor<32x4xf32>, %v: tensor<32x4xf32>, %pos: index,
                     %b: index, %e: index) -> (tensor<8xf32>, tensor<?xf32>) {
  %o = quill.attention %q, %k, %v at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<8xf32>
  %ot = quill.attention %q, %k, %v at %pos tile[%b, %e] {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<?xf32>
  return %o, %ot : tensor<8xf32>, tensor<?xf32>
}

// -----

// The elementwise ops: swiglu and the residual add.
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[A:[^:]+]]: tensor<8xf32>, %[[B:[^:]+]]: tensor<8xf32>)
// CHECK: %[[G:.*]] = quill.swiglu %[[A]], %[[B]] : tensor<8xf32>
// CHECK: %[[S:.*]] = quill.add %[[G]], %[[A]] : tensor<8xf32>
// CHECK: return %[[S]]
func.func @elementwise(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %g = quill.swiglu %a, %b : tensor<8xf32>
  %s = quill.add %g, %a : tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// A schedule with its memory plan and dispatches over every memory space.
// CHECK-LABEL: quill.schedule "step" attributes
// CHECK-SAME: kv_bytes = 1024 : i64
// CHECK-SAME: logits = #quill.binding<"scratch", 64, 64>
// CHECK-SAME: scratch_bytes = 128 : i64
// CHECK-SAME: weight_bytes = 512 : i64
// CHECK-SAME: weight_offsets = {tok_embeddings = 0 : i64}
// CHECK-NEXT: quill.dispatch @embedding_16x8([#quill.binding<"weights", 0, 512>, #quill.binding<"scratch", 0, 32>]) work(1, 1)
// CHECK-NEXT: quill.dispatch @kv_write_8_32x8([#quill.binding<"scratch", 0, 32>, #quill.binding<"kv", 0, 1024>]) work(1, 1)
// CHECK-NEXT: quill.dispatch @logits_8_16x8([#quill.binding<"scratch", 0, 32>, #quill.binding<"weights", 0, 512>, #quill.binding<"scratch", 64, 64>]) work(16, 4)
// CHECK-NEXT: }
quill.schedule "step" attributes {kv_bytes = 1024 : i64, logits = #quill.binding<"scratch", 64, 64>,
    scratch_bytes = 128 : i64, weight_bytes = 512 : i64, weight_offsets = {tok_embeddings = 0 : i64}} {
  quill.dispatch @embedding_16x8([#quill.binding<"weights", 0, 512>, #quill.binding<"scratch", 0, 32>]) work(1, 1)
  quill.dispatch @kv_write_8_32x8([#quill.binding<"scratch", 0, 32>, #quill.binding<"kv", 0, 1024>]) work(1, 1)
  quill.dispatch @logits_8_16x8([#quill.binding<"scratch", 0, 32>, #quill.binding<"weights", 0, 512>,
                                  #quill.binding<"scratch", 64, 64>]) work(16, 4)
}

// -----

// A binding is an ordinary attribute and can appear anywhere.
// CHECK-LABEL: func.func @binding_attr
// CHECK-SAME: attributes {where = #quill.binding<"kv", 128, 4096>}
func.func @binding_attr() attributes {where = #quill.binding<"kv", 128, 4096>} {
  return
}
