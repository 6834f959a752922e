// Every option of Quill's lowering pipeline, shared by quill-compile (its
// flags) and quill-opt (--quill-pipeline-to-STAGE='target=cuda ...').
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace quill {

struct PipelineOptions {
  std::string target = "cpu";            ///< A name in the target registry.
  std::string cpu;                       ///< CPU target: the CPU to compile for; empty: the host.
  std::string gpuArch = "sm_90";         ///< CUDA: the SM version the PTX is for.
  int64_t matvecGrain = 16;              ///< Output rows per parallel chunk of a matvec.
  std::set<std::string> disabledFusions; ///< Short names, see fusionNames().
  /// The quantization scheme of the weight matrices (quill-quantize-weights:
  /// f16, bf16, q8_0, q4_0, q4_k_m); empty: each keeps its file's encoding.
  std::string quantize;
  /// Products over Q8_0 and Q4_0 weights round their input to Q8_0 blocks
  /// (quill-quantize-activations), as llama.cpp does: int8 dot products.
  bool quantizeActivations = true;
  /// Flash-decoding chunk of cached positions; 0: off; unset: the target's
  /// default.
  std::optional<int64_t> attentionChunk;
  /// CPU only: compile the CUDA target's kernel transformations for the CPU
  /// (one unit of work per kernel call, math approximated as on the GPU),
  /// to test them where there is no GPU.
  bool emulateCudaKernels = false;
  /// Every step reads the one packed copy of a weight
  /// (quill-share-weight-packs; off for A/B: the artifact keeps copies).
  bool shareWeights = true;
  /// CPU: matmuls prefetch the next block of weight rows (off for A/B).
  bool prefetchWeights = true;
  /// CPU: how many bytes ahead decode's products over row groups prefetch
  /// their weights, for every type (0: none); unset: the target's choice
  /// per type.
  std::optional<int64_t> rowGroupPrefetchBytes;
  /// CPU: products over Q8_0 activations as int8 dot products, vpdpbusd or
  /// AVX2's (off for A/B: every product decodes the weights to f32).
  bool int8Dot = true;
  /// CPU with int8 dot products: prefill's and the batch step's products
  /// over Q8_0 and Q4_0 weights as int8 tiles (off for A/B: f32 tiles).
  bool int8MatMul = true;
  /// CPU with int8 dot products: the Q8_0 and Q4_0 weights the int8
  /// products read are stored in row groups (off for A/B: the file's rows).
  bool rowGroups = true;
  /// CPU: a prefill's attention takes blocks of query rows together at
  /// each kv head, every key and value row read once for the block (off
  /// for A/B: one row at a time).
  bool attentionRowBlocks = true;
  /// CUDA (and its emulation): a warp per output element of matrix-vector
  /// kernels, its lanes sharing the reduction (off: a thread per row).
  bool warpReductions = true;
};

/// The fusion passes of the quill stage, by short name, in pipeline order:
/// "gate-up", "qkv", "residual", "rmsnorm", "rope-kv".
const std::vector<std::string> &fusionNames();

/// The schemes `quantize` takes: "f16", "bf16", "q8_0", "q4_0", "q4_k_m".
const std::vector<std::string> &quantizationSchemes();

} // namespace quill
