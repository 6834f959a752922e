// quill-quantize-activations marks the products over block-quantized weights
// (linear, logits, project_qkv) as taking Q8_0-rounded inputs, those over
// bf16 weights as taking bf16-rounded inputs; f32 and f16 products keep f32
// inputs.
// RUN: quill-opt %s --quill-quantize-activations | FileCheck %s

// CHECK-LABEL: func.func @products
// CHECK: quill.linear %{{.*}}, %{{.*}} {q8_input} : tensor<64xf32>, tensor<64x64x!quill.q8_0>
// CHECK: quill.linear %{{.*}}, %{{.*}} {q8_input} : tensor<64xf32>, tensor<64x64x!quill.q4_0>
// CHECK: quill.linear %{{.*}}, %{{.*}} {q8_input} : tensor<256xf32>, tensor<64x256x!quill.q4_k>
// CHECK: quill.linear %{{.*}}, %{{.*}} : tensor<64xf32>, tensor<64x64xf16>
// CHECK: quill.linear %{{.*}}, %{{.*}} : tensor<64xf32>, tensor<64x64xf32>
// CHECK: quill.linear %{{.*}}, %{{.*}} {bf16_input} : tensor<64xf32>, tensor<64x64xbf16>
// CHECK: quill.project_qkv {{.*}}q8_input{{.*}} : tensor<64xf32>, tensor<128x64x!quill.q8_0>
// CHECK: quill.logits %{{.*}}, %{{.*}} {q8_input} : tensor<64xf32>, tensor<512x64x!quill.q4_0>
func.func @products(%x: tensor<64xf32>, %x256: tensor<256xf32>, %k: tensor<16x32xf32>,
                    %v: tensor<16x32xf32>, %pos: index)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>,
        tensor<64xf32>, tensor<128xf32>, tensor<512xf32>) {
  %w0 = quill.weight "a" : tensor<64x64x!quill.q8_0>
  %w1 = quill.weight "b" : tensor<64x64x!quill.q4_0>
  %w2 = quill.weight "c" : tensor<64x256x!quill.q4_k>
  %w3 = quill.weight "d" : tensor<64x64xf16>
  %w4 = quill.weight "e" : tensor<64x64xf32>
  %w7 = quill.weight "g" : tensor<64x64xbf16>
  %w5 = quill.weight "f" : tensor<128x64x!quill.q8_0>
  %w6 = quill.weight "output" : tensor<512x64x!quill.q4_0>
  %y0 = quill.linear %x, %w0 : tensor<64xf32>, tensor<64x64x!quill.q8_0> -> tensor<64xf32>
  %y1 = quill.linear %x, %w1 : tensor<64xf32>, tensor<64x64x!quill.q4_0> -> tensor<64xf32>
  %y2 = quill.linear %x256, %w2 : tensor<256xf32>, tensor<64x256x!quill.q4_k> -> tensor<64xf32>
  %y3 = quill.linear %x, %w3 : tensor<64xf32>, tensor<64x64xf16> -> tensor<64xf32>
  %y4 = quill.linear %x, %w4 : tensor<64xf32>, tensor<64x64xf32> -> tensor<64xf32>
  %y6 = quill.linear %x, %w7 : tensor<64xf32>, tensor<64x64xbf16> -> tensor<64xf32>
  %y5, %k1, %v1 = quill.project_qkv %x, %w5 into %k, %v at %pos
      {head_dim = 8 : i64, theta = 1.0e+04 : f32}
      : tensor<64xf32>, tensor<128x64x!quill.q8_0>, tensor<16x32xf32> -> tensor<128xf32>
  %l = quill.logits %x, %w6 : tensor<64xf32>, tensor<512x64x!quill.q4_0> -> tensor<512xf32>
  return %y0, %y1, %y2, %y3, %y4, %y6, %y5, %l
      : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>,
        tensor<64xf32>, tensor<128xf32>, tensor<512xf32>
}
