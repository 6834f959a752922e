// quill-lower-to-linalg on quill.attention: the scaled query's scores,
// softmax numerators, the weighted sum of values and a final division by the
// sums, as linalg.generic ops over [kv head, group, ...].
// RUN: quill-opt %s -split-input-file --quill-cpu-lower-kernels=vector-width=16 --quill-lower-to-linalg | FileCheck %s --enable-var-scope
// RUN: quill-opt %s -split-input-file --quill-lower-to-linalg | FileCheck %s --check-prefix=NEUTRAL
// The neutral lowering alone: generic forms, no vectors.
// NEUTRAL-NOT: vector.

// Untiled, 4 query heads over 2 kv heads of head_dim 2: q is viewed as
// [kv head, group, d] and scaled by 1/sqrt(2) once, the caches as
// [position, kv head, d] cut to pos + 1 positions; the two dot-product
// reductions carry reassoc/contract; the weighted sum is divided by the
// softmax sums at the end (head_dim divisions per head, not one per position).
// CHECK-DAG: #[[$Q:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$K:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d0, d3)>
// CHECK-DAG: #[[$S:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[$ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$ROW:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<8xf32>, %[[KC:[^:]+]]: tensor<32x4xf32>, %[[VC:[^:]+]]: tensor<32x4xf32>, %[[POS:[^:]+]]: index)
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 0.707106769 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[N:.*]] = arith.addi %[[POS]], %[[ONE]] : index
// CHECK: %[[Q3:.*]] = tensor.expand_shape %[[Q]] {{\[}}[0, 1, 2]] output_shape [2, 2, 2] : tensor<8xf32> into tensor<2x2x2xf32>
// CHECK: %[[K3:.*]] = tensor.expand_shape %[[KC]] {{\[}}[0], [1, 2]] output_shape [32, 2, 2] : tensor<32x4xf32> into tensor<32x2x2xf32>
// CHECK: %[[KS:.*]] = tensor.extract_slice %[[K3]][0, 0, 0] [%[[N]], 2, 2] [1, 1, 1] : tensor<32x2x2xf32> to tensor<?x2x2xf32>
// CHECK: %[[V3:.*]] = tensor.expand_shape %[[VC]] {{\[}}[0], [1, 2]] output_shape [32, 2, 2]
// CHECK: %[[VS:.*]] = tensor.extract_slice %[[V3]][0, 0, 0] [%[[N]], 2, 2] [1, 1, 1] : tensor<32x2x2xf32> to tensor<?x2x2xf32>
// CHECK: %[[SE:.*]] = bufferization.alloc_tensor() : tensor<2x2x32xf32>
// CHECK: %[[SES:.*]] = tensor.extract_slice %[[SE]][0, 0, 0] [2, 2, %[[N]]] [1, 1, 1] : tensor<2x2x32xf32> to tensor<2x2x?xf32>
// CHECK: %[[S0:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[SES]] : tensor<2x2x?xf32>)
// CHECK: %[[QSCALED:.*]] = linalg.generic {indexing_maps = [#[[$ID3]], #[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[Q3]] : tensor<2x2x2xf32>)
// CHECK: arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK: %[[SCORES:.*]] = linalg.generic {indexing_maps = [#[[$Q]], #[[$K]], #[[$S]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[QSCALED]], %[[KS]] : tensor<2x2x2xf32>, tensor<?x2x2xf32>) outs(%[[S0]] : tensor<2x2x?xf32>)
// CHECK: arith.mulf {{.*}} fastmath<reassoc,contract>
// CHECK: arith.addf {{.*}} fastmath<reassoc,contract>
// CHECK: %[[M0:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.*}} : tensor<2x2xf32>)
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[$ID3]], #[[$ROW]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[SCORES]] : tensor<2x2x?xf32>) outs(%[[M0]] : tensor<2x2xf32>)
// CHECK: arith.maximumf
// CHECK: %[[EXPS:.*]] = linalg.generic {indexing_maps = [#[[$ROW]], #[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[MAX]] : tensor<2x2xf32>) outs(%[[SCORES]] : tensor<2x2x?xf32>)
// CHECK-NEXT: ^bb0(%[[MV:[^:]+]]: f32, %[[SV:[^:]+]]: f32):
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[SV]], %[[MV]] : f32
// CHECK-NEXT: math.exp %[[D]] : f32
// CHECK: %[[Z0:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x2xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[$ID3]], #[[$ROW]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[EXPS]] : tensor<2x2x?xf32>) outs(%[[Z0]] : tensor<2x2xf32>)
// CHECK: arith.addf
// CHECK: %[[OE:.*]] = bufferization.alloc_tensor() : tensor<2x2x2xf32>
// CHECK: %[[O0:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[OE]] : tensor<2x2x2xf32>)
// The weighted sum loops (k, g, t, d): d innermost, along rows of V.
// CHECK: %[[WSUM:.*]] = linalg.generic {indexing_maps = [#[[$S]], #[[$K]], #[[$Q]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[EXPS]], %[[VS]] : tensor<2x2x?xf32>, tensor<?x2x2xf32>) outs(%[[O0]] : tensor<2x2x2xf32>)
// CHECK: arith.mulf {{.*}} fastmath<reassoc,contract>
// CHECK: arith.addf {{.*}} fastmath<reassoc,contract>
// CHECK: %[[OUT:.*]] = linalg.generic {indexing_maps = [#[[$ROW]], #[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[SUM]] : tensor<2x2xf32>) outs(%[[WSUM]] : tensor<2x2x2xf32>)
// CHECK-NEXT: ^bb0(%[[SUMV:[^:]+]]: f32, %[[WV:[^:]+]]: f32):
// CHECK-NEXT: arith.divf %[[WV]], %[[SUMV]] : f32
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[OUT]] {{\[}}[0, 1, 2]] : tensor<2x2x2xf32> into tensor<8xf32>
// CHECK-NOT: quill.attention
// CHECK: return %[[FLAT]]
func.func @attention(%q: tensor<8xf32>, %k: tensor<32x4xf32>, %v: tensor<32x4xf32>, %pos: index) -> tensor<8xf32> {
  %o = quill.attention %q, %k, %v at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<8xf32>
  return %o : tensor<8xf32>
}

