// The int8 products over weights stored in row groups
// (#quill.row_groups<16>): decode and prefill read a group's block as its
// 16 f16 scales and 8 (Q8_0) or 4 (Q4_0, nibbles split in registers) word
// vectors (a K-quant's super-block as 36 or 52) straight from the weight's
// bytes, with no transposes, no stack buffer and no horizontal sums: 8
// vpdpbusd per block with the input word broadcast, the accumulator
// started at -offset x the input block's sum, one FMA into one f32 lane
// per row (two for Q4_K's minimum and Q6_K's halves), and the group's 16
// lanes written as 16 outputs. Decode loads a chunk's words together, then takes its
// products in the order the words lie, in four runs of vpdpbusd per step
// (its lone token would otherwise wait on each product's latency), their
// sums added as a tree.
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=16 int8-dot=true int8-dot-512=true" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s

// Decode: tiles of whole groups (tile [%b, %e] holds multiples of 16).
// CHECK-LABEL: func.func @q8_0_decode
// CHECK: arith.divui %{{.*}}, %c16 : index
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<32x68xi8> into tensor<2176xi8>
// CHECK: scf.for {{.*}} -> (tensor<?xf32>)
// CHECK: scf.for {{.*}} -> (vector<16xf32>)
// CHECK-COUNT-8: vector.transfer_read %{{.*}} : tensor<2176xi8>, vector<64xi8>
// CHECK-NOT: arith.xori
// CHECK: arith.muli %{{.*}}, %c-128_i32 : i32
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: vector.bitcast %{{.*}} : vector<32xi8> to vector<16xf16>
// CHECK: arith.extf %{{.*}} : vector<16xf16> to vector<16xf32>
// CHECK: %[[RUNS01:.*]] = arith.addi %{{.*}}, %{{.*}} : vector<16xi32>
// CHECK: %[[RUNS23:.*]] = arith.addi %{{.*}}, %{{.*}} : vector<16xi32>
// CHECK: %[[SUM:.*]] = arith.addi %[[RUNS01]], %[[RUNS23]] : vector<16xi32>
// CHECK: arith.sitofp %[[SUM]] : vector<16xi32> to vector<16xf32>
// CHECK: vector.fma
// CHECK-NOT: vector.reduction
// CHECK: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<?xf32>
func.func @q8_0_decode(%x: tensor<64xf32>, %bytes: tensor<32x68xi8>, %b: index, %e: index) -> tensor<?xf32> {
  %w = quill.weight_view %bytes : tensor<32x68xi8> -> tensor<32x64x!quill.q8_0, #quill.row_groups<16>>
  %y = quill.linear %x, %w tile[%b, %e] {q8_input} : tensor<64xf32>, tensor<32x64x!quill.q8_0, #quill.row_groups<16>> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Prefill: no transposing buffer; a tile of 8 tokens reads the group's
// blocks from the weight; Q4_0's packed words split into low and high
// nibbles (offset 8).
// CHECK-LABEL: func.func @q4_0_prefill
// CHECK-NOT: tensor<16x16xi32>
// CHECK: scf.for {{.*}} -> (tensor<8x32xf32>)
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-4: vector.transfer_read %{{.*}} : tensor<1152xi8>, vector<64xi8>
// CHECK: arith.andi %{{.*}}, %cst{{.*}} : vector<16xi32>
// CHECK: arith.shrui %{{.*}}, %cst{{.*}} : vector<16xi32>
// CHECK: arith.muli %{{.*}}, %c-8_i32 : i32
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK-NOT: vector.shuffle
func.func @q4_0_prefill(%x: tensor<8x64xf32>, %bytes: tensor<32x36xi8>) -> tensor<8x32xf32> {
  %w = quill.weight_view %bytes : tensor<32x36xi8> -> tensor<32x64x!quill.q4_0, #quill.row_groups<16>>
  %y = quill.linear %x, %w {q8_input} : tensor<8x64xf32>, tensor<32x64x!quill.q4_0, #quill.row_groups<16>> -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Q4_K decode: a super-block of a group is 36 word vectors and nothing
// else (word 0 holds each row's d and dmin as two f16, words 1-3 the
// 6-bit scales and minimums, split lane-wise); 8 sub-blocks of 8
// vpdpbusd each, two runs per sub-block, no transposes and no horizontal
// sums.
// CHECK-LABEL: func.func @q4_k_decode
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<32x144xi8> into tensor<4608xi8>
// CHECK: scf.for {{.*}} -> (tensor<?xf32>)
// CHECK-COUNT-36: vector.transfer_read %{{.*}} : tensor<4608xi8>, vector<64xi8>
// CHECK-NOT: tensor<4608xi8>, vector<32xi8>
// CHECK-COUNT-64: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: arith.trunci %{{.*}} : vector<16xi32> to vector<16xi16>
// CHECK: arith.shrui
// CHECK: arith.trunci %{{.*}} : vector<16xi32> to vector<16xi16>
// CHECK: arith.addi %{{.*}} : vector<16xi32>
// CHECK: vector.fma
// CHECK-NOT: vector.shuffle
// CHECK-NOT: vector.reduction
// CHECK: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<?xf32>
func.func @q4_k_decode(%x: tensor<256xf32>, %bytes: tensor<32x144xi8>, %b: index, %e: index) -> tensor<?xf32> {
  %w = quill.weight_view %bytes : tensor<32x144xi8> -> tensor<32x256x!quill.q4_k, #quill.row_groups<16>>
  %y = quill.linear %x, %w tile[%b, %e] {q8_input} : tensor<256xf32>, tensor<32x256x!quill.q4_k, #quill.row_groups<16>> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Q6_K prefill: the group's 16 d (f16) first, then 52 word vectors (ql,
// qh, the int8 scales sign-extended lane-wise), each read once per tile
// of tokens; each sub-block's two halves of 16 are integer sums of their
// own, started at -32 x the input half's sum.
// CHECK-LABEL: func.func @q6_k_prefill
// CHECK-NOT: tensor<128x16xi32>
// CHECK: arith.shrsi
// CHECK: vector.transfer_read %{{.*}} : tensor<6720xi8>, vector<32xi8>
// CHECK: vector.bitcast %{{.*}} : vector<32xi8> to vector<16xf16>
// CHECK: arith.muli %{{.*}}, %c-32_i32 : i32
// CHECK: arith.muli %{{.*}}, %c-32_i32 : i32
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK-NOT: vector.shuffle
func.func @q6_k_prefill(%x: tensor<8x256xf32>, %bytes: tensor<32x210xi8>) -> tensor<8x32xf32> {
  %w = quill.weight_view %bytes : tensor<32x210xi8> -> tensor<32x256x!quill.q6_k, #quill.row_groups<16>>
  %y = quill.linear %x, %w {q8_input} : tensor<8x256xf32>, tensor<32x256x!quill.q6_k, #quill.row_groups<16>> -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
