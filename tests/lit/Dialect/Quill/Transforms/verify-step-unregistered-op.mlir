// Regression: an unregistered op in @step (no dialect) is reported, not a crash.
// RUN: quill-opt %s -allow-unregistered-dialect -verify-diagnostics --quill-verify-step

func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  // expected-error @+1 {{quill contract: only quill ops may appear in @step, found 'foo.bar'}}
  "foo.bar"() : () -> ()
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %l = quill.logits %x, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
