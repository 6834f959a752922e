// RUN: quill-opt %s -split-input-file --quill-approximate-math | FileCheck %s

// Inside a GPU module, exp, sin, cos, powf, sqrt (and the fma and floor the
// approximations use) become plain arithmetic: no libdevice call remains to
// be made. sqrt is x * rsqrt(x) from the bit-level estimate 0x5f3759df.
// CHECK-LABEL: gpu.module @kernels
// CHECK: func.func @f
// CHECK-NOT: math.
// CHECK: arith.constant 1597463007 : i32
// CHECK-NOT: math.
// CHECK: return
gpu.module @kernels {
  func.func @f(%x: f32, %y: f32) -> (f32, f32, f32, f32, f32) {
    %e = math.exp %x : f32
    %s = math.sin %x : f32
    %c = math.cos %x : f32
    %p = math.powf %x, %y : f32
    %r = math.sqrt %x : f32
    return %e, %s, %c, %p, %r : f32, f32, f32, f32, f32
  }
}

// -----

// Must not fire: outside GPU modules (the CPU path keeps libm's and libmvec's
// functions).
// CHECK-LABEL: func.func @cpu
// CHECK: math.exp
// CHECK: math.sqrt
func.func @cpu(%x: f32) -> (f32, f32) {
  %e = math.exp %x : f32
  %r = math.sqrt %x : f32
  return %e, %r : f32, f32
}
