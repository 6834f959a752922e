// quill-cpu-group-weight-rows: the Q8_0, Q4_0, Q4_K and Q6_K weights
// (named, packed, and the slices steps read of a pack) that only int8
// products (q8_input) read, in whole groups of rows, get #quill.row_groups<L>; the rest keep
// the file's rows. The verdict is one per stored weight across all steps.
// RUN: quill-opt %s --quill-cpu-group-weight-rows | FileCheck %s
// RUN: quill-opt %s --quill-cpu-group-weight-rows="lanes=8" | FileCheck %s --check-prefix=YMM
// RUN: not quill-opt %s --quill-cpu-group-weight-rows="lanes=4" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: quill-cpu-group-weight-rows: lanes must be 8 or 16, not 4

// CHECK-LABEL: func.func @step
// A decode product of whole groups: grouped.
// CHECK: quill.weight "l.w1" : tensor<32x64x!quill.q8_0, #quill.row_groups<16>>
// 20 rows: not whole groups (of 16, nor of 8).
// CHECK: quill.weight "l.w2" : tensor<20x64x!quill.q4_0>
// A tied table the embedding gathers from: plain, its logits too.
// CHECK: quill.weight "tok" : tensor<32x64x!quill.q8_0>
// f32 inputs (no int8 products): plain.
// CHECK: quill.weight "l.w3" : tensor<32x64x!quill.q4_0>
// Read with q8_input here but with f32 inputs in @other: plain in both.
// CHECK: quill.weight "l.w4" : tensor<32x64x!quill.q8_0>
// YMM-LABEL: func.func @step
// YMM: quill.weight "l.w1" : tensor<32x64x!quill.q8_0, #quill.row_groups<8>>
// YMM: quill.weight "l.w2" : tensor<20x64x!quill.q4_0>
func.func @step(%x: tensor<64xf32>, %t: index) -> tensor<32xf32> {
  %w1 = quill.weight "l.w1" : tensor<32x64x!quill.q8_0>
  %w2 = quill.weight "l.w2" : tensor<20x64x!quill.q4_0>
  %tok = quill.weight "tok" : tensor<32x64x!quill.q8_0>
  %w3 = quill.weight "l.w3" : tensor<32x64x!quill.q4_0>
  %w4 = quill.weight "l.w4" : tensor<32x64x!quill.q8_0>
  %e = quill.embedding %tok[%t] : tensor<32x64x!quill.q8_0> -> tensor<64xf32>
  %y1 = quill.linear %e, %w1 {q8_input} : tensor<64xf32>, tensor<32x64x!quill.q8_0> -> tensor<32xf32>
  %y2 = quill.linear %x, %w2 {q8_input} : tensor<64xf32>, tensor<20x64x!quill.q4_0> -> tensor<20xf32>
  %y3 = quill.linear %x, %w3 : tensor<64xf32>, tensor<32x64x!quill.q4_0> -> tensor<32xf32>
  %y4 = quill.linear %x, %w4 {q8_input} : tensor<64xf32>, tensor<32x64x!quill.q8_0> -> tensor<32xf32>
  %l = quill.logits %e, %tok {q8_input} : tensor<64xf32>, tensor<32x64x!quill.q8_0> -> tensor<32xf32>
  %s1 = quill.add %y1, %y3 : tensor<32xf32>
  %s2 = quill.add %s1, %y4 : tensor<32xf32>
  %s3 = quill.add %s2, %l : tensor<32xf32>
  return %s3 : tensor<32xf32>
}

