// RUN: quill-opt %s --quill-outline-kernels | FileCheck %s

// Packed weights get a place in the weight blob and a recipe in
// weight_packs; slices are views of their input's scratch, with no kernel;
// residual and swiglu epilogues bind their extra input.
// CHECK-LABEL: quill.schedule "step"
// CHECK-SAME: weight_packs = [#quill.weight_pack<[[QKV:[0-9]+]], "concat", ["wq", "wk", "wv"]>, #quill.weight_pack<{{[0-9]+}}, "interleave", ["w1", "w3"]>]
// CHECK: quill.dispatch @embedding_16x8(
// CHECK: quill.dispatch @linear_8_16x8([#quill.binding<"scratch", [[X:[0-9]+]], 32>, #quill.binding<"weights", [[QKV]], 512>, #quill.binding<"scratch", [[Y:[0-9]+]], 64>]) work(16, 16)
// The slice at element 8 of the fused output is scratch Y + 32 bytes.
// CHECK: quill.dispatch @rope_4([#quill.binding<"scratch", {{[0-9]+}}, 16>
// CHECK: quill.dispatch @linear_8_24x8({{.*}}) work(12, 12)
// CHECK: quill.dispatch @linear_12_8x12_8(
// CHECK-NOT: quill.dispatch @{{.*}}slice
// CHECK: func.func @linear_8_24x8(
// CHECK: quill.linear {{.*}} tile[{{.*}}] {swiglu}
// CHECK: func.func @linear_12_8x12_8(
// CHECK: quill.linear {{.*}} residual {{.*}} tile[
func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %wq = quill.weight "wq" : tensor<8x8xf32>
  %wk = quill.weight "wk" : tensor<4x8xf32>
  %wv = quill.weight "wv" : tensor<4x8xf32>
  %w = quill.concat %wq, %wk, %wv : (tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  %qkv = quill.linear %x, %w : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  %k = quill.slice %qkv[8] : tensor<16xf32> -> tensor<4xf32>
  %kr = quill.rope %k at %pos {head_dim = 2 : i64, theta = 1.0e+04 : f32} : tensor<4xf32>
  %w1 = quill.weight "w1" : tensor<12x8xf32>
  %w3 = quill.weight "w3" : tensor<12x8xf32>
  %w13 = quill.concat %w1, %w3 {interleave} : (tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<24x8xf32>
  %a = quill.linear %x, %w13 {swiglu} : tensor<8xf32>, tensor<24x8xf32> -> tensor<12xf32>
  %w2 = quill.weight "w2" : tensor<8x12xf32>
  %x1 = quill.linear %a, %w2 residual %x : tensor<8xf32> : tensor<12xf32>, tensor<8x12xf32> -> tensor<8xf32>
  %l = quill.logits %x1, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
