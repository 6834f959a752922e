// The int8 products over K-quant row groups of 8 rows (AVX-VNNI, no
// AVX-512): a group's super-block is 8-lane word vectors (32 bytes), the
// products the 256-bit vpdpbusd, the rest as with 16 lanes
// (row-groups-int8.mlir).
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=8 int8-dot=true" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s

// Q6_K decode: the group's 8 d (16 bytes) and 52 word vectors of 32 bytes,
// 64 vpdpbusd on ymm per super-block, each half of 16 weights its own
// integer sum started at -32 x the input half's sum; one f32 lane per row.
// CHECK-LABEL: func.func @q6_k_decode
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<16x210xi8> into tensor<3360xi8>
// CHECK: scf.for {{.*}} -> (tensor<?xf32>)
// CHECK-COUNT-52: vector.transfer_read %{{.*}} : tensor<3360xi8>, vector<32xi8>
// CHECK: arith.muli %{{.*}}, %c-32_i32 : i32
// CHECK-COUNT-64: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
// CHECK-NOT: vpdpbusd.512
// CHECK-NOT: vector.reduction
// CHECK: vector.transfer_write %{{.*}} : vector<8xf32>, tensor<?xf32>
func.func @q6_k_decode(%x: tensor<256xf32>, %bytes: tensor<16x210xi8>, %b: index, %e: index) -> tensor<?xf32> {
  %w = quill.weight_view %bytes : tensor<16x210xi8> -> tensor<16x256x!quill.q6_k, #quill.row_groups<8>>
  %y = quill.linear %x, %w tile[%b, %e] {q8_input} : tensor<256xf32>, tensor<16x256x!quill.q6_k, #quill.row_groups<8>> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Q4_K prefill: 36 word vectors of 32 bytes per super-block, read from the
// weight (no transposing buffer), 8 vpdpbusd on ymm per sub-block and
// token. The input rows' 8 blocks are rounded together first (their
// maxima and half sums by shuffle trees); the weights take no shuffles.
// CHECK-LABEL: func.func @q4_k_prefill
// CHECK: vector.transfer_write %{{.*}} {in_bounds = [true]} : vector<16xi32>, tensor<4x16xi32>
// CHECK-NOT: vector.shuffle
// CHECK: vector.transfer_read %{{.*}} : tensor<2304xi8>, vector<32xi8>
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
// CHECK-NOT: vector.shuffle
func.func @q4_k_prefill(%x: tensor<4x256xf32>, %bytes: tensor<16x144xi8>) -> tensor<4x16xf32> {
  %w = quill.weight_view %bytes : tensor<16x144xi8> -> tensor<16x256x!quill.q4_k, #quill.row_groups<8>>
  %y = quill.linear %x, %w {q8_input} : tensor<4x256xf32>, tensor<16x256x!quill.q4_k, #quill.row_groups<8>> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
