// quill-verify-step: the import contract, one @step(index, index) -> logits of quill ops.
// RUN: quill-opt %s -split-input-file -verify-diagnostics --quill-verify-step | FileCheck %s
// RUN: not quill-opt %s -split-input-file --quill-verify-step 2>&1 | FileCheck %s --check-prefix=ERR

// A well-formed step passes unchanged.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[TOK:[^:]+]]: index, %{{.*}}: index) -> tensor<16xf32>
// CHECK: %[[EMB:.*]] = quill.weight "tok_embeddings"
// CHECK: %[[X:.*]] = quill.embedding %[[EMB]][%[[TOK]]]
// CHECK: %[[L:.*]] = quill.logits %[[X]], %[[EMB]]
// CHECK: return %[[L]]
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %l = quill.logits %x, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}

// -----

// Must not fire: only @step is held to the contract, not its neighbours.
// CHECK-LABEL: func.func @helper
// CHECK: arith.constant
// CHECK-LABEL: func.func @step
func.func @helper() -> index {
  %c = arith.constant 0 : index
  return %c : index
}
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %l = quill.logits %x, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}

// -----

// A non-quill op in @step is rejected by name.
// ERR: error: quill contract: only quill ops may appear in @step, found 'arith.constant'
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  // expected-error @+1 {{quill contract: only quill ops may appear in @step, found 'arith.constant'}}
  %c = arith.constant dense<0.0> : tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// A module without @step is rejected.
// ERR: error: quill contract: no func.func @step in the module
// expected-error @+1 {{quill contract: no func.func @step in the module}}
module {
  func.func @main(%token: index, %pos: index) -> tensor<16xf32> {
    %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
    %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
    %l = quill.logits %x, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
    return %l : tensor<16xf32>
  }
}

// -----

// @step takes index token and pos: an i64 token is rejected.
// ERR: error: quill contract: @step must be (index token, index pos) -> tensor of logits, got '(i64, index) -> tensor<16xf32>'
// expected-error @+1 {{quill contract: @step must be (index token, index pos) -> tensor of logits, got '(i64, index) -> tensor<16xf32>'}}
func.func @step(%token: i64, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %l = quill.weight "logits" : tensor<16xf32>
  return %l : tensor<16xf32>
}

// -----

// @step returns the logits: a step without a result is rejected.
// ERR: error: quill contract: @step must be (index token, index pos) -> tensor of logits, got '(index, index) -> ()'
// expected-error @+1 {{got '(index, index) -> ()'}}
func.func @step(%token: index, %pos: index) {
  return
}

// -----

// @step is a single block.
// ERR: error: quill contract: @step must be a single block
// expected-error @+1 {{quill contract: @step must be a single block}}
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %l = quill.weight "logits" : tensor<16xf32>
  cf.br ^exit
^exit:
  return %l : tensor<16xf32>
}

// -----

// The batch step must take (tokens, positions, tables, rows, logit rows).
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %l = quill.logits %x, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
// ERR: quill contract: @batch must be (tensor<Rxi32> tokens, tensor<Rxi32> positions, tensor<RxMBxi32> tables, index rows, index logit_rows) -> tensor<RxVOCABxf32>
// expected-error @+1 {{quill contract: @batch must be}}
func.func @batch(%tokens: tensor<4xi32>, %rows: index) -> tensor<4x16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embeddings %emb[%tokens] : tensor<16x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  %l = quill.logits %x, %emb rows %rows : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %l : tensor<4x16xf32>
}
