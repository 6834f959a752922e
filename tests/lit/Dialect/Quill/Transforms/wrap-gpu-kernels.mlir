// RUN: quill-opt %s -split-input-file --quill-wrap-gpu-kernels | FileCheck %s

// A kernel moves into the GPU module as K_unit; gpu.func @K(memrefs, token,
// pos, work) runs unit i = global id x when i < work.
// CHECK: module attributes {gpu.container_module}
// CHECK: quill.schedule "step"
// CHECK: gpu.module @kernels {
// CHECK: func.func private @rmsnorm_8_8_unit(%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index) {
// CHECK: gpu.func @rmsnorm_8_8(%[[X:.*]]: memref<8xf32>, %[[W:.*]]: memref<8xf32>, %[[Y:.*]]: memref<8xf32>, %[[TOKEN:.*]]: index, %[[POS:.*]]: index, %[[WORK:.*]]: index) kernel {
// CHECK: %[[I:.*]] = gpu.global_id x
// CHECK: %[[LIVE:.*]] = arith.cmpi ult, %[[I]], %[[WORK]] : index
// CHECK: scf.if %[[LIVE]] {
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

