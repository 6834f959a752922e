// Regression: kernels are shared only when the same step argument (token or
// pos) feeds their index operands; an embedding of %pos must not reuse the
// kernel built for an embedding of %token.
// RUN: quill-opt %s --quill-outline-kernels | FileCheck %s

// One kernel body must index the table with the token (the 1st index
// argument), another with pos (the 2nd).
// CHECK-LABEL: quill.schedule "step"
// CHECK-DAG: func.func @{{[a-z0-9_]+}}(%{{[^:]+}}: memref<16x8xf32>, %{{[^:]+}}: memref<8xf32>, %[[TOK:[^:]+]]: index, %{{[^:]+}}: index, {{.*}}
// CHECK-DAG: quill.embedding %{{.*}}[%[[TOK]]]
// CHECK-DAG: func.func @{{[a-z0-9_]+}}(%{{[^:]+}}: memref<16x8xf32>, %{{[^:]+}}: memref<8xf32>, %{{[^:]+}}: index, %[[POS:[^:]+]]: index, {{.*}}
// CHECK-DAG: quill.embedding %{{.*}}[%[[POS]]]
func.func @step(%token: index, %pos: index) -> tensor<8xf32> {
  %wte = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %wpe = quill.weight "pos_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %wte[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %p = quill.embedding %wpe[%pos] : tensor<16x8xf32> -> tensor<8xf32>
  %s = quill.add %x, %p : tensor<8xf32>
  return %s : tensor<8xf32>
}
