// RUN: quill-opt %s -split-input-file --quill-fuse-rope-kv | FileCheck %s

// Q rotated, K rotated and cached, V cached: one quill.project_qkv after the
// cache ops, Q read through a view of its result.
// CHECK-LABEL: func.func @fires
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8xf32>, %[[POS:[^:]*]]: index)
// CHECK: %[[KC:.*]] = quill.kv_cache "key" layer 0
// CHECK: %[[VC:.*]] = quill.kv_cache "value" layer 0
// CHECK: %[[Y:.*]], %[[K1:.*]], %[[V1:.*]] = quill.project_qkv %[[X]], %{{.*}} into %[[KC]], %[[VC]] at %[[POS]] {head_dim = 4 : i64, theta = 1.000000e+04 : f32} : tensor<8xf32>, tensor<16x8xf32>, tensor<32x4xf32> -> tensor<16xf32>
// CHECK: %[[Q:.*]] = quill.slice %[[Y]][0] : tensor<16xf32> -> tensor<8xf32>
// CHECK-NOT: quill.rope
// CHECK-NOT: quill.kv_write
// CHECK: quill.attention %[[Q]], %[[K1]], %[[V1]]
func.func @fires(%x: tensor<8xf32>, %pos: index) -> tensor<8xf32> {
  %w = quill.weight "wqkv" : tensor<16x8xf32>
  %y = quill.linear %x, %w : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  %q = quill.slice %y[0] : tensor<16xf32> -> tensor<8xf32>
  %k = quill.slice %y[8] : tensor<16xf32> -> tensor<4xf32>
  %v = quill.slice %y[12] : tensor<16xf32> -> tensor<4xf32>
  %qr = quill.rope %q at %pos {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<8xf32>
  %kr = quill.rope %k at %pos {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<4xf32>
  %kc = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
  %vc = quill.kv_cache "value" layer 0 : tensor<32x4xf32>
  %kc1 = quill.kv_write %kr into %kc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %vc1 = quill.kv_write %v into %vc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %a = quill.attention %qr, %kc1, %vc1 at %pos {num_heads = 2 : i64, num_kv_heads = 1 : i64} : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

// Must not fire: K is used before rotation too, so the slice must stay.
// CHECK-LABEL: func.func @k_used_twice
// CHECK-NOT: quill.project_qkv
// CHECK: quill.kv_write
func.func @k_used_twice(%x: tensor<8xf32>, %pos: index) -> (tensor<32x4xf32>, tensor<32x4xf32>, tensor<8xf32>, tensor<4xf32>) {
  %w = quill.weight "wqkv" : tensor<16x8xf32>
  %y = quill.linear %x, %w : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  %q = quill.slice %y[0] : tensor<16xf32> -> tensor<8xf32>
  %k = quill.slice %y[8] : tensor<16xf32> -> tensor<4xf32>
  %v = quill.slice %y[12] : tensor<16xf32> -> tensor<4xf32>
  %qr = quill.rope %q at %pos {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<8xf32>
  %kr = quill.rope %k at %pos {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<4xf32>
  %kc = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
  %vc = quill.kv_cache "value" layer 0 : tensor<32x4xf32>
  %kc1 = quill.kv_write %kr into %kc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %vc1 = quill.kv_write %v into %vc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %k2 = quill.add %k, %k : tensor<4xf32>
  return %kc1, %vc1, %qr, %k2 : tensor<32x4xf32>, tensor<32x4xf32>, tensor<8xf32>, tensor<4xf32>
}

// -----

// A biased projection with a RoPE frequency table (Qwen2 with YaRN): the
// fused op keeps the bias, the table and the attention factor.
// CHECK-LABEL: func.func @bias_and_freqs
// CHECK: %[[B:.*]] = quill.weight "bqkv"
// CHECK: %[[F:.*]] = quill.weight "rope_freqs"
// CHECK: quill.project_qkv %{{.*}}, %{{.*}} into %{{.*}}, %{{.*}} at %{{.*}} bias %[[B]] : tensor<16xf32> freqs %[[F]] : tensor<2xf32> {attention_factor = 1.100000e+00 : f32, head_dim = 4 : i64, theta = 1.000000e+06 : f32}
// CHECK-NOT: quill.rope
func.func @bias_and_freqs(%x: tensor<8xf32>, %pos: index) -> tensor<8xf32> {
  %w = quill.weight "wqkv" : tensor<16x8xf32>
  %b = quill.weight "bqkv" : tensor<16xf32>
  %f = quill.weight "rope_freqs" : tensor<2xf32>
  %y = quill.linear %x, %w bias %b : tensor<16xf32> : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  %q = quill.slice %y[0] : tensor<16xf32> -> tensor<8xf32>
  %k = quill.slice %y[8] : tensor<16xf32> -> tensor<4xf32>
  %v = quill.slice %y[12] : tensor<16xf32> -> tensor<4xf32>
  %qr = quill.rope %q at %pos freqs %f : tensor<2xf32> {attention_factor = 1.1 : f32, head_dim = 4 : i64, theta = 1.0e+06 : f32} : tensor<8xf32>
  %kr = quill.rope %k at %pos freqs %f : tensor<2xf32> {attention_factor = 1.1 : f32, head_dim = 4 : i64, theta = 1.0e+06 : f32} : tensor<4xf32>
  %kc = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
  %vc = quill.kv_cache "value" layer 0 : tensor<32x4xf32>
  %kc1 = quill.kv_write %kr into %kc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %vc1 = quill.kv_write %v into %vc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %a = quill.attention %qr, %kc1, %vc1 at %pos {num_heads = 2 : i64, num_kv_heads = 1 : i64} : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

// Must not fire: Qwen3's per-head norms sit between the projection and the
// rotation.
// CHECK-LABEL: func.func @head_norms
// CHECK-NOT: quill.project_qkv
// CHECK: quill.rope
func.func @head_norms(%x: tensor<8xf32>, %pos: index) -> tensor<8xf32> {
  %w = quill.weight "wqkv" : tensor<16x8xf32>
  %g = quill.weight "q_norm" : tensor<4xf32>
  %y = quill.linear %x, %w : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  %q = quill.slice %y[0] : tensor<16xf32> -> tensor<8xf32>
  %k = quill.slice %y[8] : tensor<16xf32> -> tensor<4xf32>
  %v = quill.slice %y[12] : tensor<16xf32> -> tensor<4xf32>
  %qn = quill.rmsnorm %q, %g {eps = 1.0e-06 : f32, group = 4 : i64} : tensor<8xf32>, tensor<4xf32>
  %kn = quill.rmsnorm %k, %g {eps = 1.0e-06 : f32, group = 4 : i64} : tensor<4xf32>, tensor<4xf32>
  %qr = quill.rope %qn at %pos {head_dim = 4 : i64, theta = 1.0e+06 : f32} : tensor<8xf32>
  %kr = quill.rope %kn at %pos {head_dim = 4 : i64, theta = 1.0e+06 : f32} : tensor<4xf32>
  %kc = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
  %vc = quill.kv_cache "value" layer 0 : tensor<32x4xf32>
  %kc1 = quill.kv_write %kr into %kc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %vc1 = quill.kv_write %v into %vc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %a = quill.attention %qr, %kc1, %vc1 at %pos {num_heads = 2 : i64, num_kv_heads = 1 : i64} : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<8xf32>
  return %a : tensor<8xf32>
}
