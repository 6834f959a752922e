// RUN: quill-opt %s -split-input-file --quill-specialize-gpu-units -verify-diagnostics | FileCheck %s

// A kernel over units [begin, end): end becomes begin + 1, the range's
// length folds to 1, and the temporary sized for the whole range shrinks to
// one unit's slice.
// CHECK-LABEL: func.func @linear_4x16_32x16(
// CHECK-SAME: %[[BEGIN:[a-z0-9]+]]: index, %[[END:[a-z0-9]+]]: index)
// CHECK-NOT: %[[END]]
// CHECK-NOT: tensor<4x32xf32>
// CHECK: bufferization.alloc_tensor() : tensor<4x1xf32>
// CHECK-NOT: tensor.extract_slice %{{.*}}[0, 0]
// CHECK: return
func.func @linear_4x16_32x16(%x: memref<4x16xf32>, %w: memref<32x16xf32>, %y: memref<4x32xf32>,
                             %token: index, %pos: index, %begin: index, %end: index)
    attributes {quill.kernel} {
  %n = arith.subi %end, %begin : index
  %full = bufferization.alloc_tensor() : tensor<4x32xf32>
  %t = tensor.extract_slice %full[0, 0] [4, %n] [1, 1] : tensor<4x32xf32> to tensor<4x?xf32>
  %zero = arith.constant 0.0 : f32
  %filled = linalg.fill ins(%zero : f32) outs(%t : tensor<4x?xf32>) -> tensor<4x?xf32>
  %out = memref.subview %y[0, %begin] [4, %n] [1, 1]
      : memref<4x32xf32> to memref<4x?xf32, strided<[32, 1], offset: ?>>
  bufferization.materialize_in_destination %filled in restrict writable %out
      : (tensor<4x?xf32>, memref<4x?xf32, strided<[32, 1], offset: ?>>) -> ()
  return
}

// -----

// Must not fire: functions that are not kernels keep their range, and a
// slice at a nonzero offset keeps its buffer.
// CHECK-LABEL: func.func @helper(
// CHECK: arith.subi
// CHECK: tensor<4x32xf32>
// CHECK-LABEL: func.func @offset_slice(
// CHECK: bufferization.alloc_tensor() : tensor<4x32xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 8] [4, 1] [1, 1]
func.func @helper(%begin: index, %end: index) -> tensor<4x?xf32> {
  %n = arith.subi %end, %begin : index
  %full = bufferization.alloc_tensor() : tensor<4x32xf32>
  %t = tensor.extract_slice %full[0, 0] [4, %n] [1, 1] : tensor<4x32xf32> to tensor<4x?xf32>
  return %t : tensor<4x?xf32>
}
func.func @offset_slice(%y: memref<4x32xf32>, %token: index, %pos: index, %begin: index,
                        %end: index) attributes {quill.kernel} {
  %n = arith.subi %end, %begin : index
  %full = bufferization.alloc_tensor() : tensor<4x32xf32>
  %t = tensor.extract_slice %full[0, 8] [4, %n] [1, 1] : tensor<4x32xf32> to tensor<4x?xf32>
  %out = memref.subview %y[0, %begin] [4, %n] [1, 1]
      : memref<4x32xf32> to memref<4x?xf32, strided<[32, 1], offset: ?>>
  bufferization.materialize_in_destination %t in restrict writable %out
      : (tensor<4x?xf32>, memref<4x?xf32, strided<[32, 1], offset: ?>>) -> ()
  return
}

// -----

// A slice with a size still dynamic after specialization keeps that extent
// and shrinks the others (attention's scores over the positions so far).
// CHECK-LABEL: func.func @partly_dynamic(
// CHECK: %[[T:.*]] = bufferization.alloc_tensor() : tensor<1x8x64xf32>
// CHECK: tensor.extract_slice %[[T]][0, 0, 0] [1, 8, %{{.*}}] [1, 1, 1] : tensor<1x8x64xf32> to tensor<1x8x?xf32>
func.func @partly_dynamic(%y: memref<4x8x64xf32>, %token: index, %pos: index, %begin: index,
                          %end: index) attributes {quill.kernel} {
  %n = arith.subi %end, %begin : index
  %full = bufferization.alloc_tensor() : tensor<4x8x64xf32>
  %t = tensor.extract_slice %full[0, 0, 0] [%n, 8, %pos] [1, 1, 1]
      : tensor<4x8x64xf32> to tensor<?x8x?xf32>
  %out = memref.subview %y[%begin, 0, 0] [%n, 8, %pos] [1, 1, 1]
      : memref<4x8x64xf32> to memref<?x8x?xf32, strided<[512, 64, 1], offset: ?>>
  bufferization.materialize_in_destination %t in restrict writable %out
      : (tensor<?x8x?xf32>, memref<?x8x?xf32, strided<[512, 64, 1], offset: ?>>) -> ()
  return
}

// -----

// A kernel that breaks the kernel contract is an error, not a miscompile.
func.func @bad(%x: memref<4xf32>) attributes {quill.kernel} {
  // expected-error @-1 {{kernel 'bad' must return nothing and end with four index arguments}}
  return
}