// -----

// Tiled to kv heads [b, e): the query rows and the caches' kv-head columns
// are sliced, and the result has (e - b) * group * head_dim elements.
// CHECK-LABEL: func.func @attention_tiled
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<8xf32>, %[[KC:[^:]+]]: tensor<32x4xf32>, %[[VC:[^:]+]]: tensor<32x4xf32>, %[[POS:[^:]+]]: index, %[[B:[^:]+]]: index, %[[E:[^:]+]]: index)
// CHECK: %[[U:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK: %[[N:.*]] = arith.addi %[[POS]], %{{.*}} : index
// CHECK: %[[Q3:.*]] = tensor.expand_shape %[[Q]]
// CHECK: %[[QS:.*]] = tensor.extract_slice %[[Q3]][%[[B]], 0, 0] [%[[U]], 2, 2] [1, 1, 1] : tensor<2x2x2xf32> to tensor<?x2x2xf32>
// CHECK: %[[K3:.*]] = tensor.expand_shape %[[KC]]
// CHECK: %[[KS:.*]] = tensor.extract_slice %[[K3]][0, %[[B]], 0] [%[[N]], %[[U]], 2] [1, 1, 1] : tensor<32x2x2xf32> to tensor<?x?x2xf32>
// CHECK: %[[V3:.*]] = tensor.expand_shape %[[VC]]
// CHECK: %[[VS:.*]] = tensor.extract_slice %[[V3]][0, %[[B]], 0] [%[[N]], %[[U]], 2] [1, 1, 1] : tensor<32x2x2xf32> to tensor<?x?x2xf32>
// CHECK: %[[QSC:.*]] = linalg.generic {{.*}} ins(%[[QS]] : tensor<?x2x2xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[QSC]], %[[KS]] : tensor<?x2x2xf32>, tensor<?x?x2xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[VS]] : tensor<?x2x?xf32>, tensor<?x?x2xf32>) outs(%{{.*}} : tensor<?x2x2xf32>)
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x2x2xf32>)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[OUT]] {{\[}}[0, 1, 2]] : tensor<?x2x2xf32> into tensor<?xf32>
// CHECK: return %[[FLAT]] : tensor<?xf32>
func.func @attention_tiled(%q: tensor<8xf32>, %k: tensor<32x4xf32>, %v: tensor<32x4xf32>, %pos: index,
                           %b: index, %e: index) -> tensor<?xf32> {
  %o = quill.attention %q, %k, %v at %pos tile[%b, %e] {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<?xf32>
  return %o : tensor<?xf32>
}

// -----

// Heads of 8 elements take the vector microkernels: per kv head, key tiles of
// 8 positions x 8 elements read as one vector and transposed (each query
// head's 8 scores are 8 FMAs of broadcast query elements, written masked past
// the last position), and the weighted sum carries one vector<8> per query
// head through the loop over positions.
// CHECK-LABEL: func.func @attention_small_heads
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: vector.transfer_read %{{.*}} {in_bounds = [false, true], permutation_map = #{{.*}}} : tensor<?x2x8xf32>, vector<8x8xf32>
// CHECK: vector.transpose %{{.*}}, [1, 0] : vector<8x8xf32> to vector<8x8xf32>
// CHECK-COUNT-16: vector.fma
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%[[K]], %{{.*}}, %{{.*}}] : vector<8xf32>, tensor<2x2x?xf32>
// CHECK: math.exp
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-2: vector.fma
// CHECK-NOT: linalg.generic {{.*}}"reduction", "parallel"]
// CHECK: return
func.func @attention_small_heads(%q: tensor<32xf32>, %k: tensor<32x16xf32>, %v: tensor<32x16xf32>,
                                 %pos: index) -> tensor<32xf32> {
  %o = quill.attention %q, %k, %v at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<32xf32>, tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32xf32>
  return %o : tensor<32xf32>
}

// -----

// Heads of 32 elements over an f16 cache take the wide-head microkernels:
// tiles of 16 positions (outermost: the cache is read nearly in the order it
// lies), then each kv head; each of the tile's key rows (the last partial
// tile clamps its rows to the last position) is read as two vector<16xf16>
// widened to f32 once, and each query head's partial products are a
// multiply and an FMA per row. The 16 rows' partials are summed together by
// a transpose-add tree (pairs of shuffles taking lanes +8, +4, +2, +1, the
// halving order of a horizontal sum), one vector of 16 scores stored per
// query head. The weighted sum carries 2 vectors per query head (4 in all)
// through the loop over positions, each value row read once.
// CHECK-LABEL: func.func @attention_wide_heads
// CHECK-SAME: %[[POS:[^:]*]]: index) -> tensor<128xf32>
// CHECK: scf.for %[[TILE:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: %[[FIRST:.*]] = arith.muli %[[TILE]], %c16
// CHECK: %[[ROW0:.*]] = arith.minui %[[FIRST]], %[[POS]]
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: %[[K0:.*]] = vector.transfer_read %{{.*}}[%[[ROW0]], %[[K]], %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<?x2x32xf16>, vector<16xf16>
// CHECK-NEXT: arith.extf %[[K0]] : vector<16xf16> to vector<16xf32>
// CHECK-NOT: vector.reduction
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]
// CHECK-NEXT: vector.shuffle %{{.*}}, %{{.*}} [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31]
// CHECK-NEXT: arith.addf
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
// CHECK-NEXT: vector.shuffle %{{.*}}, %{{.*}} [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31]
// CHECK-NEXT: %[[SUMS:.*]] = arith.addf
// CHECK-NEXT: vector.transfer_write %[[SUMS]], %{{.*}}[%[[K]], %c0, %[[FIRST]]] : vector<16xf32>, tensor<2x2x?xf32>
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%[[K]], %c1, %[[FIRST]]] : vector<16xf32>, tensor<2x2x?xf32>
// CHECK: math.exp
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-2: arith.extf %{{.*}} : vector<16xf16> to vector<16xf32>
// CHECK-COUNT-4: vector.fma
// CHECK-NOT: linalg.generic {{.*}}"reduction", "parallel"]
// CHECK: return
func.func @attention_wide_heads(%q: tensor<128xf32>, %k: tensor<32x64xf16>, %v: tensor<32x64xf16>,
                                %pos: index) -> tensor<128xf32> {
  %o = quill.attention %q, %k, %v at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<128xf32>, tensor<32x64xf16>, tensor<32x64xf16> -> tensor<128xf32>
  return %o : tensor<128xf32>
}

