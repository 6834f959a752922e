// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=16 int8-dot=true" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=16 int8-dot=true prefetch-weights=0" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=16 int8-dot=true weight-prefetch-distance=1024" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=DIST
// RUN: not quill-opt %s -split-input-file --quill-cpu-lower-kernels="weight-prefetch-distance=-2" 2>&1 | FileCheck %s --check-prefix=BADDIST
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s --check-prefix=NEUTRAL
// BADDIST: weight-prefetch-distance must be -1 (per type) or a byte count, not -2
// NEUTRAL-NOT: memref.prefetch

// Decode's products over a kernel's weight buffer prefetch, for each row of
// the block they compute, the same step of a row further on: every cache
// line of it. A Q6_K super-block of a row is 210 bytes, four lines from
// its start (one prefetch per step left the 110m classifier streaming at a
// third of its in-cache rate).
// CHECK-LABEL: func.func @q6_k
// CHECK: %[[ROW:.*]] = arith.minui %{{.*}}, %c7
// CHECK-NEXT: memref.prefetch %arg1[%[[ROW]], %c0], read, locality<3>, data : memref<8x210xi8>
// CHECK-NEXT: memref.prefetch %arg1[%[[ROW]], %c64], read, locality<3>, data : memref<8x210xi8>
// CHECK-NEXT: memref.prefetch %arg1[%[[ROW]], %c128], read, locality<3>, data : memref<8x210xi8>
// CHECK-NEXT: memref.prefetch %arg1[%[[ROW]], %c192], read, locality<3>, data : memref<8x210xi8>
// CHECK-NOT: memref.prefetch %arg1[%[[ROW]]
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
func.func @q6_k(%x: tensor<256xf32>, %m: memref<8x210xi8>, %b: index, %e: index) -> tensor<?xf32> {
  %bytes = bufferization.to_tensor %m restrict : memref<8x210xi8> to tensor<8x210xi8>
  %w = quill.weight_view %bytes : tensor<8x210xi8> -> tensor<8x256x!quill.q6_k>
  %y = quill.linear %x, %w tile[%b, %e] {q8_input} : tensor<256xf32>, tensor<8x256x!quill.q6_k> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// A Q8_0 block (34 bytes) is within a line of the next step's: one
// prefetch per row and step.
// CHECK-LABEL: func.func @q8_0
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = arith.minui %{{.*}}, %c7
// CHECK-NEXT: memref.prefetch %arg1[%[[ROW]], %{{.*}}], read, locality<3>, data : memref<8x68xi8>
// CHECK-NOT: memref.prefetch %arg1[%[[ROW]]
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
func.func @q8_0(%x: tensor<64xf32>, %m: memref<8x68xi8>, %b: index, %e: index) -> tensor<?xf32> {
  %bytes = bufferization.to_tensor %m restrict : memref<8x68xi8> to tensor<8x68xi8>
  %w = quill.weight_view %bytes : tensor<8x68xi8> -> tensor<8x64x!quill.q8_0>
  %y = quill.linear %x, %w tile[%b, %e] {q8_input} : tensor<64xf32>, tensor<8x64x!quill.q8_0> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Over row groups (decode's 16 rows as one stream), each chunk's lines
// (a Q4_0 group block: 16 x 18 = 288 bytes, five lines) are prefetched
// 8 KiB further on in the weight's bytes, clamped to its last byte (1151),
// as [row, column] of the buffer. prefetch-weights=0 leaves them out.
// CHECK-LABEL: func.func @q4_0_row_groups
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[AHEAD:.*]] = arith.addi %[[CHUNK:.*]], %c8192
// CHECK-NEXT: %[[AT:.*]] = arith.minui %[[AHEAD]], %c1151
// CHECK-NEXT: %[[ROW:.*]] = arith.divui %[[AT]], %c36
// CHECK-NEXT: %[[COL:.*]] = arith.remui %[[AT]], %c36
// CHECK-NEXT: memref.prefetch %arg1[%[[ROW]], %[[COL]]], read, locality<3>, data : memref<32x36xi8>
// CHECK: arith.addi %[[CHUNK]], %c8256
// CHECK: memref.prefetch %arg1
// CHECK: arith.addi %[[CHUNK]], %c8320
// CHECK: memref.prefetch %arg1
// CHECK: arith.addi %[[CHUNK]], %c8384
// CHECK: memref.prefetch %arg1
// CHECK: arith.addi %[[CHUNK]], %c8448
// CHECK: memref.prefetch %arg1
// CHECK-NOT: memref.prefetch
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// OFF-LABEL: func.func @q4_0_row_groups
// OFF-NOT: memref.prefetch
// weight-prefetch-distance sets the distance for every type.
// DIST-LABEL: func.func @q4_0_row_groups
// DIST: %[[AHEAD:.*]] = arith.addi %{{.*}}, %c1024
// DIST-NEXT: arith.minui %[[AHEAD]], %c1151
// DIST: memref.prefetch %arg1
func.func @q4_0_row_groups(%x: tensor<64xf32>, %m: memref<32x36xi8>, %b: index, %e: index) -> tensor<?xf32> {
  %bytes = bufferization.to_tensor %m restrict : memref<32x36xi8> to tensor<32x36xi8>
  %w = quill.weight_view %bytes : tensor<32x36xi8> -> tensor<32x64x!quill.q4_0, #quill.row_groups<16>>
  %y = quill.linear %x, %w tile[%b, %e] {q8_input} : tensor<64xf32>, tensor<32x64x!quill.q4_0, #quill.row_groups<16>> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Q8_0 row groups stream without prefetches (the hardware prefetchers keep
// up with its lighter decode), unless weight-prefetch-distance asks for them: a
// group block of 16 x 34 = 544 bytes is nine lines.
// CHECK-LABEL: func.func @q8_0_row_groups
// CHECK-NOT: memref.prefetch
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK-NOT: memref.prefetch
// DIST-LABEL: func.func @q8_0_row_groups
// DIST: %[[AHEAD:.*]] = arith.addi %[[CHUNK:.*]], %c1024
// DIST-NEXT: arith.minui %[[AHEAD]], %c2175
// DIST-COUNT-9: memref.prefetch %arg1
// DIST-NOT: memref.prefetch
func.func @q8_0_row_groups(%x: tensor<64xf32>, %m: memref<32x68xi8>, %b: index, %e: index) -> tensor<?xf32> {
  %bytes = bufferization.to_tensor %m restrict : memref<32x68xi8> to tensor<32x68xi8>
  %w = quill.weight_view %bytes : tensor<32x68xi8> -> tensor<32x64x!quill.q8_0, #quill.row_groups<16>>
  %y = quill.linear %x, %w tile[%b, %e] {q8_input} : tensor<64xf32>, tensor<32x64x!quill.q8_0, #quill.row_groups<16>> -> tensor<?xf32>
  return %y : tensor<?xf32>
}
