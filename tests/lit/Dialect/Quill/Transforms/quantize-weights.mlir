// RUN: quill-opt %s -split-input-file --quill-quantize-weights=scheme=q8_0 | FileCheck %s --check-prefix=Q8
// RUN: quill-opt %s -split-input-file --quill-quantize-weights=scheme=q4_k_m | FileCheck %s --check-prefix=Q4KM
// RUN: quill-opt %s -split-input-file --quill-quantize-weights=scheme=q4_0 | FileCheck %s --check-prefix=Q40
// RUN: not quill-opt %s -split-input-file --quill-quantize-weights=scheme=q5_k 2>&1 | FileCheck %s --check-prefix=BAD

// Eight layers: llama.cpp's use_more_bits(i, 8) picks layers 0, 3, 6 and 7
// (the first and last eighth, and (i - 1) % 3 == 2 between), whose wv and w2
// get Q6_K under q4_k_m; the classifier gets Q6_K; norms stay f32.
// Q8-LABEL: func.func @layers
// Q8-COUNT-18: x!quill.q8_0>
// Q8: quill.weight "norm" : tensor<256xf32>
// Q4KM-LABEL: func.func @layers
// Q4KM: "tok_embeddings" : tensor<64x256x!quill.q4_k>
// Q4KM: "output" : tensor<64x256x!quill.q6_k>
// Q4KM: "layers.0.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.0.w2" : tensor<256x256x!quill.q6_k>
// Q4KM: "layers.0.wq" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.1.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.1.w2" : tensor<256x256x!quill.q4_k>
// Q4KM: "layers.2.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.3.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.3.w2" : tensor<256x256x!quill.q6_k>
// Q4KM: "layers.4.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.5.w2" : tensor<256x256x!quill.q4_k>
// Q4KM: "layers.6.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.7.w2" : tensor<256x256x!quill.q6_k>
// Q4KM: "norm" : tensor<256xf32>
// Q40-LABEL: func.func @layers
// Q40: "tok_embeddings" : tensor<64x256x!quill.q4_0>
// Q40: "output" : tensor<64x256x!quill.q6_k>
// Q40: "layers.0.wv" : tensor<8x256x!quill.q4_0>
func.func @layers() {
  %e = quill.weight "tok_embeddings" : tensor<64x256xf32>
  %o = quill.weight "output" : tensor<64x256xf32>
  %v0 = quill.weight "layers.0.wv" : tensor<8x256xf32>
  %d0 = quill.weight "layers.0.w2" : tensor<256x256xf32>
  %q0 = quill.weight "layers.0.wq" : tensor<8x256xf32>
  %v1 = quill.weight "layers.1.wv" : tensor<8x256xf32>
  %d1 = quill.weight "layers.1.w2" : tensor<256x256xf32>
  %v2 = quill.weight "layers.2.wv" : tensor<8x256xf32>
  %v3 = quill.weight "layers.3.wv" : tensor<8x256xf32>
  %d3 = quill.weight "layers.3.w2" : tensor<256x256xf32>
  %v4 = quill.weight "layers.4.wv" : tensor<8x256xf32>
  %d5 = quill.weight "layers.5.w2" : tensor<256x256xf32>
  %v6 = quill.weight "layers.6.wv" : tensor<8x256xf32>
  %d7 = quill.weight "layers.7.w2" : tensor<256x256xf32>
  %v7 = quill.weight "layers.7.wv" : tensor<8x256xf32>
  %d2 = quill.weight "layers.2.w2" : tensor<256x256xf32>
  %d4 = quill.weight "layers.4.w2" : tensor<256x256xf32>
  %d6 = quill.weight "layers.6.w2" : tensor<256x256xf32>
  %n = quill.weight "norm" : tensor<256xf32>
  return
}

// -----

