// Decode's products over Q8_0 and Q4_0 weights with Q8_0 inputs
// (q8_input): with int8-dot, the input is rounded to int8 blocks once per
// call, then every 32-weight block of a row is one vpdpbusd whose int32 sums
// are scaled by both blocks' scales; without it (a CPU without VNNI), the
// input is rounded and back to f32 and the weights decoded to f32 lanes.
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=16 int8-dot=true" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=16 int8-dot=false" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=F32
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s --check-prefix=NEUTRAL

// The rounding: per block of 32, max |x| / 127, roundeven(x * (1 / d)) to
// int8, and the sums of each half block; then 4 rows at a time, one vpdpbusd
// each per block, its accumulator at -16 times the block's sum (the Q8_0
// bytes' +128 offset over 8 lanes).
// CHECK-LABEL: func.func @q8_0
// CHECK: scf.for {{.*}} -> (tensor<64xi8>, tensor<2xf32>, tensor<4xi32>)
// CHECK: vector.reduction <maximumf>
// CHECK: arith.divf %{{.*}}, %cst{{.*}} : f32
// CHECK: math.roundeven %{{.*}} : vector<32xf32>
// CHECK: arith.fptosi %{{.*}} : vector<32xf32> to vector<32xi32>
// CHECK: arith.trunci %{{.*}} : vector<32xi32> to vector<32xi8>
// CHECK-COUNT-2: vector.reduction <add>, %{{.*}} : vector<16xi32> into i32
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: arith.muli %{{.*}}, %c-16_i32
// CHECK-COUNT-4: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
// CHECK: vector.reduction <add>
// F32-LABEL: func.func @q8_0
// F32-NOT: llvm.call_intrinsic
// F32: math.roundeven
// F32-NOT: llvm.call_intrinsic
// NEUTRAL-LABEL: func.func @q8_0
// NEUTRAL: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [2, 32] : tensor<64xf32> into tensor<2x32xf32>
// NEUTRAL: math.absf
// NEUTRAL: arith.maximumf
// NEUTRAL: math.roundeven
// NEUTRAL: tensor.collapse_shape
// NEUTRAL-NOT: vector.
func.func @q8_0(%x: tensor<64xf32>, %bytes: tensor<20x68xi8>, %b: index, %e: index) -> tensor<?xf32> {
  %w = quill.weight_view %bytes : tensor<20x68xi8> -> tensor<20x64x!quill.q8_0>
  %y = quill.linear %x, %w tile[%b, %e] {q8_input} : tensor<64xf32>, tensor<20x64x!quill.q8_0> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Q4_0: the nibbles are unsigned already (q - 8 the weight): the sum times
// -1, once for the rows of a block.
// CHECK-LABEL: func.func @q4_0
// CHECK: arith.muli %{{.*}}, %c-1_i32
// CHECK: arith.andi
// CHECK: arith.shrui
// CHECK: vector.shuffle
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
func.func @q4_0(%x: tensor<64xf32>, %bytes: tensor<20x36xi8>) -> tensor<20xf32> {
  %w = quill.weight_view %bytes : tensor<20x36xi8> -> tensor<20x64x!quill.q4_0>
  %y = quill.linear %x, %w {q8_input} : tensor<64xf32>, tensor<20x64x!quill.q4_0> -> tensor<20xf32>
  return %y : tensor<20xf32>
}

// -----

// Q4_K: each sub-block of 32 one vpdpbusd from a zero accumulator (the
// nibbles are the stored values), scaled by d * scale * dx; its minimum
// terms dmin * min * dx * sum(q) summed apart per row (an f32 carried beside
// the lanes) and taken off at the end.
// CHECK-LABEL: func.func @q4_k
// (One super-block per row: the loop over them folds away.)
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1
// CHECK-COUNT-32: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
// CHECK: arith.subf
func.func @q4_k(%x: tensor<256xf32>, %bytes: tensor<8x144xi8>) -> tensor<8xf32> {
  %w = quill.weight_view %bytes : tensor<8x144xi8> -> tensor<8x256x!quill.q4_k>
  %y = quill.linear %x, %w {q8_input} : tensor<256xf32>, tensor<8x256x!quill.q4_k> -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Q6_K: each group of 32 one vpdpbusd whose accumulator starts at -8 times
// the input's sum over each half (the stored six bits are q + 32), the same
// for every row; its lanes scaled by the two sub-blocks' scales, four each.
// CHECK-LABEL: func.func @q6_k
// CHECK: arith.muli %{{.*}}, %cst{{.*}} : vector<16xi32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 0, 0, 0, 1, 1, 1, 1] : vector<16xi32>, vector<16xi32>
// CHECK: arith.sitofp %{{.*}} : vector<16xi8> to vector<16xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 0, 0, 0, 1, 1, 1, 1] : vector<16xf32>, vector<16xf32>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
func.func @q6_k(%x: tensor<256xf32>, %bytes: tensor<4x210xi8>) -> tensor<4xf32> {
  %w = quill.weight_view %bytes : tensor<4x210xi8> -> tensor<4x256x!quill.q6_k>
  %y = quill.linear %x, %w {q8_input} : tensor<256xf32>, tensor<4x256x!quill.q6_k> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
