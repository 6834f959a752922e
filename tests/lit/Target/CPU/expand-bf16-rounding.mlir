// quill-cpu-expand-bf16-rounding: f32 -> bf16 rounding becomes integer
// arithmetic (round to nearest even on the bits, NaN kept), and bf16 -> f32
// a shift, for scalars and vectors; other float ops are left alone.
// RUN: quill-opt %s --quill-cpu-expand-bf16-rounding | FileCheck %s

// Round to nearest even: add 0x7fff plus the kept part's lowest bit, then
// drop the low 16 bits; a NaN becomes the quiet NaN 0x7fc0 (32704).
// CHECK-LABEL: func.func @round
// CHECK-NOT: arith.truncf
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[SIXTEEN:.*]] = arith.constant 16 : i32
// CHECK-DAG: %[[QNAN:.*]] = arith.constant 32704 : i16
// CHECK-DAG: %[[HALF:.*]] = arith.constant 32767 : i32
// CHECK-DAG: %[[NAN:.*]] = arith.cmpf une, %[[X:.*]], %[[X]] : f32
// CHECK: %[[BITS:.*]] = arith.bitcast %[[X]] : f32 to i32
// CHECK: %[[HIGH:.*]] = arith.shrui %[[BITS]], %[[SIXTEEN]] : i32
// CHECK: %[[ODD:.*]] = arith.andi %[[HIGH]], %[[ONE]] : i32
// CHECK: %[[BIAS:.*]] = arith.addi %[[ODD]], %[[HALF]] : i32
// CHECK: %[[SUM:.*]] = arith.addi %[[BITS]], %[[BIAS]] : i32
// CHECK: %[[KEPT:.*]] = arith.shrui %[[SUM]], %[[SIXTEEN]] : i32
// CHECK: %[[NARROW:.*]] = arith.trunci %[[KEPT]] : i32 to i16
// CHECK: %[[PICKED:.*]] = arith.select %[[NAN]], %[[QNAN]], %[[NARROW]] : i16
// CHECK: %[[R:.*]] = arith.bitcast %[[PICKED]] : i16 to bf16
// CHECK-NEXT: return %[[R]]
func.func @round(%x: f32) -> bf16 {
  %r = arith.truncf %x : f32 to bf16
  return %r : bf16
}

// CHECK-LABEL: func.func @round_vector
// CHECK-NOT: arith.truncf
// CHECK: arith.bitcast %{{.*}} : vector<16xf32> to vector<16xi32>
// CHECK: arith.bitcast %{{.*}} : vector<16xi16> to vector<16xbf16>
func.func @round_vector(%x: vector<16xf32>) -> vector<16xbf16> {
  %r = arith.truncf %x : vector<16xf32> to vector<16xbf16>
  return %r : vector<16xbf16>
}

// CHECK-LABEL: func.func @widen
// CHECK-NOT: arith.extf
// CHECK: arith.bitcast %{{.*}} : bf16 to i16
// CHECK: arith.extui %{{.*}} : i16 to i32
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : i32 to f32
func.func @widen(%x: bf16) -> f32 {
  %r = arith.extf %x : bf16 to f32
  return %r : f32
}

// CHECK-LABEL: func.func @untouched
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.maximumf
func.func @untouched(%x: f32, %y: f32) -> (f16, f32) {
  %h = arith.truncf %x : f32 to f16
  %m = arith.maximumf %x, %y : f32
  return %h, %m : f16, f32
}

// A module holding bf16 values defines the rounding function LLVM's code
// generator calls, with the same expansion.
// CHECK-LABEL: func.func @__truncsfbf2(
// CHECK-SAME: f32) -> bf16
// CHECK-NOT: arith.truncf
// CHECK: arith.constant 32767 : i32
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
