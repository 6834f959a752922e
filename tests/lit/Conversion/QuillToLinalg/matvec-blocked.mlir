// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg --canonicalize --cse | FileCheck %s

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
func.func @blocked(%x: tensor<32xf32>, %w: tensor<20x32xf32>, %b: index, %e: index) -> tensor<?xf32> {
  %y = quill.linear %x, %w tile[%b, %e] : tensor<32xf32>, tensor<20x32xf32> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Must not fire: a width of 24 is no whole number of 16-lane vectors, so the
// op keeps the row-by-row form only.
// CHECK-LABEL: func.func @odd_width
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK-NOT: vector.
func.func @odd_width(%x: tensor<24xf32>, %w: tensor<20x24xf32>) -> tensor<20xf32> {
  %y = quill.linear %x, %w : tensor<24xf32>, tensor<20x24xf32> -> tensor<20xf32>
  return %y : tensor<20xf32>
}
