// Regression: a negative layer is rejected (the I64Attr getter is unsigned).
// RUN: quill-opt %s -verify-diagnostics

func.func @kv_cache_negative_layer() {
  // expected-error @+1 {{'quill.kv_cache' op layer must be non-negative, got -1}}
  %k = quill.kv_cache "key" layer -1 : tensor<32x4xf32>
  return
}
