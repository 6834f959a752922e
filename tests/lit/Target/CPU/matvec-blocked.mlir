// quill-cpu-lower-kernels on decode's matrix-vector product, at AVX-512's
// vector width (16 f32 lanes) and AVX2's (8).
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels=vector-width=16 --quill-lower-to-linalg --canonicalize --cse | FileCheck %s
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels=vector-width=8 --quill-lower-to-linalg --canonicalize --cse | FileCheck %s --check-prefix=AVX2
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s --check-prefix=NEUTRAL
// RUN: not quill-opt %s -split-input-file --quill-cpu-lower-kernels=vector-width=12 2>&1 | FileCheck %s --check-prefix=BAD
// The neutral lowering alone knows no vector width: generic forms only.
// NEUTRAL-NOT: vector.
// BAD: error: quill-cpu-lower-kernels: vector-width must be a power of two from 1 to 64, not 12

// A width that is a multiple of 16 takes the blocked form: rows in blocks of
// 8, one vector<16xf32> accumulator per row carried through the loop over the
// width (8 concurrent weight streams), then the row-by-row form for the rows
// after the last whole block.
// CHECK-LABEL: func.func @blocked
// CHECK-SAME: (%[[X:.*]]: tensor<32xf32>, %[[W:.*]]: tensor<20x32xf32>, %[[B:.*]]: index, %[[E:.*]]: index)
// CHECK: %[[N:.*]] = arith.subi %[[E]], %[[B]]
// CHECK: %[[BLOCKS:.*]] = arith.divui %[[N]], %c8
// CHECK: %[[ROWS:.*]] = scf.for %{{.*}} = %c0 to %[[BLOCKS]]
// CHECK: %[[ACC:.*]]:8 = scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: %[[XV:.*]] = vector.transfer_read %[[X]]
// CHECK-COUNT-8: vector.fma %{{.*}}, %[[XV]], %{{.*}} : vector<16xf32>
// CHECK: vector.reduction <add>, %[[ACC]]#0 fastmath<reassoc,contract>
// CHECK: vector.from_elements {{.*}} : vector<8xf32>
// CHECK: vector.transfer_write
// The tail rows, one at a time.
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: tensor.insert_slice %{{.*}} into %[[ROWS]]
// With 8 lanes: the same blocks of 8 rows, 4 steps of vector<8xf32> over
// the width of 32.
// AVX2-LABEL: func.func @blocked
// AVX2: scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// AVX2-COUNT-8: vector.fma %{{.*}} : vector<8xf32>
// AVX2-NOT: vector<16xf32>
func.func @blocked(%x: tensor<32xf32>, %w: tensor<20x32xf32>, %b: index, %e: index) -> tensor<?xf32> {
  %y = quill.linear %x, %w tile[%b, %e] : tensor<32xf32>, tensor<20x32xf32> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Must not fire: a width of 24 is no whole number of 16-lane vectors, so the
// op keeps the row-by-row form only (8 lanes fit it: three steps).
// CHECK-LABEL: func.func @odd_width
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK-NOT: vector.
// AVX2-LABEL: func.func @odd_width
// AVX2: scf.for %{{.*}} = %c0 to %c3 step %c1 {{.*}} -> (vector<8xf32>
func.func @odd_width(%x: tensor<24xf32>, %w: tensor<20x24xf32>) -> tensor<20xf32> {
  %y = quill.linear %x, %w : tensor<24xf32>, tensor<20x24xf32> -> tensor<20xf32>
  return %y : tensor<20xf32>
}
