// quill-outline-kernels: @step becomes a schedule of dispatches, a memory plan
// and one kernel per distinct op signature.
// RUN: quill-opt %s -split-input-file -verify-diagnostics --quill-outline-kernels \
// RUN:   | FileCheck %s --enable-var-scope
// RUN: quill-opt %s -split-input-file -verify-diagnostics --quill-outline-kernels=matvec-grain=4 \
// RUN:   | FileCheck %s --enable-var-scope --check-prefix=GRAIN4

// Memory plan: weights and scratch at 64-byte aligned offsets, a weight
// referenced twice by name (tied classifier) gets one offset, the logits land
// in scratch; dispatches keep the order of @step; @step is gone.
// CHECK-LABEL: quill.schedule "step" attributes
// CHECK-SAME: kv_bytes = 0 : i64
// CHECK-SAME: logits = #quill.binding<"scratch", 128, 64>
// CHECK-SAME: scratch_bytes = 192 : i64
// CHECK-SAME: weight_bytes = 576 : i64
// CHECK-SAME: weight_offsets = {norm = 512 : i64, tok_embeddings = 0 : i64}
// CHECK-NEXT: quill.dispatch @[[EMB:embedding_16x8]]([#quill.binding<"weights", 0, 512>, #quill.binding<"scratch", 0, 32>]) work(1, 1)
// CHECK-NEXT: quill.dispatch @[[NORM:rmsnorm_8_8]]([#quill.binding<"scratch", 0, 32>, #quill.binding<"weights", 512, 32>, #quill.binding<"scratch", 64, 32>]) work(1, 1)
// CHECK-NEXT: quill.dispatch @[[CLS:logits_8_16x8]]([#quill.binding<"scratch", 64, 32>, #quill.binding<"weights", 0, 512>, #quill.binding<"scratch", 128, 64>]) work(16, 16)
// CHECK-NEXT: }
// CHECK-NOT: func.func @step
// CHECK-DAG: func.func @[[EMB]](
// CHECK-DAG: func.func @[[NORM]](
// CHECK-DAG: func.func @[[CLS]](
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %nw = quill.weight "norm" : tensor<8xf32>
  %h = quill.rmsnorm %x, %nw {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<8xf32>
  %cls = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %l = quill.logits %h, %cls : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}

// -----

// Linears of one shape share a kernel (each dispatch binds its own weight);
// a linear of another shape does not. Matvec work is one unit per output row
// in chunks of matvec-grain rows, clamped to the row count.
// CHECK-LABEL: quill.schedule "step"
// CHECK-NEXT: quill.dispatch @embedding_64x8
// CHECK-NEXT: quill.dispatch @[[K4:linear_8_4x8]]([#quill.binding<"scratch", 0, 32>, #quill.binding<"weights", 2048, 128>, #quill.binding<"scratch", 64, 16>]) work(4, 4)
// CHECK-NEXT: quill.dispatch @[[K4]]([#quill.binding<"scratch", 0, 32>, #quill.binding<"weights", 2176, 128>, #quill.binding<"scratch", 128, 16>]) work(4, 4)
// CHECK-NEXT: quill.dispatch @[[K8:linear_8_8x8]]([#quill.binding<"scratch", 0, 32>, #quill.binding<"weights", 2304, 256>, #quill.binding<"scratch", 192, 32>]) work(8, 8)
// CHECK-NEXT: quill.dispatch @logits_8_64x8({{.*}}) work(64, 16)
// CHECK: func.func @[[K4]](%{{.*}}: memref<8xf32>, %{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4xf32>,
// CHECK-NOT: func.func @[[K4]]
// CHECK: func.func @[[K8]](%{{.*}}: memref<8xf32>, %{{.*}}: memref<8x8xf32>, %{{.*}}: memref<8xf32>,
// CHECK-NOT: func.func @linear
// GRAIN4-LABEL: quill.schedule "step"
// GRAIN4: quill.dispatch @linear_8_4x8({{.*}}) work(4, 4)
// GRAIN4: quill.dispatch @linear_8_4x8({{.*}}) work(4, 4)
// GRAIN4: quill.dispatch @linear_8_8x8({{.*}}) work(8, 4)
// GRAIN4: quill.dispatch @logits_8_64x8({{.*}}) work(64, 4)
func.func @step(%token: index, %pos: index) -> tensor<64xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<64x8xf32>
  %x = quill.embedding %emb[%token] : tensor<64x8xf32> -> tensor<8xf32>
  %wk = quill.weight "layers.0.wk" : tensor<4x8xf32>
  %wv = quill.weight "layers.0.wv" : tensor<4x8xf32>
  %wq = quill.weight "layers.0.wq" : tensor<8x8xf32>
  %k = quill.linear %x, %wk : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %v = quill.linear %x, %wv : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %q = quill.linear %x, %wq : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %l = quill.logits %q, %emb : tensor<8xf32>, tensor<64x8xf32> -> tensor<64xf32>
  return %l : tensor<64xf32>
}

