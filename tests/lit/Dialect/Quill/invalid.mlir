// Every verifier message of the quill ops, and forms that must not be rejected.
// RUN: quill-opt %s -split-input-file -verify-diagnostics

// A weight needs a name.
func.func @weight_empty_name() {
  // expected-error @+1 {{'quill.weight' op needs a non-empty weight name}}
  %w = quill.weight "" : tensor<4xf32>
  return
}

// -----

// A weight has a static shape, and the message names it.
func.func @weight_dynamic() {
  // expected-error @+1 {{'quill.weight' op weight 'layers.0.wq' must have a static shape}}
  %w = quill.weight "layers.0.wq" : tensor<?x8xf32>
  return
}

// -----

// Weights are f32 tensors, or matrices in a weight encoding.
func.func @weight_not_f32() {
  // expected-error @+1 {{'quill.weight' op result #0 must be f32 tensor or weight matrix, but got 'tensor<4xi32>'}}
  %w = quill.weight "w" : tensor<4xi32>
  return
}

// -----

// A cache is the "key" or the "value" cache.
func.func @kv_cache_bad_kind() {
  // expected-error @+1 {{'quill.kv_cache' op kind must be "key" or "value", got "query"}}
  %k = quill.kv_cache "query" layer 0 : tensor<32x4xf32>
  return
}

// -----

// A cache has a static shape.
func.func @kv_cache_dynamic() {
  // expected-error @+1 {{'quill.kv_cache' op cache must have a static shape}}
  %k = quill.kv_cache "value" layer 0 : tensor<?x4xf32>
  return
}

// -----

// A cache is a matrix.
func.func @kv_cache_not_matrix() {
  // expected-error @+1 {{'quill.kv_cache' op result #0 must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type or GGUF Q8_0 blocks: 32 weights in 34 bytes values}}
  %k = quill.kv_cache "key" layer 0 : tensor<128xf32>
  return
}

// -----

// A cache holds f32, f16 or bf16 (the --kv-type choices), nothing else.
func.func @kv_cache_f64() {
  // expected-error @+1 {{'quill.kv_cache' op result #0 must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type or GGUF Q8_0 blocks: 32 weights in 34 bytes values}}
  %k = quill.kv_cache "key" layer 0 : tensor<32x4xf64>
  return
}

// -----

// The written row must be as wide as a cache row.
func.func @kv_write_width(%row: tensor<8xf32>, %pos: index) {
  %k = quill.kv_cache "key" layer 0 : tensor<32x4xf32>
  // expected-error @+1 {{'quill.kv_write' op row has 8 elements but the cache rows have 4}}
  %k1 = quill.kv_write %row into %k at %pos : tensor<8xf32> into tensor<32x4xf32>
  return
}

// -----

// The embedding row width is the result width; the table is named.
func.func @embedding_width(%tok: index) {
  %t = quill.weight "tok_embeddings" : tensor<16x8xf32>
  // expected-error @+1 {{'quill.embedding' op table 'tok_embeddings' rows have 8 elements but the result has 4}}
  %x = quill.embedding %t[%tok] : tensor<16x8xf32> -> tensor<4xf32>
  return
}

// -----

// The norm weight has the input's width; the weight is named.
func.func @rmsnorm_width(%x: tensor<8xf32>) {
  %w = quill.weight "norm" : tensor<4xf32>
  // expected-error @+1 {{'quill.rmsnorm' op weight 'norm' has 4 elements but the input has 8}}
  %h = quill.rmsnorm %x, %w {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<4xf32>
  return
}

// -----

// eps must be positive.
func.func @rmsnorm_eps(%x: tensor<8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'quill.rmsnorm' op eps must be positive}}
  %h = quill.rmsnorm %x, %w {eps = 0.0 : f32} : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

// The weight's columns must match the input; the message names the weight.
func.func @linear_columns(%x: tensor<4xf32>) {
  %w = quill.weight "layers.0.wq" : tensor<8x8xf32>
  // expected-error @+1 {{'quill.linear' op weight 'layers.0.wq' has 8 columns but the input has 4 elements}}
  %y = quill.linear %x, %w : tensor<4xf32>, tensor<8x8xf32> -> tensor<8xf32>
  return
}

// -----

