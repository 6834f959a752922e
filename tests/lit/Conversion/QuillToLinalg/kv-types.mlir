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
