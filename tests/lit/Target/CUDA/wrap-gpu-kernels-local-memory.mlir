// RUN: not quill-opt %s --split-input-file --quill-wrap-gpu-kernels 2>&1 | FileCheck %s

// A kernel whose temporaries exceed a GPU thread's 512 KiB of local memory
// is an error at compile time, not a failed launch on the GPU.
// CHECK: error: kernel 'big_8' keeps 600 KiB of temporaries per GPU thread; CUDA allows 512 KiB
module {
  func.func @big_8(%x: memref<8xf32>, %token: index, %pos: index, %begin: index, %end: index)
      attributes {quill.kernel} {
    %t = memref.alloca() : memref<153600xf32>
    %u = memref.alloca() : memref<8xf32>
    return
  }
}

// -----

// A stack buffer of dynamic size has no fixed place in local memory.
// CHECK: error: a stack buffer of dynamic size in kernel 'dynamic_8' cannot be a GPU thread's local memory
module {
  func.func @dynamic_8(%x: memref<8xf32>, %token: index, %pos: index, %begin: index, %end: index)
      attributes {quill.kernel} {
    %t = memref.alloca(%pos) : memref<?xf32>
    return
  }
}

// -----

// A warp-per-unit kernel's work counts threads; the runtime caps live-row
// dispatches by rows (units), so the two cannot meet.
// CHECK: error: a warp-per-unit kernel cannot be bounded by live rows
module {
  quill.schedule "batch" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 32>,
      scratch_bytes = 320 : i64, weight_bytes = 2048 : i64, weight_offsets = {}} {
    quill.dispatch @rows_8([#quill.binding<"scratch", 0, 32>]) work(8, 1) writes [0] {live_rows = 1 : i64}
  }
  func.func @rows_8(%x: memref<8xf32>, %token: index, %pos: index, %begin: index, %end: index)
      attributes {quill.kernel, quill.warp_lanes = 32 : i64} {
    return
  }
}
