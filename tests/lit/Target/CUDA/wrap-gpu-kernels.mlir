// RUN: quill-opt %s -split-input-file --quill-wrap-gpu-kernels | FileCheck %s

// A kernel moves into the GPU module as K_unit; gpu.func @K(memrefs, step,
// work) runs unit i = global id x when i < work, with the token and position
// read from step (device memory, [token, pos] as i64).
// CHECK: module attributes {gpu.container_module}
// CHECK: quill.schedule "step"
// CHECK: gpu.module @kernels {
// CHECK: func.func private @rmsnorm_8_8_unit(%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index) {
// CHECK: gpu.func @rmsnorm_8_8(%[[X:.*]]: memref<8xf32>, %[[W:.*]]: memref<8xf32>, %[[Y:.*]]: memref<8xf32>, %[[STEP:.*]]: memref<2xi64>, %[[WORK:.*]]: index) kernel {
// CHECK: %[[I:.*]] = gpu.global_id x
// CHECK: %[[LIVE:.*]] = arith.cmpi ult, %[[I]], %[[WORK]] : index
// CHECK: scf.if %[[LIVE]] {
// CHECK: %[[TOKEN64:.*]] = memref.load %[[STEP]][%{{.*}}] : memref<2xi64>
// CHECK: %[[TOKEN:.*]] = arith.index_cast %[[TOKEN64]] : i64 to index
// CHECK: %[[POS64:.*]] = memref.load %[[STEP]][%{{.*}}] : memref<2xi64>
// CHECK: %[[POS:.*]] = arith.index_cast %[[POS64]] : i64 to index
// CHECK: %[[NEXT:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK: func.call @rmsnorm_8_8_unit(%[[X]], %[[W]], %[[Y]], %[[TOKEN]], %[[POS]], %[[I]], %[[NEXT]])
// CHECK: gpu.return
module {
  quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 32>,
      scratch_bytes = 64 : i64, weight_bytes = 64 : i64, weight_offsets = {}} {
    quill.dispatch @rmsnorm_8_8([#quill.binding<"scratch", 0, 32>, #quill.binding<"weights", 0, 32>, #quill.binding<"scratch", 32, 32>]) work(1, 1) writes [2]
  }
  func.func @rmsnorm_8_8(%x: memref<8xf32>, %w: memref<8xf32>, %y: memref<8xf32>, %token: index,
                         %pos: index, %begin: index, %end: index) attributes {quill.kernel} {
    return
  }
}

// -----

// Must not fire: a module without kernels stays as it is.
// CHECK-LABEL: module {
// CHECK-NOT: gpu.module
// CHECK: func.func @helper
module {
  func.func @helper() {
    return
  }
}


// -----

// A kernel marked quill.warp_lanes = 32 runs unit i / 32 on thread i: its
// dispatches' work and grain count threads (units times 32), so a warp is
// wholly live or idle.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: quill.dispatch @linear_64_8x64([{{.*}}]) work(256, 32) writes [2]
// CHECK: func.func private @linear_64_8x64_unit
// CHECK-NOT: quill.warp_lanes
// CHECK: gpu.func @linear_64_8x64(%[[X:.*]]: memref<64xf32>, %[[W:.*]]: memref<8x64xf32>, %[[Y:.*]]: memref<8xf32>, %[[STEP:.*]]: memref<2xi64>, %[[WORK:.*]]: index) kernel {
// CHECK: %[[T:.*]] = gpu.global_id x
// CHECK: %[[LIVE:.*]] = arith.cmpi ult, %[[T]], %[[WORK]] : index
// CHECK: scf.if %[[LIVE]] {
// CHECK: %[[TOKEN:.*]] = arith.index_cast
// CHECK: %[[POS:.*]] = arith.index_cast
// CHECK: %[[LANES:.*]] = arith.constant 32 : index
// CHECK: %[[UNIT:.*]] = arith.divui %[[T]], %[[LANES]] : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[UNIT]], %{{.*}} : index
// CHECK: func.call @linear_64_8x64_unit(%[[X]], %[[W]], %[[Y]], %[[TOKEN]], %[[POS]], %[[UNIT]], %[[NEXT]])
module {
  quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 32>,
      scratch_bytes = 320 : i64, weight_bytes = 2048 : i64, weight_offsets = {}} {
    quill.dispatch @linear_64_8x64([#quill.binding<"scratch", 0, 256>, #quill.binding<"weights", 0, 2048>, #quill.binding<"scratch", 256, 32>]) work(8, 1) writes [2]
  }
  func.func @linear_64_8x64(%x: memref<64xf32>, %w: memref<8x64xf32>, %y: memref<8xf32>, %token: index,
                            %pos: index, %begin: index, %end: index) attributes {quill.kernel, quill.warp_lanes = 32 : i64} {
    return
  }
}
