// The ops and attributes the fusion passes introduce print and parse back.
// RUN: quill-opt %s | quill-opt | FileCheck %s
// RUN: quill-opt %s --mlir-print-op-generic | quill-opt | FileCheck %s

// CHECK-LABEL: func.func @fused_forms
// CHECK: quill.concat %{{.*}}, %{{.*}} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<12x8xf32>
// CHECK: quill.concat %{{.*}}, %{{.*}} {interleave} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
// CHECK: quill.slice %{{.*}}[8] : tensor<12xf32> -> tensor<4xf32>
// CHECK: quill.linear %{{.*}}, %{{.*}} {swiglu} : tensor<8xf32>, tensor<8x8xf32> -> tensor<4xf32>
// CHECK: quill.linear %{{.*}}, %{{.*}} residual %{{.*}} : tensor<8xf32> tile[%{{.*}}, %{{.*}}] : tensor<8xf32>, tensor<8x8xf32> -> tensor<?xf32>
func.func @fused_forms(%x: tensor<8xf32>, %b: index, %e: index) {
  %wq = quill.weight "wq" : tensor<8x8xf32>
  %wk = quill.weight "wk" : tensor<4x8xf32>
  %w1 = quill.weight "w1" : tensor<4x8xf32>
  %w3 = quill.weight "w3" : tensor<4x8xf32>
  %qk = quill.concat %wq, %wk : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<12x8xf32>
  %w13 = quill.concat %w1, %w3 {interleave} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %y = quill.linear %x, %qk : tensor<8xf32>, tensor<12x8xf32> -> tensor<12xf32>
  %k = quill.slice %y[8] : tensor<12xf32> -> tensor<4xf32>
  %a = quill.linear %x, %w13 {swiglu} : tensor<8xf32>, tensor<8x8xf32> -> tensor<4xf32>
  %r = quill.linear %x, %wq residual %x : tensor<8xf32> tile[%b, %e] : tensor<8xf32>, tensor<8x8xf32> -> tensor<?xf32>
  return
}

// A pack with a scale, with row groups, and with both (each clause its own
// keyword, so that either parses alone).
// CHECK-LABEL: quill.schedule "packed"
// CHECK-SAME: weight_packs = [#quill.weight_pack<64, "interleave", ["w1", "w3"]>, #quill.weight_pack<320, "concat", ["wq", "wk"] scale "norm">, #quill.weight_pack<576, "concat", ["wq", "wk"] row_groups 16>, #quill.weight_pack<832, "concat", ["wq", "wk"] scale "norm" row_groups 16>]
quill.schedule "packed" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 64>,
    scratch_bytes = 64 : i64, weight_bytes = 4096 : i64, weight_offsets = {},
    weight_packs = [#quill.weight_pack<64, "interleave", ["w1", "w3"]>,
                    #quill.weight_pack<320, "concat", ["wq", "wk"] scale "norm">,
                    #quill.weight_pack<576, "concat", ["wq", "wk"] row_groups 16>,
                    #quill.weight_pack<832, "concat", ["wq", "wk"] scale "norm" row_groups 16>]} {
  quill.dispatch @k([#quill.binding<"weights", 64, 256>]) work(1, 1)
}
