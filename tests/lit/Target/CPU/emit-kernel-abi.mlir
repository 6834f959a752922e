// quill-emit-kernel-abi: every dispatched kernel gets the runtime's uniform
// `void K(ptr bindings, i64 token, i64 pos, i64 begin, i64 end)` entry.
// RUN: quill-opt %s -split-input-file -verify-diagnostics --quill-emit-kernel-abi | FileCheck %s --enable-var-scope

// Each dispatched kernel is renamed K_body (internal, bindings noalias) and a
// wrapper K loads binding i from bindings[i] and calls it. A kernel dispatched
// twice gets one wrapper; an undispatched function is left alone.
// CHECK-LABEL: quill.schedule "step"
// CHECK-NEXT: quill.dispatch @add_8_8(
// CHECK-NEXT: quill.dispatch @kv_write_8_16x8(
// CHECK-NEXT: quill.dispatch @add_8_8(
// CHECK-LABEL: llvm.func internal @add_8_8_body
// CHECK-SAME: (%{{[^:]+}}: !llvm.ptr {llvm.noalias}, %{{[^:]+}}: !llvm.ptr {llvm.noalias}, %{{[^:]+}}: !llvm.ptr {llvm.noalias}, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64)
// CHECK-SAME: attributes {quill.kernel}
// CHECK-LABEL: llvm.func internal @kv_write_8_16x8_body
// CHECK-SAME: (%{{[^:]+}}: !llvm.ptr {llvm.noalias}, %{{[^:]+}}: !llvm.ptr {llvm.noalias}, %{{[^:]+}}: i64,
// CHECK-LABEL: llvm.func @helper
// CHECK-SAME: (%{{[^:]+}}: !llvm.ptr)
// CHECK-LABEL: llvm.func @add_8_8
// CHECK-SAME: (%[[B:[^:]+]]: !llvm.ptr, %[[T:[^:]+]]: i64, %[[P:[^:]+]]: i64, %[[BEG:[^:]+]]: i64, %[[END:[^:]+]]: i64)
// CHECK-NEXT: %[[S0:.*]] = llvm.getelementptr %[[B]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[A0:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[S1:.*]] = llvm.getelementptr %[[B]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[A1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[S2:.*]] = llvm.getelementptr %[[B]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[A2:.*]] = llvm.load %[[S2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: llvm.call @add_8_8_body(%[[A0]], %[[A1]], %[[A2]], %[[T]], %[[P]], %[[BEG]], %[[END]])
// CHECK-NEXT: llvm.return
// CHECK-LABEL: llvm.func @kv_write_8_16x8
// CHECK-SAME: (%[[KB:[^:]+]]: !llvm.ptr, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64)
// CHECK-COUNT-2: llvm.getelementptr %[[KB]]
// CHECK: llvm.call @kv_write_8_16x8_body(
// CHECK-NOT: llvm.func @add_8_8(
// CHECK-NOT: llvm.func @helper_body
module {
  quill.schedule "step" attributes {kv_bytes = 512 : i64, logits = #quill.binding<"scratch", 64, 32>,
      scratch_bytes = 192 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
    quill.dispatch @add_8_8([#quill.binding<"scratch", 0, 32>, #quill.binding<"scratch", 0, 32>, #quill.binding<"scratch", 64, 32>]) work(1, 1)
    quill.dispatch @kv_write_8_16x8([#quill.binding<"scratch", 64, 32>, #quill.binding<"kv", 0, 512>]) work(1, 1)
    quill.dispatch @add_8_8([#quill.binding<"scratch", 64, 32>, #quill.binding<"scratch", 0, 32>, #quill.binding<"scratch", 128, 32>]) work(1, 1)
  }
  llvm.func @add_8_8(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr, %token: i64, %pos: i64, %begin: i64, %end: i64) attributes {quill.kernel} {
    llvm.return
  }
  llvm.func @kv_write_8_16x8(%row: !llvm.ptr, %cache: !llvm.ptr, %token: i64, %pos: i64, %begin: i64, %end: i64) attributes {quill.kernel} {
    llvm.return
  }
  llvm.func @helper(%p: !llvm.ptr) {
    llvm.return
  }
}

// -----

// A dispatched kernel that does not exist is an error.
// expected-error @+1 {{quill-emit-kernel-abi: kernel @missing is not an llvm.func (run convert-func-to-llvm with use-bare-ptr-memref-call-conv first)}}
module {
  quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 32>,
      scratch_bytes = 64 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
    quill.dispatch @missing([#quill.binding<"scratch", 0, 32>]) work(1, 1)
  }
}

// -----

// A kernel still in the func dialect is not converted yet: an error.
// expected-error @+1 {{quill-emit-kernel-abi: kernel @k is not an llvm.func}}
module {
  quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 32>,
      scratch_bytes = 64 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
    quill.dispatch @k([#quill.binding<"scratch", 0, 32>]) work(1, 1)
  }
  func.func @k(%a: memref<8xf32>, %t: index, %p: index, %b: index, %e: index) {
    return
  }
}

// -----

// A memref descriptor instead of a bare pointer is rejected with the type.
module {
  quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 32>,
      scratch_bytes = 64 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
    quill.dispatch @k([#quill.binding<"scratch", 0, 32>]) work(1, 1)
  }
  // expected-error @+1 {{quill-emit-kernel-abi: kernel @k must take bare pointers then 4 integers, got '!llvm.func<void (struct<(ptr, ptr, i64)>, i64, i64, i64, i64)>'}}
  llvm.func @k(%d: !llvm.struct<(ptr, ptr, i64)>, %token: i64, %pos: i64, %begin: i64, %end: i64) {
    llvm.return
  }
}

// -----

// Fewer than the 4 scalar parameters is rejected.
module {
  quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 32>,
      scratch_bytes = 64 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
    quill.dispatch @k([#quill.binding<"scratch", 0, 32>]) work(1, 1)
  }
  // expected-error @+1 {{got '!llvm.func<void (ptr, i64)>'}}
  llvm.func @k(%a: !llvm.ptr, %token: i64) {
    llvm.return
  }
}

// -----

// A dispatched kernel that is only declared has no body to wrap.
module {
  quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 32>,
      scratch_bytes = 32 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
    quill.dispatch @k([#quill.binding<"scratch", 0, 32>]) work(1, 1)
  }
  // expected-error @+1 {{quill-emit-kernel-abi: kernel @k is only declared; a dispatched kernel needs a body}}
  llvm.func @k(!llvm.ptr, i64, i64, i64, i64)
}

// -----

// The four scalars must be i64 (token, pos, begin, end).
module {
  quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 32>,
      scratch_bytes = 32 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
    quill.dispatch @k([#quill.binding<"scratch", 0, 32>]) work(1, 1)
  }
  // expected-error @+1 {{quill-emit-kernel-abi: kernel @k must take bare pointers then 4 integers}}
  llvm.func @k(%p: !llvm.ptr, %token: i32, %pos: i64, %begin: i64, %end: i64) {
    llvm.return
  }
}

// -----

// The wrapper takes the kernel's name; a function already named K_body
// would clash.
module {
  quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 32>,
      scratch_bytes = 32 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
    quill.dispatch @k([#quill.binding<"scratch", 0, 32>]) work(1, 1)
  }
  // expected-error @+1 {{quill-emit-kernel-abi: @k_body already exists}}
  llvm.func @k(%p: !llvm.ptr, %token: i64, %pos: i64, %begin: i64, %end: i64) {
    llvm.return
  }
  llvm.func @k_body() {
    llvm.return
  }
}