// Rows that are not whole super-blocks fall back as llama.cpp's do: Q6_K to
// Q8_0, Q4_K to Q4_0 (llama.cpp's Q5_0, which Quill lacks); rows that are
// not whole 32-blocks to f16. A shared embedding is the classifier.
// Q4KM-LABEL: func.func @fallbacks
// Q4KM: "tok_embeddings" : tensor<64x96x!quill.q8_0>
// Q4KM: "layers.0.wq" : tensor<96x96x!quill.q4_0>
// Q4KM: "layers.0.wk" : tensor<8x40xf16>
// Q8-LABEL: func.func @fallbacks
// Q8: "layers.0.wk" : tensor<8x40xf16>
func.func @fallbacks() {
  %e = quill.weight "tok_embeddings" : tensor<64x96xf32>
  %q = quill.weight "layers.0.wq" : tensor<96x96xf32>
  %k = quill.weight "layers.0.wk" : tensor<8x40xf32>
  return
}

// -----

// 32 layers (a 7B's depth): wv is Q6_K in layers 0-3, 6, 9, ..., 27 and
// 28-31, as llama.cpp's Q4_K_M files have it.
// Q4KM-LABEL: func.func @depth32
// Q4KM: "layers.0.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.1.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.2.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.3.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.4.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.5.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.6.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.7.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.8.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.9.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.10.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.11.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.12.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.13.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.14.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.15.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.16.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.17.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.18.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.19.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.20.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.21.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.22.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.23.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.24.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.25.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.26.wv" : tensor<8x256x!quill.q4_k>
// Q4KM: "layers.27.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.28.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.29.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.30.wv" : tensor<8x256x!quill.q6_k>
// Q4KM: "layers.31.wv" : tensor<8x256x!quill.q6_k>
func.func @depth32() {
  %v0 = quill.weight "layers.0.wv" : tensor<8x256xf32>
  %v1 = quill.weight "layers.1.wv" : tensor<8x256xf32>
  %v2 = quill.weight "layers.2.wv" : tensor<8x256xf32>
  %v3 = quill.weight "layers.3.wv" : tensor<8x256xf32>
  %v4 = quill.weight "layers.4.wv" : tensor<8x256xf32>
  %v5 = quill.weight "layers.5.wv" : tensor<8x256xf32>
  %v6 = quill.weight "layers.6.wv" : tensor<8x256xf32>
  %v7 = quill.weight "layers.7.wv" : tensor<8x256xf32>
  %v8 = quill.weight "layers.8.wv" : tensor<8x256xf32>
  %v9 = quill.weight "layers.9.wv" : tensor<8x256xf32>
  %v10 = quill.weight "layers.10.wv" : tensor<8x256xf32>
  %v11 = quill.weight "layers.11.wv" : tensor<8x256xf32>
  %v12 = quill.weight "layers.12.wv" : tensor<8x256xf32>
  %v13 = quill.weight "layers.13.wv" : tensor<8x256xf32>
  %v14 = quill.weight "layers.14.wv" : tensor<8x256xf32>
  %v15 = quill.weight "layers.15.wv" : tensor<8x256xf32>
  %v16 = quill.weight "layers.16.wv" : tensor<8x256xf32>
  %v17 = quill.weight "layers.17.wv" : tensor<8x256xf32>
  %v18 = quill.weight "layers.18.wv" : tensor<8x256xf32>
  %v19 = quill.weight "layers.19.wv" : tensor<8x256xf32>
  %v20 = quill.weight "layers.20.wv" : tensor<8x256xf32>
  %v21 = quill.weight "layers.21.wv" : tensor<8x256xf32>
  %v22 = quill.weight "layers.22.wv" : tensor<8x256xf32>
  %v23 = quill.weight "layers.23.wv" : tensor<8x256xf32>
  %v24 = quill.weight "layers.24.wv" : tensor<8x256xf32>
  %v25 = quill.weight "layers.25.wv" : tensor<8x256xf32>
  %v26 = quill.weight "layers.26.wv" : tensor<8x256xf32>
  %v27 = quill.weight "layers.27.wv" : tensor<8x256xf32>
  %v28 = quill.weight "layers.28.wv" : tensor<8x256xf32>
  %v29 = quill.weight "layers.29.wv" : tensor<8x256xf32>
  %v30 = quill.weight "layers.30.wv" : tensor<8x256xf32>
  %v31 = quill.weight "layers.31.wv" : tensor<8x256xf32>
  return
}

// BAD: quill-quantize-weights: unknown scheme 'q5_k' (expected f16, bf16, q8_0, q4_0 or q4_k_m)
