// RUN: quill-opt %s -split-input-file --quill-split-attention="chunk=256" | FileCheck %s

// A 1024-position cache: 4 chunks of 256 per kv head, 2 kv heads -> 8 units
// of [group 2 x (head_dim 8 + 2)] each, then the merge.
// CHECK-LABEL: func.func @long_cache
// CHECK: %[[P:.*]] = quill.attention_partial %{{.*}}, %{{.*}}, %{{.*}} at %{{.*}} {chunk = 256 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<32xf32>, tensor<1024x16xf32>, tensor<1024x16xf32> -> tensor<8x20xf32>
// CHECK: %[[O:.*]] = quill.attention_merge %[[P]] {num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<8x20xf32> -> tensor<32xf32>
// CHECK-NOT: quill.attention %
// CHECK: return %[[O]]
func.func @long_cache(%q: tensor<32xf32>, %k: tensor<1024x16xf32>, %v: tensor<1024x16xf32>, %pos: index) -> tensor<32xf32> {
  %o = quill.attention %q, %k, %v at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<32xf32>, tensor<1024x16xf32>, tensor<1024x16xf32> -> tensor<32xf32>
  return %o : tensor<32xf32>
}

// -----

// Must not fire: a cache of fewer than 4 chunks gains nothing from a merge.
// CHECK-LABEL: func.func @short_cache
// CHECK: quill.attention %
// CHECK-NOT: quill.attention_partial
func.func @short_cache(%q: tensor<32xf32>, %k: tensor<512x16xf32>, %v: tensor<512x16xf32>, %pos: index) -> tensor<32xf32> {
  %o = quill.attention %q, %k, %v at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64} : tensor<32xf32>, tensor<512x16xf32>, tensor<512x16xf32> -> tensor<32xf32>
  return %o : tensor<32xf32>
}
