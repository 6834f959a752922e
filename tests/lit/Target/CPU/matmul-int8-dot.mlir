// Prefill's and the batch step's products over Q8_0, Q4_0, Q4_K and Q6_K
// weights with Q8_0 inputs (q8_input): with int8-dot, the live token rows
// are rounded to int8 blocks, each group of 16 weight rows (8 without
// int8-dot-512) is transposed into a stack buffer so that lane r of word
// vector j holds row r's bytes for input word j, and every step of 32
// inputs is 8 vpdpbusd per token over the whole group, its int32 sums one
// FMA per row lane; without int8-matmul the weights are decoded to the f32
// register tiles as before.
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=16 int8-dot=true int8-dot-512=true" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=8 int8-dot=true" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=YMM
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=16 int8-dot=true int8-dot-512=true int8-matmul=false" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=F32

// A prefill chunk of 8 tokens: the rows rounded (amax / 127, roundeven,
// each block's sum), then per group of 16 rows the blocks transposed into
// the buffer (two rows per loaded vector, three rounds of shuffles, the
// sign bits flipped), then a tile of 8 tokens: the accumulator starts at
// -128 times the input block's sum, 8 vpdpbusd, one sitofp and one FMA by
// the rows' scales times the input's. The groups run to ceil(rows / 16):
// the last (20 rows = 16 + 4) stores through a masked write (no in_bounds).
// CHECK-LABEL: func.func @q8_0_prefill
// CHECK: scf.for {{.*}} -> (tensor<8x16xi32>, tensor<8x2xf32>, tensor<8x4xi32>)
// CHECK: math.roundeven %{{.*}} : vector<32xf32>
// CHECK-COUNT-2: vector.reduction <add>, %{{.*}} : vector<16xi32> into i32
// CHECK: vector.bitcast %{{.*}} : vector<32xi8> to vector<8xi32>
// CHECK: arith.addi %{{.*}}, %c15 : index
// CHECK: arith.divui %{{.*}}, %c16 : index
// CHECK: scf.for {{.*}} -> (tensor<8x?xf32>, tensor<16x16xi32>, tensor<2x16xf32>)
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, {{.*}}, 15] : vector<8xi32>, vector<8xi32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30] : vector<16xi32>, vector<16xi32>
// CHECK-COUNT-8: arith.xori %{{.*}}, %{{.*}} : vector<16xi32>
// CHECK: vector.from_elements {{.*}} : vector<16xf32>
// CHECK-COUNT-8: vector.transfer_write %{{.*}} : vector<16xi32>, tensor<16x16xi32>
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: arith.muli %{{.*}}, %c-128_i32 : i32
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: arith.sitofp %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK: vector.fma
// CHECK-COUNT-56: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: vector.transfer_write %{{.*}}[%{{.*}}, %{{.*}}] : vector<16xf32>, tensor<8x?xf32>
// YMM-LABEL: func.func @q8_0_prefill
// YMM: scf.for {{.*}} -> (tensor<8x?xf32>, tensor<16x8xi32>, tensor<2x8xf32>)
// YMM: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>)
// YMM-COUNT-8: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
// F32-LABEL: func.func @q8_0_prefill
// F32-NOT: llvm.call_intrinsic
// F32: math.roundeven
// F32-NOT: llvm.call_intrinsic
// F32: vector.fma
func.func @q8_0_prefill(%x: tensor<8x64xf32>, %bytes: tensor<20x68xi8>, %b: index, %e: index) -> tensor<8x?xf32> {
  %w = quill.weight_view %bytes : tensor<20x68xi8> -> tensor<20x64x!quill.q8_0>
  %y = quill.linear %x, %w tile[%b, %e] {q8_input} : tensor<8x64xf32>, tensor<20x64x!quill.q8_0> -> tensor<8x?xf32>
  return %y : tensor<8x?xf32>
}

// -----

// A batch step of 16 rows (live rows %n): tiles of 8 live tokens, then one
// tile of 4 for what is left, then the rest one by one (8 vpdpbusd per
// token of a tile); a kernel of 4 rows (@q4_0_batch) has no tile of 8.
// CHECK-LABEL: func.func @q8_0_batch_tiles
// CHECK: %[[LIVE:.*]] = arith.minui %{{.*}}, %c16 : index
// CHECK: arith.divui %[[LIVE]], %c8 : index
// CHECK: scf.for {{.*}} -> (tensor<16x16xf32>)
// CHECK-COUNT-64: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: arith.divui %{{.*}}, %c4 : index
// CHECK: scf.for {{.*}} -> (tensor<16x16xf32>)
// CHECK-COUNT-32: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: scf.for {{.*}} -> (tensor<16x16xf32>)
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK-NOT: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
func.func @q8_0_batch_tiles(%x: tensor<16x32xf32>, %bytes: tensor<16x34xi8>, %n: index) -> tensor<16x16xf32> {
  %w = quill.weight_view %bytes : tensor<16x34xi8> -> tensor<16x32x!quill.q8_0>
  %y = quill.linear %x, %w rows %n {q8_input} : tensor<16x32xf32>, tensor<16x32x!quill.q8_0> -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}

// -----

