// The int8 products on a CPU with AVX2 and no VNNI (int8-vnni=false): each
// vpdpbusd becomes vpmaddubsw (pairs of unsigned-by-signed byte products
// into i16), the pairs of as many words as cannot pass 32767 added in i16
// (8 words of nibbles, 2 of Q6_K's six bits, 1 of Q8_0's), then one
// vpmaddwd against ones into the i32 lanes. Q8_0 multiplies its signed
// bytes (|q| by the input with q's sign), so its offset is 0.
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels="vector-width=8 int8-dot=true int8-vnni=false" --quill-lower-to-linalg --canonicalize --cse | FileCheck %s

// Q8_0 over the file's rows: 4 rows per step, each one vpmaddubsw of |q|
// and the input's bytes with q's sign, widened at once; no offset (no
// -16 x the block's sum).
// CHECK-LABEL: func.func @q8_0_file_rows
// CHECK-NOT: %c-16_i32
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.psign.b"
// CHECK: math.absi %{{.*}} : vector<32xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// CHECK-COUNT-3: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// CHECK-NOT: vpdpbusd
func.func @q8_0_file_rows(%x: tensor<64xf32>, %bytes: tensor<20x68xi8>, %b: index, %e: index) -> tensor<?xf32> {
  %w = quill.weight_view %bytes : tensor<20x68xi8> -> tensor<20x64x!quill.q8_0>
  %y = quill.linear %x, %w tile[%b, %e] {q8_input} : tensor<64xf32>, tensor<20x64x!quill.q8_0> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Q4_0 decode over row groups of 8: a block's 8 word vectors in two runs
// of 4 (the lone token's latency hidden), each run's vpmaddubsw summed in
// i16 and widened once at the block's end; the first run starts at -8 x
// the block's sum.
// CHECK-LABEL: func.func @q4_0_decode
// CHECK: arith.muli %{{.*}}, %c-8_i32 : i32
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK-NOT: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK-COUNT-2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// CHECK-NOT: vpdpbusd
// CHECK: vector.transfer_write %{{.*}} : vector<8xf32>, tensor<?xf32>
func.func @q4_0_decode(%x: tensor<64xf32>, %bytes: tensor<16x36xi8>, %b: index, %e: index) -> tensor<?xf32> {
  %w = quill.weight_view %bytes : tensor<16x36xi8> -> tensor<16x64x!quill.q4_0, #quill.row_groups<8>>
  %y = quill.linear %x, %w tile[%b, %e] {q8_input} : tensor<64xf32>, tensor<16x64x!quill.q4_0, #quill.row_groups<8>> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Q4_K prefill over row groups of 8: per token and sub-block, 8
// vpmaddubsw in one i16 sum and one vpmaddwd.
// CHECK-LABEL: func.func @q4_k_prefill
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK-NOT: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// CHECK-NOT: vpdpbusd
func.func @q4_k_prefill(%x: tensor<4x256xf32>, %bytes: tensor<16x144xi8>) -> tensor<4x16xf32> {
  %w = quill.weight_view %bytes : tensor<16x144xi8> -> tensor<16x256x!quill.q4_k, #quill.row_groups<8>>
  %y = quill.linear %x, %w {q8_input} : tensor<4x256xf32>, tensor<16x256x!quill.q4_k, #quill.row_groups<8>> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Q6_K prefill over row groups of 8: its six-bit values (below 64) allow
// only 2 words per i16 sum, so each half of 16 weights (4 words) is two
// vpmaddubsw pairs, each widened.
// CHECK-LABEL: func.func @q6_k_prefill
// CHECK-COUNT-2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK-NOT: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// CHECK-COUNT-2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK-NOT: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// CHECK-NOT: vpdpbusd
func.func @q6_k_prefill(%x: tensor<4x256xf32>, %bytes: tensor<16x210xi8>) -> tensor<4x16xf32> {
  %w = quill.weight_view %bytes : tensor<16x210xi8> -> tensor<16x256x!quill.q6_k, #quill.row_groups<8>>
  %y = quill.linear %x, %w {q8_input} : tensor<4x256xf32>, tensor<16x256x!quill.q6_k, #quill.row_groups<8>> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
