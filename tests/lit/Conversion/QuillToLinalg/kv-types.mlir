// quill-lower-to-linalg over caches of f16 and bf16 (quill-compile
// --kv-type): writes round the f32 rows to the cache's type, attention
// widens each cached element to f32 where it multiplies it.
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s --enable-var-scope

// kv_write into f16: an elementwise truncf, then the row's insert.
// CHECK-LABEL: func.func @kv_write_f16
// CHECK-SAME: (%[[ROW:[^:]+]]: tensor<4xf32>, %[[C:[^:]+]]: tensor<32x4xf16>, %[[POS:[^:]+]]: index)
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%[[ROW]] : tensor<4xf32>) outs(%{{.*}} : tensor<4xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: tensor.insert_slice %[[H]] into %[[C]][%[[POS]], 0] [1, 4] [1, 1] : tensor<4xf16> into tensor<32x4xf16>
func.func @kv_write_f16(%row: tensor<4xf32>, %c: tensor<32x4xf16>, %pos: index) -> tensor<32x4xf16> {
  %c1 = quill.kv_write %row into %c at %pos : tensor<4xf32> into tensor<32x4xf16>
  return %c1 : tensor<32x4xf16>
}

// -----

// Must not fire: an f32 cache takes the row as it is.
// CHECK-LABEL: func.func @kv_write_f32
// CHECK-NOT: arith.truncf
// CHECK: tensor.insert_slice
func.func @kv_write_f32(%row: tensor<4xf32>, %c: tensor<32x4xf32>, %pos: index) -> tensor<32x4xf32> {
  %c1 = quill.kv_write %row into %c at %pos : tensor<4xf32> into tensor<32x4xf32>
  return %c1 : tensor<32x4xf32>
}

// -----

// attention over bf16 caches: the cache views stay bf16, and the scores'
// and the weighted sum's bodies widen the cached element before the FMA.
// CHECK-LABEL: func.func @attention_bf16
// CHECK: tensor.expand_shape %{{.*}} : tensor<32x4xbf16> into tensor<32x1x4xbf16>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x4xf32>, tensor<?x1x4xbf16>) outs(%{{.*}} : tensor<1x2x?xf32>)
// CHECK-NEXT: ^bb0(%[[Q:.*]]: f32, %[[K:.*]]: bf16, %[[S:.*]]: f32):
// CHECK-NEXT: %[[KW:.*]] = arith.extf %[[K]] : bf16 to f32
// CHECK-NEXT: arith.mulf %[[Q]], %[[KW]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x?xf32>, tensor<?x1x4xbf16>) outs(%{{.*}} : tensor<1x2x4xf32>)
// CHECK-NEXT: ^bb0(%[[P:.*]]: f32, %[[V:.*]]: bf16, %[[O:.*]]: f32):
// CHECK-NEXT: %[[VW:.*]] = arith.extf %[[V]] : bf16 to f32
// CHECK-NEXT: arith.mulf %[[P]], %[[VW]]
func.func @attention_bf16(%q: tensor<8xf32>, %k: tensor<32x4xbf16>, %v: tensor<32x4xbf16>,
                          %pos: index) -> tensor<8xf32> {
  %o = quill.attention %q, %k, %v at %pos {num_heads = 2 : i64, num_kv_heads = 1 : i64}
      : tensor<8xf32>, tensor<32x4xbf16>, tensor<32x4xbf16> -> tensor<8xf32>
  return %o : tensor<8xf32>
}

// -----

// kv_write into a Q8_0 cache, as a kernel sees it (its bytes behind a
// weight_view): per block of 32, the largest magnitude, the scale
// amax / 127 stored as fp16 in two bytes, then the 32 values rounded half
// to even to int8, each written into the bytes in place; the storage_bytes
// that hands the cache back folds away.
// CHECK-LABEL: func.func @kv_write_q8_0
// CHECK-SAME: (%[[ROW:[^:]+]]: tensor<64xf32>, %[[B:[^:]+]]: tensor<16x68xi8>, %[[POS:[^:]+]]: index)
// CHECK-NOT: quill.
// CHECK: %[[ROWS:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[B]]) -> (tensor<16x68xi8>)
// CHECK: scf.for {{.*}} -> (tensor<16x68xi8>)
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.bitcast %{{.*}} : f16 to i16
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%{{.*}}, %{{.*}}] : tensor<16x68xi8>
// CHECK: math.roundeven
// CHECK: arith.fptosi %{{.*}} : f32 to i8
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%{{.*}}, %{{.*}}] : tensor<16x68xi8>
// CHECK-NOT: quill.storage_bytes
// CHECK: return %[[ROWS]] : tensor<16x68xi8>
func.func @kv_write_q8_0(%row: tensor<64xf32>, %bytes: tensor<16x68xi8>, %pos: index)
    -> tensor<16x68xi8> {
  %c = quill.weight_view %bytes : tensor<16x68xi8> -> tensor<16x64x!quill.q8_0>
  %c1 = quill.kv_write %row into %c at %pos : tensor<64xf32> into tensor<16x64x!quill.q8_0>
  %b = quill.storage_bytes %c1 : tensor<16x64x!quill.q8_0> -> tensor<16x68xi8>
  return %b : tensor<16x68xi8>
}

// -----

// attention over Q8_0 caches (heads of 32: one block each): the caches are
// viewed as [position, kv head, 34 bytes], and the scores' and the weighted
// sum's generics read no cache operand: each element is decoded where it is
// used, fp16 scale (two bytes) times the int8 value.
// CHECK-LABEL: func.func @attention_q8_0
// CHECK: tensor.expand_shape %{{.*}} : tensor<16x34xi8> into tensor<16x1x34xi8>
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x2x32xf32>) outs(%{{.*}} : tensor<1x2x?xf32>)
// CHECK-DAG: tensor.extract %{{.*}} : tensor<?x1x34xi8>
// CHECK-DAG: arith.bitcast %{{.*}} : i16 to f16
// CHECK-DAG: arith.sitofp %{{.*}} : i32 to f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x2x?xf32>) outs(%{{.*}} : tensor<1x2x32xf32>)
// CHECK: tensor.extract %{{.*}} : tensor<?x1x34xi8>
func.func @attention_q8_0(%q: tensor<64xf32>, %kb: tensor<16x34xi8>, %vb: tensor<16x34xi8>,
                          %pos: index) -> tensor<64xf32> {
  %k = quill.weight_view %kb : tensor<16x34xi8> -> tensor<16x32x!quill.q8_0>
  %v = quill.weight_view %vb : tensor<16x34xi8> -> tensor<16x32x!quill.q8_0>
  %o = quill.attention %q, %k, %v at %pos {num_heads = 2 : i64, num_kv_heads = 1 : i64}
      : tensor<64xf32>, tensor<16x32x!quill.q8_0>, tensor<16x32x!quill.q8_0> -> tensor<64xf32>
  return %o : tensor<64xf32>
}
