// quill-copies-to-linalg: memref.copy becomes linalg.copy, so no copy lowers
// to a call of MLIR's memrefCopy runtime function.
// RUN: quill-opt %s -split-input-file --quill-copies-to-linalg | FileCheck %s --enable-var-scope

// A copy out of a strided view (the kind that needs memrefCopy) is rewritten.
// CHECK-LABEL: func.func @strided_copy
// CHECK-SAME: (%[[SRC:[^:]+]]: memref<?xf32, strided<[1], offset: ?>>, %[[DST:[^:]+]]: memref<?xf32>)
// CHECK-NEXT: linalg.copy ins(%[[SRC]] : memref<?xf32, strided<[1], offset: ?>>) outs(%[[DST]] : memref<?xf32>)
// CHECK-NEXT: return
func.func @strided_copy(%src: memref<?xf32, strided<[1], offset: ?>>, %dst: memref<?xf32>) {
  memref.copy %src, %dst : memref<?xf32, strided<[1], offset: ?>> to memref<?xf32>
  return
}

// -----

// Copies nested in loops and between static buffers are rewritten too, in place.
// CHECK-LABEL: func.func @nested_copy
// CHECK-SAME: (%[[A:[^:]+]]: memref<4x8xf32>, %[[B:[^:]+]]: memref<4x8xf32>, %[[N:[^:]+]]: index)
// CHECK: scf.for
// CHECK-NEXT: linalg.copy ins(%[[A]] : memref<4x8xf32>) outs(%[[B]] : memref<4x8xf32>)
// CHECK-NEXT: }
// CHECK-NOT: memref.copy
func.func @nested_copy(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  }
  return
}

// -----

// Must not fire: a function without memref.copy is left as it is.
// CHECK-LABEL: func.func @no_copy
// CHECK-SAME: (%[[M:[^:]+]]: memref<8xf32>, %[[I:[^:]+]]: index, %[[V:[^:]+]]: f32)
// CHECK-NEXT: memref.store %[[V]], %[[M]][%[[I]]] : memref<8xf32>
// CHECK-NEXT: return
// CHECK-NOT: linalg.copy
func.func @no_copy(%m: memref<8xf32>, %i: index, %v: f32) {
  memref.store %v, %m[%i] : memref<8xf32>
  return
}