// -----

// 16 kv heads of 32 elements: the weighted sum takes a span of 12 kv heads
// at once (24 accumulators), reading 12 heads' value rows side by side per
// position, then the 4 left one at a time.
// CHECK-LABEL: func.func @attention_wide_head_spans
// CHECK: scf.for %[[TILE:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: %[[FIRST:.*]] = arith.muli %[[TILE]], %c16
// CHECK: %[[ROW0:.*]] = arith.minui %[[FIRST]]
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c16 step %{{.*}} iter_args
// CHECK: vector.transfer_read %{{.*}}{{\[}}%[[ROW0]], %[[K]], %c0]
// CHECK: math.exp
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-24: vector.fma
// CHECK: scf.for %[[REST:.*]] = %c12 to %c16 step %c1
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>)
// CHECK: return
func.func @attention_wide_head_spans(%q: tensor<512xf32>, %k: tensor<32x512xf16>, %v: tensor<32x512xf16>,
                                     %pos: index) -> tensor<512xf32> {
  %o = quill.attention %q, %k, %v at %pos {num_heads = 16 : i64, num_kv_heads = 16 : i64}
      : tensor<512xf32>, tensor<32x512xf16>, tensor<32x512xf16> -> tensor<512xf32>
  return %o : tensor<512xf32>
}
