// RUN: quill-opt %s -split-input-file -verify-diagnostics --quill-check-static-memory | FileCheck %s

// Must not fire: stack temporaries of static size are the contract.
// CHECK-LABEL: func.func @stack_only
// CHECK: memref.alloca() : memref<4x8xf32>
func.func @stack_only(%n: index) {
  %a = memref.alloca() : memref<4x8xf32>
  return
}

// -----

// A heap allocation left in a kernel is reported with the kernel and type.
func.func @heap_per_call(%n: index) {
  // expected-error @+1 {{quill contract: kernel @heap_per_call would allocate 'memref<?x2xf32>' on the heap at every call}}
  %a = memref.alloc(%n) : memref<?x2xf32>
  return
}

// -----

// A stack buffer inside a loop would be allocated at every iteration.
func.func @stack_in_loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @+1 {{quill contract: kernel @stack_in_loop allocates 'memref<256xf32>' on the stack inside a loop: it would grow at every iteration}}
    %a = memref.alloca() : memref<256xf32>
  }
  return
}