// A pack of two weights (32 rows) read whole here, and a slice of it at a
// group boundary: the pack and its slice are grouped, its parts (stored
// only inside the pack) keep their types. A slice at row 8 is no group of
// 16: that pack stays plain (with 8 lanes it is grouped).
// CHECK-LABEL: func.func @other
// CHECK: quill.weight "l.w4" : tensor<32x64x!quill.q8_0>
// CHECK: quill.weight "p.a" : tensor<16x64x!quill.q8_0>
// CHECK: quill.concat {{.*}} -> tensor<32x64x!quill.q8_0, #quill.row_groups<16>>
// CHECK: quill.concat {{.*}} -> tensor<24x64x!quill.q4_0>
// CHECK: quill.slice {{.*}}[16] : tensor<32x64x!quill.q8_0, #quill.row_groups<16>> -> tensor<16x64x!quill.q8_0, #quill.row_groups<16>>
// CHECK: quill.slice {{.*}}[8] : tensor<24x64x!quill.q4_0> -> tensor<16x64x!quill.q4_0>
// YMM-LABEL: func.func @other
// YMM: quill.concat {{.*}} -> tensor<24x64x!quill.q4_0, #quill.row_groups<8>>
func.func @other(%x: tensor<64xf32>) -> tensor<16xf32> {
  %w4 = quill.weight "l.w4" : tensor<32x64x!quill.q8_0>
  %a = quill.weight "p.a" : tensor<16x64x!quill.q8_0>
  %b = quill.weight "p.b" : tensor<16x64x!quill.q8_0>
  %c = quill.weight "p.c" : tensor<8x64x!quill.q4_0>
  %d = quill.weight "p.d" : tensor<16x64x!quill.q4_0>
  %ab = quill.concat %a, %b : (tensor<16x64x!quill.q8_0>, tensor<16x64x!quill.q8_0>) -> tensor<32x64x!quill.q8_0>
  %cd = quill.concat %c, %d : (tensor<8x64x!quill.q4_0>, tensor<16x64x!quill.q4_0>) -> tensor<24x64x!quill.q4_0>
  %bpart = quill.slice %ab[16] : tensor<32x64x!quill.q8_0> -> tensor<16x64x!quill.q8_0>
  %dpart = quill.slice %cd[8] : tensor<24x64x!quill.q4_0> -> tensor<16x64x!quill.q4_0>
  %y4 = quill.linear %x, %w4 : tensor<64xf32>, tensor<32x64x!quill.q8_0> -> tensor<32xf32>
  %yab = quill.linear %x, %ab {q8_input} : tensor<64xf32>, tensor<32x64x!quill.q8_0> -> tensor<32xf32>
  %yb = quill.linear %x, %bpart {q8_input} : tensor<64xf32>, tensor<16x64x!quill.q8_0> -> tensor<16xf32>
  %yd = quill.linear %x, %dpart {q8_input} : tensor<64xf32>, tensor<16x64x!quill.q4_0> -> tensor<16xf32>
  %s = quill.add %yb, %yd : tensor<16xf32>
  return %s : tensor<16xf32>
}

// The K-quants the same way: Q4_K and Q6_K matrices of whole groups that
// only int8 products read are grouped; 20 rows are not whole groups.
// CHECK-LABEL: func.func @kquants
// CHECK: quill.weight "k.a" : tensor<32x256x!quill.q4_k, #quill.row_groups<16>>
// CHECK: quill.weight "k.b" : tensor<16x256x!quill.q6_k, #quill.row_groups<16>>
// CHECK: quill.weight "k.c" : tensor<20x256x!quill.q6_k>
// YMM-LABEL: func.func @kquants
// YMM: quill.weight "k.a" : tensor<32x256x!quill.q4_k, #quill.row_groups<8>>
// YMM: quill.weight "k.b" : tensor<16x256x!quill.q6_k, #quill.row_groups<8>>
func.func @kquants(%x: tensor<256xf32>) -> tensor<32xf32> {
  %a = quill.weight "k.a" : tensor<32x256x!quill.q4_k>
  %b = quill.weight "k.b" : tensor<16x256x!quill.q6_k>
  %c = quill.weight "k.c" : tensor<20x256x!quill.q6_k>
  %ya = quill.linear %x, %a {q8_input} : tensor<256xf32>, tensor<32x256x!quill.q4_k> -> tensor<32xf32>
  %yb = quill.linear %x, %b {q8_input} : tensor<256xf32>, tensor<16x256x!quill.q6_k> -> tensor<16xf32>
  %yc = quill.linear %x, %c {q8_input} : tensor<256xf32>, tensor<20x256x!quill.q6_k> -> tensor<20xf32>
  return %ya : tensor<32xf32>
}
