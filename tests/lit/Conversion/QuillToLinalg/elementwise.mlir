// quill-lower-to-linalg on quill.add, quill.swiglu and quill.rope: one
// elementwise linalg.generic each, with no reduction and no fastmath flags.
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s --enable-var-scope

// add: out[i] = a[i] + b[i].
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @add
// CHECK-SAME: (%[[A:[^:]+]]: tensor<8xf32>, %[[B:[^:]+]]: tensor<8xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$ID]]], iterator_types = ["parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK-NOT: quill.add
// CHECK: return %[[R]]
func.func @add(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %s = quill.add %a, %b : tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// swiglu: out[i] = g[i] * (1 / (1 + exp(-g[i]))) * u[i].
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[G:[^:]+]]: tensor<8xf32>, %[[U:[^:]+]]: tensor<8xf32>)
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel"]
// CHECK-SAME: ins(%[[G]], %[[U]] : tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[GV:[^:]+]]: f32, %[[UV:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT: %[[NEG:.*]] = arith.negf %[[GV]] : f32
// CHECK-NEXT: %[[EXP:.*]] = math.exp %[[NEG]] : f32
// CHECK-NEXT: %[[DEN:.*]] = arith.addf %[[EXP]], %[[ONE]] : f32
// CHECK-NEXT: %[[SIG:.*]] = arith.divf %[[ONE]], %[[DEN]] : f32
// CHECK-NEXT: %[[SILU:.*]] = arith.mulf %[[GV]], %[[SIG]] : f32
// CHECK-NEXT: %[[OUT:.*]] = arith.mulf %[[SILU]], %[[UV]] : f32
// CHECK-NEXT: linalg.yield %[[OUT]] : f32
// CHECK-NOT: quill.swiglu
// CHECK: return %[[R]]
func.func @swiglu(%g: tensor<8xf32>, %u: tensor<8xf32>) -> tensor<8xf32> {
  %s = quill.swiglu %g, %u : tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// rope: first a table of cos and sin for each pair of a head (d = 0, 2
// of head_dim 4), pos / theta^(d / head_dim), shared by the heads; then
// each output element i reads its pair (x[i - i%2], x[i - i%2 + 1]) and
// the table's entry (i mod head_dim) / 2: even elements take
// x0*cos - x1*sin, odd ones x0*sin + x1*cos.
// CHECK-LABEL: func.func @rope
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<8xf32>, %[[POS:[^:]+]]: index)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[HD:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[HDF:.*]] = arith.constant 4.000000e+00 : f32
// CHECK-DAG: %[[THETA:.*]] = arith.constant 1.000000e+04 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: %[[TC:.*]] = tensor.empty() : tensor<2xf32>
// CHECK: %[[TS:.*]] = tensor.empty() : tensor<2xf32>
// CHECK: %[[T:.*]]:2 = linalg.generic {{.*}} outs(%[[TC]], %[[TS]] : tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT: ^bb0(%{{[^:]+}}: f32, %{{[^:]+}}: f32):
// CHECK-NEXT: %[[J:.*]] = linalg.index 0 : index
// CHECK-NEXT: %[[D:.*]] = arith.muli %[[J]], %[[C2]] : index
// CHECK-NEXT: %[[DI:.*]] = arith.index_cast %[[D]] : index to i64
// CHECK-NEXT: %[[DF:.*]] = arith.sitofp %[[DI]] : i64 to f32
// CHECK-NEXT: %[[RATIO:.*]] = arith.divf %[[DF]], %[[HDF]] : f32
// CHECK-NEXT: %[[POW:.*]] = math.powf %[[THETA]], %[[RATIO]] : f32
// CHECK-NEXT: %[[FREQ:.*]] = arith.divf %[[ONE]], %[[POW]] : f32
// CHECK-NEXT: %[[PI:.*]] = arith.index_cast %[[POS]] : index to i64
// CHECK-NEXT: %[[PF:.*]] = arith.sitofp %[[PI]] : i64 to f32
// CHECK-NEXT: %[[ANGLE:.*]] = arith.mulf %[[PF]], %[[FREQ]] : f32
// CHECK-NEXT: %[[COS:.*]] = math.cos %[[ANGLE]] : f32
// CHECK-NEXT: %[[SIN:.*]] = math.sin %[[ANGLE]] : f32
// CHECK-NEXT: linalg.yield %[[COS]], %[[SIN]] : f32, f32
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#{{.*}}], iterator_types = ["parallel"]} outs(%[[E]] : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%{{[^:]+}}: f32):
// CHECK-NEXT: %[[I:.*]] = linalg.index 0 : index
// CHECK-NEXT: %[[PAR:.*]] = arith.remui %[[I]], %[[C2]] : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.subi %[[I]], %[[PAR]] : index
// CHECK-NEXT: %[[SECOND:.*]] = arith.addi %[[FIRST]], %[[C1]] : index
// CHECK-NEXT: %[[DD:.*]] = arith.remui %[[FIRST]], %[[HD]] : index
// CHECK-NEXT: %[[PAIR:.*]] = arith.divui %[[DD]], %[[C2]] : index
// CHECK-NEXT: %[[X0:.*]] = tensor.extract %[[Q]][%[[FIRST]]] : tensor<8xf32>
// CHECK-NEXT: %[[X1:.*]] = tensor.extract %[[Q]][%[[SECOND]]] : tensor<8xf32>
// CHECK-DAG: %[[TSIN:.*]] = tensor.extract %[[T]]#1[%[[PAIR]]] : tensor<2xf32>
// CHECK-DAG: %[[TCOS:.*]] = tensor.extract %[[T]]#0[%[[PAIR]]] : tensor<2xf32>
// CHECK-DAG: %[[X1SIN:.*]] = arith.mulf %[[X1]], %[[TSIN]] : f32
// CHECK-DAG: %[[X0COS:.*]] = arith.mulf %[[X0]], %[[TCOS]] : f32
// CHECK-DAG: %[[X1COS:.*]] = arith.mulf %[[X1]], %[[TCOS]] : f32
// CHECK-DAG: %[[X0SIN:.*]] = arith.mulf %[[X0]], %[[TSIN]] : f32
// CHECK-DAG: %[[EVEN:.*]] = arith.subf %[[X0COS]], %[[X1SIN]] : f32
// CHECK-DAG: %[[ODD:.*]] = arith.addf %[[X0SIN]], %[[X1COS]] : f32
// CHECK-DAG: %[[ISODD:.*]] = arith.cmpi ne, %[[PAR]], %[[C0]] : index
// CHECK: %[[V:.*]] = arith.select %[[ISODD]], %[[ODD]], %[[EVEN]] : f32
// CHECK-NEXT: linalg.yield %[[V]] : f32
// CHECK-NOT: quill.rope
// CHECK: return %[[R]]
func.func @rope(%q: tensor<8xf32>, %pos: index) -> tensor<8xf32> {
  %r = quill.rope %q at %pos {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A tile of a prefill's rows (the GPU's units): rows [b, e) straight into
// a tensor.empty the kernel's output rows replace, no stack buffer; row t
// of the tile is at position pos + b + t (the table's row t), and reads
// row b + t of the input.
// CHECK-LABEL: func.func @rope_row_tile
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>, %[[POS:[^:]+]]: index, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK-NOT: bufferization.alloc_tensor
// CHECK: %[[N:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[N]]) : tensor<?x8xf32>
// CHECK: %[[TC:.*]] = tensor.empty(%{{.*}}) : tensor<?x2xf32>
// CHECK: %[[TS:.*]] = tensor.empty(%{{.*}}) : tensor<?x2xf32>
// CHECK: linalg.generic {{.*}} outs(%[[TC]], %[[TS]] : tensor<?x2xf32>, tensor<?x2xf32>)
// CHECK: %[[T:.*]] = linalg.index 0 : index
// CHECK: %[[ROW:.*]] = arith.addi %[[T]], %[[B]] : index
// CHECK: arith.addi %[[POS]], %[[ROW]] : index
// CHECK: linalg.generic {{.*}} outs(%[[EMPTY]] : tensor<?x8xf32>)
// CHECK: %[[T2:.*]] = linalg.index 0 : index
// CHECK: %[[ROW2:.*]] = arith.addi %[[T2]], %[[B]] : index
// CHECK: tensor.extract %[[X]][%[[ROW2]], %{{.*}}] : tensor<4x8xf32>
// CHECK: tensor.extract %{{.*}}#0[%[[T2]], %{{.*}}] : tensor<?x2xf32>
// CHECK-NOT: bufferization.alloc_tensor
func.func @rope_row_tile(%x: tensor<4x8xf32>, %pos: index, %b: index, %e: index) -> tensor<?x8xf32> {
  %r = quill.rope %x at %pos tile[%b, %e] {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<4x8xf32> -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// A scaled RoPE reads pair d / 2's inverse frequency from its table instead
// of computing theta^(-d / head_dim), and YaRN's attention factor scales cos
// and sin.
// CHECK-LABEL: func.func @rope_table
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8xf32>, %[[POS:[^:]*]]: index, %[[F:[^:]*]]: tensor<2xf32>)
// CHECK: linalg.generic
// CHECK: %[[PAIR:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// CHECK: %[[FREQ:.*]] = tensor.extract %[[F]][%[[PAIR]]]
// CHECK-NOT: math.powf
// CHECK: arith.mulf %{{.*}}, %[[FREQ]]
// CHECK: %[[C:.*]] = math.cos
// CHECK: %[[S:.*]] = math.sin
// CHECK: arith.mulf %[[C]], %{{.*}}
// CHECK: arith.mulf %[[S]], %{{.*}}
func.func @rope_table(%x: tensor<8xf32>, %pos: index, %f: tensor<2xf32>) -> tensor<8xf32> {
  %0 = quill.rope %x at %pos freqs %f : tensor<2xf32> {attention_factor = 1.1 : f32, head_dim = 4 : i64, theta = 1.0e+06 : f32} : tensor<8xf32>
  return %0 : tensor<8xf32>
}
