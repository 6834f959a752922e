// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg -verify-diagnostics
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels -verify-diagnostics
// RUN: quill-opt %s -split-input-file --quill-cuda-warp-kernels -verify-diagnostics

// A kernel reads a block-quantized weight's bytes (quill.weight_view): a
// weight of GGUF blocks from anywhere else is refused in one line, not
// lowered into invalid IR (or a crash in the vector verifier).
func.func @blocks_without_bytes(%x: tensor<320xf32>, %w: tensor<16x320x!quill.q8_0>) -> tensor<16xf32> {
  // expected-error @+1 {{operand #1 ('tensor<16x320x!quill.q8_0>') is GGUF blocks that no quill.weight_view gives}}
  %y = quill.linear %x, %w : tensor<320xf32>, tensor<16x320x!quill.q8_0> -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// A weight before kernel outlining has no bytes in the function either.
func.func @named_weight(%x: tensor<320xf32>) -> tensor<16xf32> {
  %w = quill.weight "w" : tensor<16x320x!quill.q8_0>
  // expected-error @+1 {{operand #1 ('tensor<16x320x!quill.q8_0>') is GGUF blocks that no quill.weight_view gives}}
  %y = quill.linear %x, %w : tensor<320xf32>, tensor<16x320x!quill.q8_0> -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// The same weight through its bytes lowers.
func.func @blocks_with_bytes(%x: tensor<320xf32>, %bytes: tensor<16x340xi8>) -> tensor<16xf32> {
  %w = quill.weight_view %bytes : tensor<16x340xi8> -> tensor<16x320x!quill.q8_0>
  %y = quill.linear %x, %w : tensor<320xf32>, tensor<16x320x!quill.q8_0> -> tensor<16xf32>
  return %y : tensor<16xf32>
}
