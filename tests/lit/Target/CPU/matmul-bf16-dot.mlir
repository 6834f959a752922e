// Prefill's and the batch step's products over bf16 weights with bf16
// inputs (bf16_input): with bf16-dot (AVX512_BF16, taken on Zen 4 and 5),
// the token rows are rounded to a bf16 buffer once and the register tiles
// (2 tokens x 8 rows) read 32 bf16 columns per step, each accumulator one
// vdpbf16ps (two exact products per f32 lane); without it, the rows are
// rounded to bf16 and widened back (a stack copy), then the weights are
// decoded to the f32 register tiles. The neutral lowering rounds each input
// element where the generic product reads it.
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=16 bf16-dot=true" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=16" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=F32
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=NEUTRAL

// CHECK-LABEL: func.func @bf16_prefill
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: arith.extf %{{.*}} : bf16 to f32
// CHECK: vector.transfer_read {{.*}} : tensor<8x64xbf16>, vector<32xbf16>
// CHECK: vector.transfer_read {{.*}} : tensor<32x64xbf16>, vector<32xbf16>
// CHECK-COUNT-16: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// CHECK: vector.reduction <add>
// F32-LABEL: func.func @bf16_prefill
// F32: arith.truncf %{{.*}} : f32 to bf16
// F32-NEXT: arith.extf %{{.*}} : bf16 to f32
// F32-NOT: dpbf16ps
// F32: vector.fma
// NEUTRAL-LABEL: func.func @bf16_prefill
// NEUTRAL: linalg.generic
// NEUTRAL: arith.truncf %{{.*}} : f32 to bf16
// NEUTRAL-NEXT: arith.extf %{{.*}} : bf16 to f32
// NEUTRAL: arith.mulf
func.func @bf16_prefill(%x: tensor<8x64xf32>, %w: tensor<32x64xbf16>) -> tensor<8x32xf32> {
  %y = quill.linear %x, %w {bf16_input} : tensor<8x64xf32>, tensor<32x64xbf16> -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Decode: the input rounded to bf16 and widened once, then the usual
// decoding matrix-vector product (bandwidth-bound: no pair products).
// CHECK-LABEL: func.func @bf16_decode
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT: arith.extf %{{.*}} : bf16 to f32
// CHECK-NOT: dpbf16ps
// CHECK: vector.fma
func.func @bf16_decode(%x: tensor<64xf32>, %w: tensor<32x64xbf16>) -> tensor<32xf32> {
  %y = quill.linear %x, %w {bf16_input} : tensor<64xf32>, tensor<32x64xbf16> -> tensor<32xf32>
  return %y : tensor<32xf32>
}
