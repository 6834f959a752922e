// The stage pipelines on a whole (tiny) step: embedding, one attention block
// with grouped kv heads, swiglu, the final norm and tied logits. Each stage
// must leave only the IR its contract allows.
// RUN: quill-opt %s --quill-pipeline-to-linalg="cpu=x86-64-v4" | FileCheck %s --check-prefix=LINALG
// RUN: quill-opt %s --quill-pipeline-to-loops="cpu=x86-64-v4" | FileCheck %s --check-prefix=LOOPS
// RUN: quill-opt %s --quill-pipeline-to-loops="cpu=x86-64-v4" | FileCheck %s --check-prefix=LOOPS-NONE
// RUN: quill-opt %s --quill-pipeline-to-llvm-dialect="cpu=x86-64-v4" | FileCheck %s --check-prefix=LLVM
// RUN: quill-opt %s --quill-pipeline-to-llvm-dialect="cpu=x86-64-v4" | FileCheck %s --check-prefix=LLVM-NONE

// linalg stage: every quill compute op is lowered inside its kernel.
// LINALG-LABEL: quill.schedule "step"
// LINALG-COUNT-7: quill.dispatch
// LINALG-LABEL: func.func @project_qkv_8_16x8_32x4_32x4(
// LINALG: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// LINALG-NOT: quill.{{(weight|kv_cache|kv_write|embedding|rmsnorm|linear|logits|rope|attention|swiglu|add) }}

// loops stage: memrefs, loops, arith and math only; temporaries on the stack.
// LOOPS-LABEL: quill.schedule "step"
// LOOPS-COUNT-7: quill.dispatch
// The QKV projection with the attention norm folded in (1/rms inside),
// rotary embedding and the cache rows written as its epilogue.
// LOOPS-LABEL: func.func @project_qkv_8_16x8_32x4_32x4(
// LOOPS: scf.for
// LOOPS: arith.mulf {{.*}} fastmath<reassoc,contract>
// LOOPS: math.sqrt
// LOOPS: math.cos
// LOOPS: memref.subview
// LOOPS-LABEL: func.func @attention_8_32x4_32x4(
// LOOPS: memref.alloca() {{.*}}: memref<2x2x32xf32>
// LOOPS: math.exp
// LOOPS-LABEL: func.func @rmsnorm_8_8(
// LOOPS-SAME: memref<8xf32>
// LOOPS: memref.alloca() {{.*}}: memref<f32>
// LOOPS: scf.for
// LOOPS: math.sqrt
// LOOPS-LABEL: func.func @logits_8_16x8(
// LOOPS: scf.for

// No quill compute op, tensor, linalg, bufferization or other dialect is left,
// nothing is heap-allocated or copied through a runtime call.
// LOOPS-NONE-NOT: quill.{{(weight|kv_cache|kv_write|embedding|rmsnorm|linear|logits|rope|attention|swiglu|add) }}
// LOOPS-NONE-NOT: {{ (tensor|linalg|bufferization|affine|cf|llvm|vector|ub|index|complex|builtin)\.}}
// LOOPS-NONE-NOT: tensor<
// LOOPS-NONE-NOT: memref.alloc{{ |\(}}
// LOOPS-NONE-NOT: memref.dealloc
// LOOPS-NONE-NOT: memref.copy
// LOOPS-NONE-NOT: call
// LOOPS-NONE-NOT: func.func private

