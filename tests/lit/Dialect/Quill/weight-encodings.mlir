// Weight encodings: f16, bf16 and GGUF's block types as weight element
// types, and the verifier messages about them.
// RUN: quill-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// Every encoding a matrix may have round-trips, and a linear takes it.
// CHECK-LABEL: func.func @encodings
// CHECK: quill.weight "a" : tensor<4x32xf16>
// CHECK: quill.weight "b" : tensor<4x32xbf16>
// CHECK: quill.weight "c" : tensor<4x32x!quill.q8_0>
// CHECK: quill.weight "d" : tensor<4x32x!quill.q4_0>
// CHECK: quill.weight "e" : tensor<4x256x!quill.q4_k>
// CHECK: quill.weight "f" : tensor<4x256x!quill.q6_k>
// CHECK: quill.linear %{{.*}}, %{{.*}} : tensor<32xf32>, tensor<4x32x!quill.q8_0> -> tensor<4xf32>
func.func @encodings(%x: tensor<32xf32>) -> tensor<4xf32> {
  %a = quill.weight "a" : tensor<4x32xf16>
  %b = quill.weight "b" : tensor<4x32xbf16>
  %c = quill.weight "c" : tensor<4x32x!quill.q8_0>
  %d = quill.weight "d" : tensor<4x32x!quill.q4_0>
  %e = quill.weight "e" : tensor<4x256x!quill.q4_k>
  %f = quill.weight "f" : tensor<4x256x!quill.q6_k>
  %y = quill.linear %x, %c : tensor<32xf32>, tensor<4x32x!quill.q8_0> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Columns must be whole blocks, and the message names the weight.
func.func @partial_block() {
  // expected-error @+1 {{'quill.weight' op weight 'layers.0.wq' has 48 columns, not a whole number of q8_0 blocks of 32}}
  %w = quill.weight "layers.0.wq" : tensor<4x48x!quill.q8_0>
  return
}

// -----

func.func @partial_super_block() {
  // expected-error @+1 {{'quill.weight' op weight 'w2' has 128 columns, not a whole number of q4_k blocks of 256}}
  %w = quill.weight "w2" : tensor<4x128x!quill.q4_k>
  return
}

// -----

// Vectors (norm weights) stay f32.
func.func @encoded_vector() {
  // expected-error @+1 {{'quill.weight' op result #0 must be f32 tensor or weight matrix, but got 'tensor<32xf16>'}}
  %w = quill.weight "norm" : tensor<32xf16>
  return
}

// -----

// A packed weight keeps one encoding.
func.func @mixed_concat() {
  %a = quill.weight "wq" : tensor<4x32x!quill.q8_0>
  %b = quill.weight "wv" : tensor<4x32xf16>
  // expected-error @+1 {{'quill.concat' op part 'wv' is 'f16' but the result is '!quill.q8_0': packed parts keep one encoding}}
  %p = quill.concat %a, %b : (tensor<4x32x!quill.q8_0>, tensor<4x32xf16>) -> tensor<8x32x!quill.q8_0>
  return
}

// -----

// An RMSNorm weight folds into f32 parts only: anything else would be rounded again.
func.func @scaled_blocks() {
  %a = quill.weight "wq" : tensor<4x32x!quill.q8_0>
  %g = quill.weight "g" : tensor<32xf32>
  // expected-error @+1 {{'quill.concat' op a scale folds only into f32 parts: '!quill.q8_0' weights would be re-rounded}}
  %p = quill.concat %a scale %g : tensor<32xf32> : (tensor<4x32x!quill.q8_0>) -> tensor<4x32x!quill.q8_0>
  return
}

// -----

// A kernel's bytes view: [rows, row bytes] (4 rows of one 34-byte Q8_0 block).
// CHECK-LABEL: func.func @view
// CHECK: quill.weight_view %{{.*}} : tensor<4x34xi8> -> tensor<4x32x!quill.q8_0>
func.func @view(%bytes: tensor<4x34xi8>) -> tensor<4x32x!quill.q8_0> {
  %w = quill.weight_view %bytes : tensor<4x34xi8> -> tensor<4x32x!quill.q8_0>
  return %w : tensor<4x32x!quill.q8_0>
}

// -----

func.func @view_wrong_size(%bytes: tensor<4x32xi8>) {
  // expected-error @+1 {{'quill.weight_view' op bytes 'tensor<4x32xi8>' do not hold 'tensor<4x32x!quill.q8_0>' (need 'tensor<4x34xi8>')}}
  %w = quill.weight_view %bytes : tensor<4x32xi8> -> tensor<4x32x!quill.q8_0>
  return
}

// -----

// Q8_0 inputs go with block-quantized weights only, and the message names the weight.
func.func @q8_input_f16(%x: tensor<256xf32>) -> tensor<4xf32> {
  %w = quill.weight "layers.0.w2" : tensor<4x256xf16>
  // expected-error @+1 {{'quill.linear' op q8_input needs a block-quantized weight, but 'layers.0.w2' is 'f16'}}
  %y = quill.linear %x, %w {q8_input} : tensor<256xf32>, tensor<4x256xf16> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// bf16 inputs go with bf16 weights only.
func.func @bf16_input_q8_0(%x: tensor<256xf32>) -> tensor<4xf32> {
  %w = quill.weight "layers.0.w2" : tensor<4x256x!quill.q8_0>
  // expected-error @+1 {{'quill.linear' op bf16_input needs a bf16 weight, but 'layers.0.w2' is '!quill.q8_0'}}
  %y = quill.linear %x, %w {bf16_input} : tensor<256xf32>, tensor<4x256x!quill.q8_0> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
