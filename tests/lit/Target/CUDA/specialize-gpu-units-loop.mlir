// RUN: quill-opt %s --quill-specialize-gpu-units="loop-units=1" | FileCheck %s

// loop-units (quill-compile --emulate-cuda-kernels): the kernel keeps its
// name, attributes and range, and calls the specialized K_unit once per
// unit, as the GPU's threads would.
// CHECK-LABEL: func.func @scale_16(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<16xf32>, %[[TOKEN:[a-z0-9]+]]: index, %[[POS:[a-z0-9]+]]: index, %[[BEGIN:[a-z0-9]+]]: index, %[[END:[a-z0-9]+]]: index) attributes {quill.kernel}
// CHECK: scf.for %[[U:.*]] = %[[BEGIN]] to %[[END]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[U]], %{{.*}} : index
// CHECK: func.call @scale_16_unit(%[[X]], %[[TOKEN]], %[[POS]], %[[U]], %[[NEXT]])
// CHECK: func.func private @scale_16_unit(
// CHECK-NOT: quill.kernel
// CHECK: bufferization.alloc_tensor() : tensor<1xf32>
func.func @scale_16(%x: memref<16xf32>, %token: index, %pos: index, %begin: index, %end: index)
    attributes {quill.kernel} {
  %n = arith.subi %end, %begin : index
  %full = bufferization.alloc_tensor() : tensor<16xf32>
  %t = tensor.extract_slice %full[0] [%n] [1] : tensor<16xf32> to tensor<?xf32>
  %zero = arith.constant 0.0 : f32
  %filled = linalg.fill ins(%zero : f32) outs(%t : tensor<?xf32>) -> tensor<?xf32>
  %out = memref.subview %x[%begin] [%n] [1] : memref<16xf32> to memref<?xf32, strided<[1], offset: ?>>
  bufferization.materialize_in_destination %filled in restrict writable %out
      : (tensor<?xf32>, memref<?xf32, strided<[1], offset: ?>>) -> ()
  return
}