// llvm-dialect stage: the schedule is kept and every dispatched kernel K has a
// body K_body and a wrapper K(ptr, i64 x 4) that calls it.
// LLVM-LABEL: quill.schedule "step"
// LLVM-NEXT: quill.dispatch @[[EMB:[a-z0-9_]+]](
// LLVM-NEXT: quill.dispatch @[[LQ:[a-z0-9_]+]](
// LLVM-NEXT: quill.dispatch @[[ATT:[a-z0-9_]+]](
// LLVM-NEXT: quill.dispatch @[[ADD:[a-z0-9_]+]](
// LLVM-NEXT: quill.dispatch @[[SWIGLU:[a-z0-9_]+]](
// LLVM-NEXT: quill.dispatch @[[NORM:[a-z0-9_]+]](
// LLVM-NEXT: quill.dispatch @[[CLS:[a-z0-9_]+]](
// LLVM-NEXT: }
// LLVM-DAG: llvm.func internal @[[EMB]]_body(
// LLVM-DAG: llvm.func internal @[[NORM]]_body(
// LLVM-DAG: llvm.func internal @[[LQ]]_body(
// LLVM-DAG: llvm.func internal @[[ATT]]_body(
// LLVM-DAG: llvm.func internal @[[ADD]]_body(
// LLVM-DAG: llvm.func internal @[[SWIGLU]]_body(
// LLVM-DAG: llvm.func internal @[[CLS]]_body(
// LLVM-DAG: llvm.func @[[EMB]](%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64) {
// LLVM-DAG: llvm.func @[[NORM]](%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64) {
// LLVM-DAG: llvm.func @[[LQ]](%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64) {
// LLVM-DAG: llvm.func @[[ATT]](%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64) {
// LLVM-DAG: llvm.func @[[ADD]](%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64) {
// LLVM-DAG: llvm.func @[[SWIGLU]](%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64) {
// LLVM-DAG: llvm.func @[[CLS]](%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64) {
// LLVM-DAG: llvm.call @[[EMB]]_body(
// LLVM-DAG: llvm.call @[[NORM]]_body(
// LLVM-DAG: llvm.call @[[LQ]]_body(
// LLVM-DAG: llvm.call @[[ATT]]_body(
// LLVM-DAG: llvm.call @[[ADD]]_body(
// LLVM-DAG: llvm.call @[[SWIGLU]]_body(
// LLVM-DAG: llvm.call @[[CLS]]_body(

// Only the LLVM dialect besides the schedule; no declaration of (and no call
// into) a runtime library such as memrefCopy, malloc or free.
// LLVM-NONE-NOT: {{ (func|memref|scf|arith|math|cf|tensor|linalg|bufferization|affine|index|ub|vector|builtin)\.}}
// LLVM-NONE-NOT: quill.{{(weight|kv_cache|kv_write|embedding|rmsnorm|linear|logits|rope|attention|swiglu|add) }}
// LLVM-NONE-NOT: {{tensor<|memref<}}
// LLVM-NONE-NOT: memrefCopy
// LLVM-NONE-NOT: malloc
// LLVM-NONE-NOT: @free
// LLVM-NONE-NOT: {{^ *llvm.func .*[^{]$}}

func.func @step(%token: index, %pos: index) -> tensor<16xf32> {
  %emb = quill.weight "tok_embeddings" : tensor<16x8xf32>
  %x = quill.embedding %emb[%token] : tensor<16x8xf32> -> tensor<8xf32>
  %nw = quill.weight "layers.0.attention_norm" : tensor<8xf32>
  %h = quill.rmsnorm %x, %nw {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<8xf32>
  %wq = quill.weight "layers.0.wq" : tensor<8x8xf32>
  %wk = quill.weight "layers.0.wk" : tensor<4x8xf32>
  %wv = quill.weight "layers.0.wv" : tensor<4x8xf32>
  %q = quill.linear %h, %wq : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %k = quill.linear %h, %wk : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %v = quill.linear %h, %wv : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %qr = quill.rope %q at %pos {head_dim = 2 : i64, theta = 1.0e+04 : f32} : tensor<8xf32>
  %kr = quill.rope %k at %pos {head_dim = 2 : i64, theta = 1.0e+04 : f32} : tensor<4xf32>
  %kc = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
  %vc = quill.kv_cache "value" layer 0 : tensor<32x4xf32>
  %kc1 = quill.kv_write %kr into %kc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %vc1 = quill.kv_write %v into %vc at %pos : tensor<4xf32> into tensor<32x4xf32>
  %att = quill.attention %qr, %kc1, %vc1 at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<8xf32>
  %x1 = quill.add %x, %att : tensor<8xf32>
  %g = quill.swiglu %x1, %x : tensor<8xf32>
  %fw = quill.weight "norm" : tensor<8xf32>
  %f = quill.rmsnorm %g, %fw {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<8xf32>
  %l = quill.logits %f, %emb : tensor<8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %l : tensor<16xf32>
}
