// RUN: quill-opt %s --quill-outline-kernels | FileCheck %s

// Weights only packed have no place of their own (no weight_offsets entry)
// but keep their encoding; rows sliced from a pack are bound inside it, at
// the pack's offset plus the rows before them (64 rows of two 34-byte Q8_0
// blocks: 4352 bytes).
// CHECK: quill.schedule "step"
// CHECK-SAME: weight_encodings = {wk = "q8_0", wq = "q8_0"}
// CHECK-SAME: weight_offsets = {tok_embeddings = 0 : i64}
// CHECK-SAME: weight_packs = [#quill.weight_pack<512, "concat", ["wq", "wk"]>]
// CHECK: quill.dispatch @linear_64_96x64([#quill.binding<"scratch", {{[0-9]+}}, 256>, #quill.binding<"weights", 512, 6528>
// CHECK: quill.schedule "prefill"
// CHECK: quill.dispatch @linear_4x64_32x64([#quill.binding<"scratch", {{[0-9]+}}, 1024>, #quill.binding<"weights", 4864, 2176>
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<2x64xf32>
  %x = quill.embedding %emb[%token] : tensor<2x64xf32> -> tensor<64xf32>
  %wq = quill.weight "wq" : tensor<64x64x!quill.q8_0>
  %wk = quill.weight "wk" : tensor<32x64x!quill.q8_0>
  %p = quill.concat %wq, %wk : (tensor<64x64x!quill.q8_0>, tensor<32x64x!quill.q8_0>) -> tensor<96x64x!quill.q8_0>
  %y = quill.linear %x, %p : tensor<64xf32>, tensor<96x64x!quill.q8_0> -> tensor<96xf32>
  %l = quill.slice %y[0] : tensor<96xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
func.func @prefill(%tokens: tensor<4xi32>, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<2x64xf32>
  %x = quill.embeddings %emb[%tokens] : tensor<2x64xf32>, tensor<4xi32> -> tensor<4x64xf32>
  %wq = quill.weight "wq" : tensor<64x64x!quill.q8_0>
  %wk = quill.weight "wk" : tensor<32x64x!quill.q8_0>
  %p = quill.concat %wq, %wk : (tensor<64x64x!quill.q8_0>, tensor<32x64x!quill.q8_0>) -> tensor<96x64x!quill.q8_0>
  %rows = quill.slice %p[64] : tensor<96x64x!quill.q8_0> -> tensor<32x64x!quill.q8_0>
  %k = quill.linear %x, %rows : tensor<4x64xf32>, tensor<32x64x!quill.q8_0> -> tensor<4x32xf32>
  %last = quill.row %k[3] : tensor<4x32xf32> -> tensor<32xf32>
  %l = quill.slice %last[0] : tensor<32xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
