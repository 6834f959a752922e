// The Llama family's extras in the quill ops: a linear layer's bias, a
// grouped (per-head) RMSNorm, a rotary frequency table with YaRN's attention
// factor, and vector parts of quill.concat. They print back as parsed, and
// their verifiers name what is wrong.
// RUN: quill-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @round_trip
// CHECK: quill.linear %{{.*}}, %{{.*}} bias %{{.*}} : tensor<8xf32> : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
// CHECK: quill.rmsnorm %{{.*}}, %{{.*}} {eps = 9.99999997E-7 : f32, group = 4 : i64} : tensor<8xf32>, tensor<4xf32>
// CHECK: quill.rope %{{.*}} at %{{.*}} freqs %{{.*}} : tensor<2xf32> {attention_factor = 1.100000e+00 : f32, head_dim = 4 : i64, theta = 1.000000e+06 : f32} : tensor<8xf32>
// CHECK: quill.concat %{{.*}}, %{{.*}} : (tensor<8xf32>, tensor<4xf32>) -> tensor<12xf32>
func.func @round_trip(%x: tensor<8xf32>, %pos: index) -> (tensor<8xf32>, tensor<12xf32>) {
  %w = quill.weight "wq" : tensor<8x8xf32>
  %b = quill.weight "bq" : tensor<8xf32>
  %g = quill.weight "q_norm" : tensor<4xf32>
  %f = quill.weight "rope_freqs" : tensor<2xf32>
  %bk = quill.weight "bk" : tensor<4xf32>
  %q = quill.linear %x, %w bias %b : tensor<8xf32> : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %n = quill.rmsnorm %q, %g {eps = 1.0e-06 : f32, group = 4 : i64} : tensor<8xf32>, tensor<4xf32>
  %r = quill.rope %n at %pos freqs %f : tensor<2xf32> {attention_factor = 1.1 : f32, head_dim = 4 : i64, theta = 1.0e+06 : f32} : tensor<8xf32>
  %c = quill.concat %b, %bk : (tensor<8xf32>, tensor<4xf32>) -> tensor<12xf32>
  return %r, %c : tensor<8xf32>, tensor<12xf32>
}

// -----

func.func @bias_size(%x: tensor<8xf32>) -> tensor<8xf32> {
  %w = quill.weight "wq" : tensor<8x8xf32>
  %b = quill.weight "bq" : tensor<4xf32>
  // expected-error @+1 {{'quill.linear' op bias 'bq' has 4 elements but the weight has 8 rows}}
  %q = quill.linear %x, %w bias %b : tensor<4xf32> : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  return %q : tensor<8xf32>
}

// -----

func.func @group_divides(%x: tensor<8xf32>) -> tensor<8xf32> {
  %g = quill.weight "q_norm" : tensor<3xf32>
  // expected-error @+1 {{'quill.rmsnorm' op group of 3 does not divide the input's 8 elements}}
  %n = quill.rmsnorm %x, %g {eps = 1.0e-06 : f32, group = 3 : i64} : tensor<8xf32>, tensor<3xf32>
  return %n : tensor<8xf32>
}

// -----

func.func @group_weight(%x: tensor<8xf32>) -> tensor<8xf32> {
  %g = quill.weight "q_norm" : tensor<8xf32>
  // expected-error @+1 {{'quill.rmsnorm' op weight 'q_norm' has 8 elements but the group has 4}}
  %n = quill.rmsnorm %x, %g {eps = 1.0e-06 : f32, group = 4 : i64} : tensor<8xf32>, tensor<8xf32>
  return %n : tensor<8xf32>
}

// -----

func.func @freqs_per_pair(%x: tensor<8xf32>, %pos: index) -> tensor<8xf32> {
  %f = quill.weight "rope_freqs" : tensor<4xf32>
  // expected-error @+1 {{'quill.rope' op freqs 'rope_freqs' has 4 entries but a 4-wide head has 2 pairs}}
  %r = quill.rope %x at %pos freqs %f : tensor<4xf32> {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @attention_factor(%x: tensor<8xf32>, %pos: index) -> tensor<8xf32> {
  %f = quill.weight "rope_freqs" : tensor<2xf32>
  // expected-error @+1 {{'quill.rope' op attention_factor must be positive}}
  %r = quill.rope %x at %pos freqs %f : tensor<2xf32> {attention_factor = 0.0 : f32, head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @vector_concat_scaled() -> tensor<8xf32> {
  %a = quill.weight "a" : tensor<4xf32>
  %b = quill.weight "b" : tensor<4xf32>
  // expected-error @+1 {{'quill.concat' op vector parts are neither scaled nor interleaved}}
  %c = quill.concat %a, %b {interleave} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

func.func @window_positive(%q: tensor<8xf32>, %k: tensor<16x4xf32>, %v: tensor<16x4xf32>, %pos: index) -> tensor<8xf32> {
  // expected-error @+1 {{'quill.attention' op window must be positive, got 0}}
  %a = quill.attention %q, %k, %v at %pos {num_heads = 2 : i64, num_kv_heads = 1 : i64, window = 0 : i64} : tensor<8xf32>, tensor<16x4xf32>, tensor<16x4xf32> -> tensor<8xf32>
  return %a : tensor<8xf32>
}
