// Deterministic random-weight llama2.c checkpoints of any shape, streamed to
// disk, so tests and benchmarks can use model sizes no one has to download.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace quill {

/// The shapes quill-synth knows by name: "15m", "110m", "1b" (GQA, 32 heads
/// over 4 kv heads) and "tiny" (the stories260K shape with 2 layers).
ErrorOr<ModelConfig> syntheticShape(const std::string &name);

/// The names syntheticShape accepts, for usage messages.
std::vector<std::string> syntheticShapeNames();

/// Fills `out` (numElements floats) with the synthetic values of tensor `name`
/// of shape `shape`. Values depend only on (seed, name, element index), so
/// legacy and v1 files of one seed hold identical tensors and a tensor can be
/// regenerated without the file. Matrices are uniform in +-1/sqrt(fan_in),
/// norms in 1 +- 0.1, embedding rows of norm ~1 (tied logits spread ~1), and
/// a separate classifier in +-5/sqrt(dim) (logits spread ~3).
/// `firstElement` lets a caller generate a large tensor in chunks. With
/// `period` > 0 element k takes element k % period's value: the same value
/// distribution, in a file that compresses to almost nothing.
/// `queryKeyGain` widens the query and key projections (wq, wk), so scores
/// grow by its square: attention that picks a few positions, as trained
/// models' does, instead of averaging them all.
void fillSyntheticTensor(const std::string &name, const std::vector<int64_t> &shape, uint64_t seed,
                         int64_t firstElement, float *out, int64_t count, int64_t period = 0,
                         float queryKeyGain = 1.0f);

/// Writes a llama2.c checkpoint (`formatVersion` 0 legacy, 1 v1) of `config`'s
/// shape with fillSyntheticTensor weights. Streams in small chunks, so memory
/// use does not grow with the model. On failure the partial file is removed.
Status writeSyntheticModel(const std::string &path, const ModelConfig &config, int formatVersion,
                           uint64_t seed, int64_t period = 0, float queryKeyGain = 1.0f);

/// Writes a llama2.c tokenizer.bin of `vocabSize` (>= 260) tokens for
/// synthetic models: <unk>, BOS, EOS, the 256 byte tokens <0x00>..<0xFF>,
/// then pieces " t<ID>" with decreasing scores. Any text encodes through the
/// byte fallback.
Status writeSyntheticTokenizer(const std::string &path, int32_t vocabSize);
/// That tokenizer.bin's bytes.
ErrorOr<std::string> syntheticTokenizerBytes(int32_t vocabSize);

/// Writes an F32 GGUF (version 3, llama architecture) of `config`'s shape
/// holding the llama2.c files' values of `seed` (GGUF keeps llama2.c's Q/K
/// row order); a shared classifier has no `output` tensor (both Quill and
/// llama.cpp then read the embedding), with the
/// vocabulary of the llama2.c `tokenizerPath` (the synthetic tokenizer when
/// empty) as a SentencePiece `llama` tokenizer. Streams; on failure the
/// partial file is removed.
Status writeSyntheticGguf(const std::string &path, const ModelConfig &config, uint64_t seed,
                          const std::string &tokenizerPath, int64_t period = 0,
                          float queryKeyGain = 1.0f);

} // namespace quill
