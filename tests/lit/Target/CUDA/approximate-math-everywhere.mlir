// RUN: quill-opt %s --quill-approximate-math="everywhere=1" | FileCheck %s

// everywhere (quill-compile --emulate-cuda-kernels): functions outside GPU
// modules get the GPU's approximations too, so the CPU computes what the GPU
// would.
// CHECK-LABEL: func.func @cpu
// CHECK-NOT: math.
// CHECK: arith.constant 1597463007 : i32
// CHECK-NOT: math.
// CHECK: return
func.func @cpu(%x: f32) -> (f32, f32, f32) {
  %e = math.exp %x : f32
  %c = math.cos %x : f32
  %r = math.sqrt %x : f32
  return %e, %c, %r : f32, f32, f32
}