// A weight that is not a quill.weight has no name to give.
func.func @linear_columns_unnamed(%x: tensor<4xf32>, %w: tensor<8x8xf32>) {
  // expected-error @+1 {{'quill.linear' op weight has 8 columns but the input has 4 elements}}
  %y = quill.linear %x, %w : tensor<4xf32>, tensor<8x8xf32> -> tensor<8xf32>
  return
}

// -----

// The weight's rows must match the result.
func.func @linear_rows(%x: tensor<8xf32>) {
  %w = quill.weight "layers.0.wk" : tensor<4x8xf32>
  // expected-error @+1 {{'quill.linear' op weight 'layers.0.wk' has 4 rows but the result has 8 elements}}
  %y = quill.linear %x, %w : tensor<8xf32>, tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

// Logits share the matvec verifier.
func.func @logits_rows(%x: tensor<8xf32>) {
  %w = quill.weight "output" : tensor<16x8xf32>
  // expected-error @+1 {{'quill.logits' op weight 'output' has 16 rows but the result has 15 elements}}
  %l = quill.logits %x, %w : tensor<8xf32>, tensor<16x8xf32> -> tensor<15xf32>
  return
}

// -----

// A tile is a begin and an end.
func.func @linear_tile_one_value(%x: tensor<8xf32>, %w: tensor<4x8xf32>, %b: index) {
  // expected-error @+1 {{'quill.linear' op tile takes a begin and an end, got 1 values}}
  %y = quill.linear %x, %w tile[%b] : tensor<8xf32>, tensor<4x8xf32> -> tensor<?xf32>
  return
}

// -----

// Must not fire: a tiled matvec computes a row range, so its result need not
// have the weight's rows and may be dynamic.
func.func @matvec_tiled_ok(%x: tensor<8xf32>, %w: tensor<64x8xf32>, %b: index, %e: index) {
  %y = quill.linear %x, %w tile[%b, %e] : tensor<8xf32>, tensor<64x8xf32> -> tensor<16xf32>
  %l = quill.logits %x, %w tile[%b, %e] : tensor<8xf32>, tensor<64x8xf32> -> tensor<?xf32>
  return
}

// -----

// Step ops take statically shaped tensors: the memory plan needs sizes.
func.func @matvec_dynamic_input(%xd: tensor<?xf32>, %w: tensor<64x8xf32>) {
  // expected-error @+1 {{'quill.linear' op operands must have static shapes, got 'tensor<?xf32>'}}
  %d = quill.linear %xd, %w : tensor<?xf32>, tensor<64x8xf32> -> tensor<64xf32>
  return
}

// -----

func.func @add_dynamic(%a: tensor<?xf32>) {
  // expected-error @+1 {{'quill.add' op operands must have static shapes}}
  %d = quill.add %a, %a : tensor<?xf32>
  return
}

// -----

// RoPE rotates pairs: head_dim must be even.
func.func @rope_odd_head_dim(%q: tensor<9xf32>, %pos: index) {
  // expected-error @+1 {{'quill.rope' op head_dim must be positive and even, got 3}}
  %r = quill.rope %q at %pos {head_dim = 3 : i64, theta = 1.0e+04 : f32} : tensor<9xf32>
  return
}

// -----

// head_dim must be positive.
func.func @rope_zero_head_dim(%q: tensor<8xf32>, %pos: index) {
  // expected-error @+1 {{'quill.rope' op head_dim must be positive and even, got 0}}
  %r = quill.rope %q at %pos {head_dim = 0 : i64, theta = 1.0e+04 : f32} : tensor<8xf32>
  return
}

// -----

// The input is a whole number of heads.
func.func @rope_partial_head(%q: tensor<6xf32>, %pos: index) {
  // expected-error @+1 {{'quill.rope' op input of 6 elements is not a whole number of 4-wide heads}}
  %r = quill.rope %q at %pos {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<6xf32>
  return
}

// -----

// theta must be positive.
func.func @rope_theta(%q: tensor<8xf32>, %pos: index) {
  // expected-error @+1 {{'quill.rope' op theta must be positive}}
  %r = quill.rope %q at %pos {head_dim = 4 : i64, theta = -1.0 : f32} : tensor<8xf32>
  return
}

// -----

// Query heads come in whole groups per kv head.
func.func @attention_heads_not_multiple(%q: tensor<12xf32>, %k: tensor<32x8xf32>, %pos: index) {
  // expected-error @+1 {{'quill.attention' op num_heads (6) must be a positive multiple of num_kv_heads (4)}}
  %o = quill.attention %q, %k, %k at %pos {num_heads = 6 : i64, num_kv_heads = 4 : i64}
      : tensor<12xf32>, tensor<32x8xf32>, tensor<32x8xf32> -> tensor<12xf32>
  return
}

// -----

// Zero kv heads is not a multiple of anything.
func.func @attention_zero_kv_heads(%q: tensor<8xf32>, %k: tensor<32x4xf32>, %pos: index) {
  // expected-error @+1 {{'quill.attention' op num_heads (4) must be a positive multiple of num_kv_heads (0)}}
  %o = quill.attention %q, %k, %k at %pos {num_heads = 4 : i64, num_kv_heads = 0 : i64}
      : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<8xf32>
  return
}

// -----

// The query splits evenly into heads.
func.func @attention_query_split(%q: tensor<10xf32>, %k: tensor<32x4xf32>, %pos: index) {
  // expected-error @+1 {{'quill.attention' op query of 10 elements does not split into 4 heads}}
  %o = quill.attention %q, %k, %k at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<10xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<10xf32>
  return
}

// -----

// Keys and values have one shape.
func.func @attention_caches_differ(%q: tensor<8xf32>, %k: tensor<32x4xf32>, %v: tensor<16x4xf32>, %pos: index) {
  // expected-error @+1 {{'quill.attention' op keys and values caches differ in shape}}
  %o = quill.attention %q, %k, %v at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<8xf32>, tensor<32x4xf32>, tensor<16x4xf32> -> tensor<8xf32>
  return
}

// -----

// A cache row holds every kv head: 2 heads of 2 need 4, not 8.
func.func @attention_cache_width(%q: tensor<8xf32>, %k: tensor<32x8xf32>, %pos: index) {
  // expected-error @+1 {{'quill.attention' op cache rows have 8 elements but 2 kv heads of 2 need 4}}
  %o = quill.attention %q, %k, %k at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<8xf32>, tensor<32x8xf32>, tensor<32x8xf32> -> tensor<8xf32>
  return
}

// -----

// An untiled attention returns the query's width.
func.func @attention_result(%q: tensor<8xf32>, %k: tensor<32x4xf32>, %pos: index) {
  // expected-error @+1 {{'quill.attention' op result has 4 elements but the query has 8}}
  %o = quill.attention %q, %k, %k at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<4xf32>
  return
}

// -----

// An attention tile is a begin and an end too.
func.func @attention_tile_three(%q: tensor<8xf32>, %k: tensor<32x4xf32>, %pos: index, %b: index) {
  // expected-error @+1 {{'quill.attention' op tile takes a begin and an end, got 3 values}}
  %o = quill.attention %q, %k, %k at %pos tile[%b, %b, %b] {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<?xf32>
  return
}

// -----

// Must not fire: a tiled attention returns only its heads' rows.
func.func @attention_tiled_ok(%q: tensor<8xf32>, %k: tensor<32x4xf32>, %pos: index, %b: index, %e: index) {
  %o = quill.attention %q, %k, %k at %pos tile[%b, %e] {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<8xf32>, tensor<32x4xf32>, tensor<32x4xf32> -> tensor<4xf32>
  return
}

// -----

// The residual add takes two operands of the result's type.
func.func @add_types(%a: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'quill.add' op failed to verify that all of {lhs, rhs, result} have same type}}
  %s = "quill.add"(%a, %b) : (tensor<8xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

// swiglu's gate and up have one type.
func.func @swiglu_types(%g: tensor<8xf32>, %u: tensor<4xf32>) {
  // expected-error @+1 {{'quill.swiglu' op failed to verify that all of {gate, up, result} have same type}}
  %s = "quill.swiglu"(%g, %u) : (tensor<8xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

// A binding names one of the three runtime memory spaces.
quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 64>,
    scratch_bytes = 64 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
  // expected-error @+1 {{'quill.dispatch' op unknown memory space "heap"}}
  quill.dispatch @k([#quill.binding<"heap", 0, 64>]) work(1, 1)
}

// -----

// Work and grain are positive.
quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 64>,
    scratch_bytes = 64 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
  // expected-error @+1 {{'quill.dispatch' op work and grain must be positive}}
  quill.dispatch @k([#quill.binding<"scratch", 0, 64>]) work(8, 0)
}

// -----

// live_rows counts the units of one live row: it divides the work (8 units
// are not whole rows of 3).
quill.schedule "batch" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 64>,
    scratch_bytes = 64 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
  // expected-error @+1 {{'quill.dispatch' op live_rows must be a positive divisor of the work: 3 units per row of 8}}
  quill.dispatch @k([#quill.binding<"scratch", 0, 64>]) work(8, 1) {live_rows = 3 : i64}
}

// -----

// ... and is positive.
quill.schedule "batch" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 64>,
    scratch_bytes = 64 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
  // expected-error @+1 {{'quill.dispatch' op live_rows must be a positive divisor of the work: 0 units per row of 8}}
  quill.dispatch @k([#quill.binding<"scratch", 0, 64>]) work(8, 1) {live_rows = 0 : i64}
}

// -----

// A binding covers a non-empty range at a non-negative offset.
quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 64>,
    scratch_bytes = 64 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
  // expected-error @+1 {{'quill.dispatch' op binding range must be non-negative and non-empty}}
  quill.dispatch @k([#quill.binding<"scratch", -64, 64>]) work(1, 1)
}

// -----

// An empty binding is rejected too.
quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 64>,
    scratch_bytes = 64 : i64, weight_bytes = 0 : i64, weight_offsets = {}} {
  // expected-error @+1 {{'quill.dispatch' op binding range must be non-negative and non-empty}}
  quill.dispatch @k([#quill.binding<"weights", 0, 0>]) work(1, 1)
}

// -----

// A dispatch lives in a schedule.
func.func @dispatch_outside_schedule() {
  // expected-error @+1 {{'quill.dispatch' op expects parent op 'quill.schedule'}}
  quill.dispatch @k([#quill.binding<"scratch", 0, 64>]) work(1, 1)
  return
}

// -----

// A schedule carries its whole memory plan.
// expected-error @+1 {{'quill.schedule' op requires attribute 'weight_offsets'}}
quill.schedule "step" attributes {kv_bytes = 0 : i64, logits = #quill.binding<"scratch", 0, 64>,
    scratch_bytes = 64 : i64, weight_bytes = 0 : i64} {
}

// -----

// Packing happens at compile time: only named weights can be packed.
func.func @concat_of_activation(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'quill.concat' op parts must be quill.weight ops: packing happens at compile time}}
  %c = quill.concat %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_rows() {
  %a = quill.weight "a" : tensor<4x8xf32>
  %b = quill.weight "b" : tensor<2x8xf32>
  // expected-error @+1 {{'quill.concat' op interleaved parts must have the same number of rows}}
  %c = quill.concat %a, %b {interleave} : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @slice_rows_of_weight() {
  %w = quill.weight "w" : tensor<8x8xf32>
  // expected-error @+1 {{'quill.slice' op rows are sliced from a quill.concat: packing happens at compile time}}
  %s = quill.slice %w[4] : tensor<8x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_rows_columns() {
  %a = quill.weight "a" : tensor<4x8xf32>
  %b = quill.weight "b" : tensor<4x8xf32>
  %c = quill.concat %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  // expected-error @+1 {{'quill.slice' op rows keep the pack's columns and encoding: 'tensor<8x8xf32>' -> 'tensor<4x4xf32>'}}
  %s = quill.slice %c[4] : tensor<8x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @slice_rows_outside() {
  %a = quill.weight "a" : tensor<4x8xf32>
  %b = quill.weight "b" : tensor<4x8xf32>
  %c = quill.concat %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  // expected-error @+1 {{'quill.slice' op rows [6, 10) lie outside the input of 8}}
  %s = quill.slice %c[6] : tensor<8x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_outside(%x: tensor<8xf32>) {
  // expected-error @+1 {{'quill.slice' op elements [6, 10) lie outside the input of 8}}
  %s = quill.slice %x[6] : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @swiglu_rows(%x: tensor<8xf32>) {
  %w = quill.weight "w13" : tensor<12x8xf32>
  // expected-error @+1 {{'quill.linear' op weight 'w13' has 12 rows but the result has 12 elements (swiglu: need twice as many rows)}}
  %y = quill.linear %x, %w {swiglu} : tensor<8xf32>, tensor<12x8xf32> -> tensor<12xf32>
  return
}

// -----

func.func @residual_type(%x: tensor<8xf32>, %r: tensor<4xf32>) {
  %w = quill.weight "wo" : tensor<8x8xf32>
  // expected-error @+1 {{'quill.linear' op residual of type 'tensor<4xf32>' does not match the result 'tensor<8xf32>'}}
  %y = quill.linear %x, %w residual %r : tensor<4xf32> : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  return
}

// -----

// A linear layer keeps the input's token rows.
func.func @rows_mismatch(%x: tensor<4x8xf32>) {
  %w = quill.weight "w" : tensor<6x8xf32>
  // expected-error @+1 {{'quill.linear' op result 'tensor<3x6xf32>' must have the input's rows 'tensor<4x8xf32>'}}
  %y = quill.linear %x, %w : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<3x6xf32>
  return
}

// -----

func.func @row_outside(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'quill.row' op row 4 is outside the 4 rows}}
  %r = quill.row %x[4] : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @embeddings_shape(%t: tensor<16x8xf32>, %ids: tensor<4xi32>) {
  // expected-error @+1 {{'quill.embeddings' op result must be [tokens, table width] = [4, 8], got 'tensor<3x8xf32>'}}
  %e = quill.embeddings %t[%ids] : tensor<16x8xf32>, tensor<4xi32> -> tensor<3x8xf32>
  return
}

// -----

// A paged write needs one table row and one position per token row.
func.func @paged_kv_write_rows(%r: tensor<4x8xf32>, %c: tensor<64x16x8xf32>, %t: tensor<3x2xi32>,
                               %p: tensor<4xi32>) {
  // expected-error @+1 {{'quill.paged_kv_write' op tables and positions need one row per token row (4), got 3 and 4}}
  %c1 = quill.paged_kv_write %r into %c through %t at %p
      : tensor<4x8xf32> into tensor<64x16x8xf32>, tensor<3x2xi32>, tensor<4xi32>
  return
}

// -----

// A paged write's rows are as wide as the pool's rows.
func.func @paged_kv_write_width(%r: tensor<4x6xf32>, %c: tensor<64x16x8xf32>, %t: tensor<4x2xi32>,
                                %p: tensor<4xi32>) {
  // expected-error @+1 {{'quill.paged_kv_write' op rows have 6 elements but the cache rows have 8}}
  %c1 = quill.paged_kv_write %r into %c through %t at %p
      : tensor<4x6xf32> into tensor<64x16x8xf32>, tensor<4x2xi32>, tensor<4xi32>
  return
}

// -----

// Paged attention: the pool rows hold the kv heads of the query's head size.
func.func @paged_attention_width(%q: tensor<4x16xf32>, %k: tensor<64x16x6xf32>,
                                 %t: tensor<4x2xi32>, %p: tensor<4xi32>) {
  // expected-error @+1 {{'quill.paged_attention' op cache rows have 6 elements but 2 kv heads of 4 need 8}}
  %o = quill.paged_attention %q, %k, %k through %t at %p {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<4x16xf32>, tensor<64x16x6xf32>, tensor<4x2xi32>, tensor<4xi32> -> tensor<4x16xf32>
  return
}

// -----

// Paged attention tiled: a unit's result row is an equal slice of the kv
// heads (here 3 kv heads of 8 elements: rows of 16 take two of them).
func.func @paged_attention_slice(%q: tensor<4x24xf32>, %k: tensor<64x16x12xf32>,
                                 %t: tensor<4x2xi32>, %p: tensor<4xi32>, %b: index, %e: index) {
  // expected-error @+1 {{'quill.paged_attention' op a tile's result rows of 16 elements are no equal slice of 3 kv heads of 8}}
  %o = quill.paged_attention %q, %k, %k through %t at %p tile [%b, %e] {num_heads = 6 : i64, num_kv_heads = 3 : i64}
      : tensor<4x24xf32>, tensor<64x16x12xf32>, tensor<4x2xi32>, tensor<4xi32> -> tensor<?x16xf32>
  return
}

// -----

// Per-row rotary positions need as many rows as the input.
func.func @rope_positions_rows(%x: tensor<4x8xf32>, %p: tensor<3xi32>) {
  // expected-error @+1 {{'quill.rope' op per-row positions need [T, width] input of as many rows, got 'tensor<4x8xf32>' and 'tensor<3xi32>'}}
  %r = quill.rope %x at %p {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<4x8xf32>, tensor<3xi32>
  return
}

// -----

// Only T rows of a cache write are tiled.
func.func @kv_write_tile_one_row(%r: tensor<8xf32>, %c: tensor<32x8xf32>, %pos: index, %b: index, %e: index) {
  // expected-error @+1 {{'quill.kv_write' op only T rows are tiled}}
  %k = quill.kv_write %r into %c at %pos tile[%b, %e] : tensor<8xf32> into tensor<32x8xf32>
  return
}

// -----

// A tile is a begin and an end.
func.func @merge_tile_three(%p: tensor<8x6xf32>, %b: index) {
  // expected-error @+1 {{'quill.attention_merge' op tile takes a begin and an end, got 3 values}}
  %m = quill.attention_merge %p tile[%b, %b, %b] {num_heads = 2 : i64, num_kv_heads = 2 : i64} : tensor<8x6xf32> -> tensor<?xf32>
  return
}

// -----

// Only a [T, width] input's rows are tiled.
func.func @rope_tile_vector(%x: tensor<8xf32>, %pos: index, %b: index, %e: index) {
  // expected-error @+1 {{'quill.rope' op only the rows of a [T, width] input are tiled}}
  %r = quill.rope %x at %pos tile[%b, %e] {head_dim = 4 : i64, theta = 1.0e+04 : f32} : tensor<8xf32> -> tensor<?xf32>
  return
}

// -----

// Untiled, the result is the input's type.
func.func @rmsnorm_result_type(%x: tensor<8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'quill.rmsnorm' op result must have the input's type 'tensor<8xf32>'}}
  %y = quill.rmsnorm %x, %w {eps = 1.0e-05 : f32} : tensor<8xf32>, tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

// A tile of rows keeps the rows whole.
func.func @rmsnorm_tile_partial_rows(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: index, %e: index) {
  // expected-error @+1 {{'quill.rmsnorm' op a tile's result must be elements of the vector or whole rows, got 'tensor<?x4xf32>'}}
  %y = quill.rmsnorm %x, %w tile[%b, %e] {eps = 1.0e-05 : f32} : tensor<4x8xf32>, tensor<8xf32> -> tensor<?x4xf32>
  return
}

// -----

// A Q8_0 cache's rows are whole blocks of 32.
func.func @kv_cache_q8_0_partial_block() {
  // expected-error @+1 {{'quill.kv_cache' op cache rows of 40 are not whole q8_0 blocks of 32}}
  %k = quill.kv_cache "key" layer 0 : tensor<16x40x!quill.q8_0>
  return
}

// -----

// Attention reads a Q8_0 cache a head at a time, so no block may straddle
// two heads: heads of 16 cannot.
func.func @attention_q8_0_narrow_heads(%q: tensor<64xf32>, %pos: index) {
  %k = quill.kv_cache "key" layer 0 : tensor<16x32x!quill.q8_0>
  // expected-error @+1 {{'quill.attention' op a q8_0 cache needs heads of a multiple of 32 elements, got head_dim 16}}
  %o = quill.attention %q, %k, %k at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      : tensor<64xf32>, tensor<16x32x!quill.q8_0>, tensor<16x32x!quill.q8_0> -> tensor<64xf32>
  return
}

// -----

// storage_bytes names the bytes of exactly the typed tensor.
func.func @storage_bytes_wrong_width(%c: tensor<16x32x!quill.q8_0>) {
  // expected-error @+1 {{'quill.storage_bytes' op bytes 'tensor<16x32xi8>' do not hold 'tensor<16x32x!quill.q8_0>' (need 'tensor<16x34xi8>')}}
  %b = quill.storage_bytes %c : tensor<16x32x!quill.q8_0> -> tensor<16x32xi8>
  return
}