// A batch step (live rows %n): only the live rows are rounded, and a
// batch of one takes the same buffered groups (one token per tile); Q4_0's
// nibbles (offset 8) give the low words (weights 0-15) and the high words
// (16-31).
// CHECK-LABEL: func.func @q4_0_batch
// CHECK: %[[LIVE:.*]] = arith.minui %{{.*}}, %c4 : index
// CHECK: scf.for %{{.*}} = %c0 to %[[LIVE]]
// CHECK: arith.andi %{{.*}}, %cst{{.*}} : vector<16xi32>
// CHECK: arith.shrui %{{.*}}, %cst{{.*}} : vector<16xi32>
// CHECK-NOT: arith.divui %{{.*}}, %c8 : index
// CHECK: arith.muli %{{.*}}, %c-8_i32 : i32
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
func.func @q4_0_batch(%x: tensor<4x64xf32>, %bytes: tensor<32x36xi8>, %n: index) -> tensor<4x32xf32> {
  %w = quill.weight_view %bytes : tensor<32x36xi8> -> tensor<32x64x!quill.q4_0>
  %y = quill.linear %x, %w rows %n {q8_input} : tensor<4x64xf32>, tensor<32x64x!quill.q4_0> -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Q4_K: a super-block is 8 steps, repacked together (its 6-bit scales and
// minimums unpacked per row, then transposed as words); a step's
// accumulator starts at zero (the nibbles are the values), and the
// minimum's term dmin * min * d_x * sum(q_x) is taken off by one more FMA.
// CHECK-LABEL: func.func @q4_k_batch
// CHECK: scf.for {{.*}} -> (tensor<4x32xf32>, tensor<64x16xi32>, tensor<16x16xf32>)
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%cst
// CHECK-COUNT-7: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: arith.negf %{{.*}} : f32
// CHECK: vector.fma
func.func @q4_k_batch(%x: tensor<4x256xf32>, %bytes: tensor<32x144xi8>, %n: index) -> tensor<4x32xf32> {
  %w = quill.weight_view %bytes : tensor<32x144xi8> -> tensor<32x256x!quill.q4_k>
  %y = quill.linear %x, %w rows %n {q8_input} : tensor<4x256xf32>, tensor<32x256x!quill.q4_k> -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Q6_K: the two halves of a step have their own scales (sub-blocks of 16):
// two int32 accumulators of 4 vpdpbusd each, started at -32 times their
// half's input sum (the six bits are q + 32).
// CHECK-LABEL: func.func @q6_k_prefill
// CHECK: arith.muli %{{.*}}, %c-32_i32 : i32
// CHECK-COUNT-4: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: arith.muli %{{.*}}, %c-32_i32 : i32
// CHECK-COUNT-4: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK-COUNT-2: vector.fma
func.func @q6_k_prefill(%x: tensor<8x256xf32>, %bytes: tensor<16x210xi8>) -> tensor<8x16xf32> {
  %w = quill.weight_view %bytes : tensor<16x210xi8> -> tensor<16x256x!quill.q6_k>
  %y = quill.linear %x, %w {q8_input} : tensor<8x256xf32>, tensor<16x256x!quill.q6_k> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// Rows of 10 blocks: the first 8 are rounded together. |x| as integer bits
// (the sign masked off), their maxima by vpmaxud folds and one shuffle tree
// for all 8 blocks, the scales by one vector division, each block's halves'
// sums by two more trees, interleaved into block order; the 2 blocks left
// are rounded one at a time (horizontal reductions).
// CHECK-LABEL: func.func @q8_0_block_groups
// CHECK: scf.for %[[T:.*]] = %c0 to %c2 step %c1 iter_args({{.*}}) -> (tensor<2x80xi32>, tensor<2x10xf32>, tensor<2x20xi32>)
// CHECK-COUNT-8: vector.transfer_read %{{.*}} : tensor<2x320xf32>, vector<32xf32>
// CHECK-COUNT-8: arith.andi %{{.*}}, %{{.*}} : vector<32xi32>
// CHECK: arith.maxui %{{.*}}, %{{.*}} : vector<8xi32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11] : vector<8xi32>, vector<8xi32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [1, 3, 5, 7, 9, 11, 13, 15] : vector<8xi32>, vector<8xi32>
// CHECK: %[[MAXIMA:.*]] = arith.maxui %{{.*}}, %{{.*}} : vector<8xi32>
// CHECK: %[[AMAX:.*]] = vector.bitcast %[[MAXIMA]] : vector<8xi32> to vector<8xf32>
// CHECK: %[[D:.*]] = arith.divf %[[AMAX]], %{{.*}} : vector<8xf32>
// CHECK-NOT: vector.reduction
// CHECK: %[[SUMS:.*]] = vector.interleave %{{.*}}, %{{.*}} : vector<8xi32> -> vector<16xi32>
// CHECK-COUNT-8: vector.transfer_write %{{.*}} {in_bounds = [true]} : vector<8xi32>, tensor<2x80xi32>
// CHECK: vector.transfer_write %[[D]], %{{.*}}[%[[T]], %c0] {in_bounds = [true]} : vector<8xf32>, tensor<2x10xf32>
// CHECK: vector.transfer_write %[[SUMS]], %{{.*}}[%[[T]], %c0] {in_bounds = [true]} : vector<16xi32>, tensor<2x20xi32>
// CHECK: scf.for %{{.*}} = %c8 to %c10 step %c1
// CHECK: vector.reduction <maximumf>, %{{.*}} : vector<32xf32> into f32
func.func @q8_0_block_groups(%x: tensor<2x320xf32>, %bytes: tensor<16x340xi8>) -> tensor<2x16xf32> {
  %w = quill.weight_view %bytes : tensor<16x340xi8> -> tensor<16x320x!quill.q8_0>
  %y = quill.linear %x, %w {q8_input} : tensor<2x320xf32>, tensor<16x320x!quill.q8_0> -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}