// -----

// A tiled matvec kernel: the op computes rows [begin, end) and stores them
// into that subview of its output; token and pos are the first two indices.
// CHECK-LABEL: func.func @linear_8_12x8
// CHECK-SAME: (%[[X:[^:]+]]: memref<8xf32>, %[[W:[^:]+]]: memref<12x8xf32>, %[[Y:[^:]+]]: memref<12xf32>, %{{.*}}: index, %{{.*}}: index, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK-SAME: attributes {quill.kernel}
// CHECK-DAG: %[[XT:.*]] = bufferization.to_tensor %[[X]] restrict : memref<8xf32>
// CHECK-DAG: %[[WT:.*]] = bufferization.to_tensor %[[W]] restrict : memref<12x8xf32>
// The destination subview comes first, so that it dominates the op's lowering.
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[OFF:.*]] = arith.muli %[[B]], %[[ONE]]
// CHECK: %[[N:.*]] = arith.subi %[[E]], %[[B]]
// CHECK: %[[SIZE:.*]] = arith.muli %[[N]], %[[ONE]]
// CHECK: %[[SUB:.*]] = memref.subview %[[Y]][%[[OFF]]] [%[[SIZE]]] [1] : memref<12xf32> to memref<?xf32, strided<[1], offset: ?>>
// CHECK: %[[R:.*]] = quill.linear %[[XT]], %[[WT]] tile[%[[B]], %[[E]]] : tensor<8xf32>, tensor<12x8xf32> -> tensor<?xf32>
// CHECK: bufferization.materialize_in_destination %[[R]] in restrict writable %[[SUB]]
// CHECK-NEXT: return
func.func @step(%token: index, %pos: index) -> tensor<12xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %w = quill.weight "w" : tensor<12x8xf32>
  %y = quill.linear %x, %w : tensor<8xf32>, tensor<12x8xf32> -> tensor<12xf32>
  return %y : tensor<12xf32>
}

// -----

// kv_write binds its cache in place (no result binding, the cache is a
// writable input and the destination); attention reads the caches at their
// kv offsets. Two references to one (kind, layer) cache share an offset.
// Attention is tiled by kv head: work = num_kv_heads in chunks of 1, and each
// unit is group * head_dim = 2 * 2 output elements.
// CHECK-LABEL: quill.schedule "step" attributes
// CHECK-SAME: kv_bytes = 1024 : i64
// CHECK: quill.dispatch @[[KVW:kv_write_4_32x4]]([#quill.binding<"scratch", [[KROW:[0-9]+]], 16>, #quill.binding<"kv", 0, 512>]) work(1, 1)
// CHECK-NEXT: quill.dispatch @[[KVW]]([#quill.binding<"scratch", [[VROW:[0-9]+]], 16>, #quill.binding<"kv", 512, 512>]) work(1, 1)
// CHECK-NEXT: quill.dispatch @[[ATT:attention_8_32x4_32x4]]([#quill.binding<"scratch", [[Q:[0-9]+]], 32>, #quill.binding<"kv", 0, 512>, #quill.binding<"kv", 512, 512>, #quill.binding<"scratch", [[OUT:[0-9]+]], 32>]) work(2, 1)
// CHECK-NEXT: }
// CHECK-LABEL: func.func @kv_write_4_32x4(
// CHECK-SAME: %[[ROW:[^:]+]]: memref<4xf32>, %[[CACHE:[^:]+]]: memref<32x4xf32>, %{{.*}}: index, %[[POS:[^:]+]]: index, %{{.*}}: index, %{{.*}}: index)
// CHECK-DAG: %[[ROWT:.*]] = bufferization.to_tensor %[[ROW]] restrict :
// CHECK-DAG: %[[CACHET:.*]] = bufferization.to_tensor %[[CACHE]] restrict writable :
// CHECK: %[[NEW:.*]] = quill.kv_write %[[ROWT]] into %[[CACHET]] at %[[POS]]
// CHECK-NEXT: bufferization.materialize_in_destination %[[NEW]] in restrict writable %[[CACHE]] :
// CHECK-LABEL: func.func @attention_8_32x4_32x4(
// CHECK-SAME: memref<32x4xf32>, %[[AOUT:[^:]+]]: memref<8xf32>, %{{.*}}: index, %[[APOS:[^:]+]]: index, %[[AB:[^:]+]]: index, %[[AE:[^:]+]]: index)
// CHECK: %[[UNIT:.*]] = arith.constant 4 : index
// CHECK: %[[AOFF:.*]] = arith.muli %[[AB]], %[[UNIT]]
// CHECK: %[[AN:.*]] = arith.subi %[[AE]], %[[AB]]
// CHECK: %[[ASIZE:.*]] = arith.muli %[[AN]], %[[UNIT]]
// CHECK: %[[ASUB:.*]] = memref.subview %[[AOUT]][%[[AOFF]]] [%[[ASIZE]]] [1]
// CHECK: %[[O:.*]] = quill.attention %{{.*}}, %{{.*}}, %{{.*}} at %[[APOS]] tile[%[[AB]], %[[AE]]] {num_heads = 4 : i64, num_kv_heads = 2 : i64} : {{.*}} -> tensor<?xf32>
// CHECK: bufferization.materialize_in_destination %[[O]] in restrict writable %[[ASUB]]
func.func @step(%token: index, %pos: index) -> tensor<8xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %wk = quill.weight "layers.0.wk" : tensor<4x8xf32>
  %wv = quill.weight "layers.0.wv" : tensor<4x8xf32>
  %k = quill.linear %x, %wk : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %v = quill.linear %x, %wv : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %kc = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
  %vc = quill.kv_cache "value" layer 0 : tensor<32x4xf32>
  %kc1 = quill.kv_write %k into %kc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %vc1 = quill.kv_write %v into %vc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %kc2 = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
  %att = quill.attention %x, %kc2, %vc1 at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<8xf32>
  return %att : tensor<8xf32>
}

