// A product over a weight stored in row groups (#quill.row_groups<16>) is
// tiled in units of whole groups: quill-outline-kernels gives it one unit
// per 16 weight rows (16 outputs, or 8 with SwiGLU, which reads two weight
// rows per output) and the kernel writes units [b, e) x that; the
// lowering reads the same tile as weight rows [16 b, 16 e).
// RUN: quill-opt %s --quill-outline-kernels | FileCheck %s
// RUN: quill-opt %s --quill-outline-kernels \
// RUN:   --quill-cpu-lower-kernels="vector-width=16 int8-dot=true int8-dot-512=true" \
// RUN:   --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=LOWERED

// CHECK: quill.schedule "step"
// CHECK-SAME: weight_row_groups = {l.w13 = 16 : i64, l.wo = 16 : i64}
// CHECK: quill.dispatch @[[WO:linear_64_64x64]]({{.*}}) work(4, 1)
// CHECK: quill.dispatch @[[W13:linear_64_64x64_0]]({{.*}}) work(4, 2)
// CHECK: func.func @[[WO]](
// CHECK-SAME: %[[B:[a-z0-9]+]]: index, %[[E:[a-z0-9]+]]: index)
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[FIRST:.*]] = arith.muli %[[B]], %[[C16]] : index
// CHECK: %[[UNITS:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK: %[[SIZE:.*]] = arith.muli %[[UNITS]], %[[C16]] : index
// CHECK: memref.subview %{{.*}}[%[[FIRST]]] [%[[SIZE]]] [1]
// CHECK: quill.linear {{.*}} tile[%[[B]], %[[E]]] {q8_input}
// CHECK: func.func @[[W13]](
// CHECK: arith.constant 8 : index
// CHECK: quill.linear {{.*}} {q8_input, swiglu}

// The lowered decode kernel reads groups from weight row 16 b, (e - b)
// groups of them.
// LOWERED-LABEL: func.func @linear_64_64x64(
// LOWERED-SAME: %[[B:[a-z0-9]+]]: index, %[[E:[a-z0-9]+]]: index)
// LOWERED: %[[FIRST:.*]] = arith.muli %[[B]], %c16 : index
// LOWERED: %[[UNITS:.*]] = arith.subi %[[E]], %[[B]] : index
// LOWERED: %[[ROWS:.*]] = arith.muli %[[UNITS]], %c16 : index
// LOWERED: %[[GROUPS:.*]] = arith.divui %[[ROWS]], %c16 : index
// LOWERED: scf.for %[[G:.*]] = %c0 to %[[GROUPS]]
// LOWERED: %[[AT:.*]] = arith.muli %[[G]], %c16 : index
// LOWERED: %[[ROW:.*]] = arith.addi %[[FIRST]], %[[AT]] : index
// LOWERED: arith.muli %[[ROW]], %c68 : index
func.func @step(%token: index, %pos: index) -> tensor<32xf32> {
  %emb = quill.weight "tok" : tensor<16x64xf32>
  %x = quill.embedding %emb[%token] : tensor<16x64xf32> -> tensor<64xf32>
  %w = quill.weight "l.wo" : tensor<64x64x!quill.q8_0, #quill.row_groups<16>>
  %g = quill.weight "l.w13" : tensor<64x64x!quill.q4_0, #quill.row_groups<16>>
  %y = quill.linear %x, %w {q8_input} : tensor<64xf32>, tensor<64x64x!quill.q8_0, #quill.row_groups<16>> -> tensor<64xf32>
  %h = quill.linear %y, %g {q8_input, swiglu} : tensor<64xf32>, tensor<64x64x!quill.q4_0, #quill.row_groups<16>> -> tensor<32xf32>
  return %h : tensor<32xf32>
}