// -----

// Must not tile: norm, rope and elementwise kernels run as one unit over
// their whole output, with no tile and no subview. Same shapes but other
// attributes (eps) make a second kernel, renamed to stay unique.
// CHECK-LABEL: quill.schedule "step"
// CHECK-NEXT: quill.dispatch @embedding_16x8({{.*}}) work(1, 1)
// CHECK-NEXT: quill.dispatch @rmsnorm_8_8({{.*}}) work(1, 1)
// CHECK-NEXT: quill.dispatch @rmsnorm_8_8_0({{.*}}) work(1, 1)
// CHECK-NEXT: quill.dispatch @rope_8({{.*}}) work(1, 1)
// CHECK-NEXT: quill.dispatch @swiglu_8_8({{.*}}) work(1, 1)
// CHECK-NEXT: quill.dispatch @add_8_8({{.*}}) work(1, 1)
// CHECK-NEXT: }
// CHECK-NOT: tile[
// CHECK-NOT: memref.subview
// CHECK-LABEL: func.func @rmsnorm_8_8(
// CHECK: quill.rmsnorm {{.*}} {eps = 9.99999974E-6 : f32}
// CHECK-LABEL: func.func @rmsnorm_8_8_0(
// CHECK: quill.rmsnorm {{.*}} {eps = 9.99999997E-7 : f32}
// CHECK-LABEL: func.func @rope_8(
// CHECK-SAME: %[[RPOS:[^:]*]]: index, %{{[^:]*}}: index, %{{[^:]*}}: index)
// CHECK: quill.rope %{{.*}} at %[[RPOS]]
// CHECK-LABEL: func.func @swiglu_8_8(
// CHECK-LABEL: func.func @add_8_8(
func.func @step(%token: index, %pos: index) -> tensor<8xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %nw = quill.weight "norm" : tensor<8xf32>
  %a = quill.rmsnorm %x, %nw {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<8xf32>
  %b = quill.rmsnorm %a, %nw {eps = 1.0e-06 : f32} : tensor<8xf32>, tensor<8xf32>
  %r = quill.rope %b at %pos {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<8xf32>
  %g = quill.swiglu %r, %x : tensor<8xf32>
  %s = quill.add %g, %x : tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// One weight name with two shapes is an error naming both.
func.func @step(%token: index, %pos: index) -> tensor<8xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  // expected-error @+1 {{'quill.weight' op weight 'tok_embeddings' is used with two shapes: 'tensor<16x8xf32>' and 'tensor<8x16xf32>'}}
  %t = quill.weight "tok_embeddings" : tensor<8x16xf32>
  return %x : tensor<8xf32>
}

// -----

// Without @step the pass reports and stops.
// expected-error @+1 {{quill-outline-kernels: expected func.func @step(token, pos)}}
module {
  func.func @main(%token: index, %pos: index) -> tensor<8xf32> {
    %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
    %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
    return %x : tensor<8xf32>
  }
}
