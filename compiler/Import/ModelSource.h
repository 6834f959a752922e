// The format-neutral view of a model file the compiler imports: its
// configuration, its weights under Quill's canonical names, and its own
// tokenizer. One implementation per format (llama2.c, GGUF, Hugging Face);
// openModel() picks the format from the file. MLIR-free.
#pragma once

#include "compiler/Import/TensorConversion.h"
#include "runtime/artifact/ModelConfig.h"
#include "runtime/support/Error.h"
#include "runtime/tokenizer/TokenizerFormat.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

namespace quill {

/// How a stored tensor's rows map to Quill's layout.
enum class RowOrder {
  AsStored,
  /// Q/K projections laid out for rotate-half rotary embedding (Hugging
  /// Face): within each head of `headDim` rows, stored row j * headDim/2 + i
  /// is Quill's (llama2.c's, Meta's, GGUF's) interleaved row 2i + j.
  RotateHalfToInterleaved,
};

/// One weight of a model under its canonical name (tok_embeddings,
/// layers.N.{attention_norm,wq,wk,wv,wo,ffn_norm,w1,w2,w3}, norm, output),
/// pointing at its bytes in the mapped file.
struct ImportedTensor {
  std::string name;           ///< Canonical.
  std::vector<int64_t> shape; ///< Canonical, row-major ([rows, columns]).
  std::string sourceName;     ///< The tensor's name in the file.
  std::string sourceFile;     ///< The file holding it (shards differ).
  SourceDType dtype = SourceDType::F32;
  const uint8_t *data = nullptr; ///< Bounds-checked against the file.
  RowOrder rowOrder = RowOrder::AsStored;
  int64_t headDim = 0; ///< For RotateHalfToInterleaved.

  int64_t numElements() const;
};

/// A chat template and where it was read, for --info ("tokenizer.chat_template
/// of model.gguf").
struct ImportedChatTemplate {
  std::string text;
  std::string source;
};

/// A model opened for import. The tensors point into files the object keeps
/// mapped, so they are valid as long as it lives.
class ModelSource {
public:
  virtual ~ModelSource();

  /// The path given to openModel.
  const std::string &path() const { return path_; }
  /// A short name for the model: the file's stem, or the checkpoint
  /// directory's name ("stories260K-hf" for "models/stories260K-hf/").
  std::string name() const;
  /// The format in words: "llama2.c legacy", "GGUF v3", ...
  const std::string &format() const { return format_; }
  /// The architecture the file declares: "llama", "mistral", "qwen2" or "qwen3".
  const std::string &architecture() const { return architecture_; }
  const ModelConfig &config() const { return config_; }
  /// Every weight the step uses, in canonical order (llama2cCanonicalNames).
  const std::vector<ImportedTensor> &tensors() const { return tensors_; }
  /// The tensor called `name` (canonical), or null.
  const ImportedTensor *find(const std::string &name) const;
  /// Facts worth telling in --info, e.g. that a classifier was found equal
  /// to the embedding and shared.
  const std::vector<std::string> &notes() const { return notes_; }

  /// Converts `tensor` to fp32 in Quill's layout into `out`, which holds
  /// tensor.numElements() floats.
  Status readTensor(const ImportedTensor &tensor, float *out) const;
  /// The same into a new buffer, by canonical name.
  ErrorOr<std::vector<float>> readTensor(const std::string &name) const;
  /// `tensor` in Quill's row order, encoded as `encoding`, into `out`, which
  /// holds dtypeBytes(encoding, tensor.numElements()) bytes: the stored
  /// bytes where the encodings agree, else each row converted through fp32
  /// and quantized (Quantize.h).
  Status readTensorEncoded(const ImportedTensor &tensor, SourceDType encoding, uint8_t *out) const;

  /// The model's own tokenizer, or an error saying why there is none (a
  /// llama2.c checkpoint has none; a tokenizer.json may be unsupported).
  virtual ErrorOr<TokenizerData> tokenizer() const = 0;
  /// The model's chat template (GGUF tokenizer.chat_template, Hugging Face
  /// tokenizer_config.json chat_template), or none; an error when the model
  /// has one that cannot be read (too large, not text).
  virtual ErrorOr<std::optional<ImportedChatTemplate>> chatTemplate() const {
    return std::optional<ImportedChatTemplate>();
  }

protected:
  ModelSource() = default;

  /// Checks `byName` (canonical name -> tensor) against the canonical names
  /// and shapes `config_` implies and stores them in canonical order. An
  /// error names the file, the tensor and the mismatch, or a tensor the
  /// config has no place for.
  Status setTensors(std::unordered_map<std::string, ImportedTensor> byName);
  /// The file's name for a canonical tensor, for "missing tensor" errors.
  virtual std::string sourceNameOf(const std::string &canonical) const { return canonical; }

  std::string path_;
  std::string format_;
  std::string architecture_ = "llama";
  ModelConfig config_;
  std::vector<std::string> notes_;

private:
  std::vector<ImportedTensor> tensors_;
  std::unordered_map<std::string, size_t> indexByName_;
};

/// The canonical row-major shape of tensor `name` for `config`, or an empty
/// vector when `name` is not canonical.
std::vector<int64_t> canonicalShape(const ModelConfig &config, const std::string &name);

/// "64x512": a shape as --info and error messages print it.
std::string shapeString(const std::vector<int64_t> &shape);

/// Opens a model, telling the format from the file:
///  * a directory holding config.json, or a file next to one whose content
///    is safetensors or JSON: a Hugging Face checkpoint (HfLlamaModel.h);
///  * "GGUF" magic: GGUF (GgufModel.h);
///  * "ak42" magic: a llama2.c version-1 checkpoint;
///  * anything else: a legacy llama2.c checkpoint, which has no magic.
/// Every failure is one line naming the offending file.
ErrorOr<std::unique_ptr<ModelSource>> openModel(const std::string &path);

/// Prints what quill-compile --info shows: format, architecture,
/// hyperparameters, the tokenizer (the model's own, and `tokenizerOverride`'s
/// when not empty), the chat template (`chatTemplateOverride`'s when not
/// empty, else the model's), and every tensor's source name, type and shape.
void describeModel(const ModelSource &model, const std::string &tokenizerOverride,
                   std::ostream &out, const std::string &chatTemplateOverride = "");

} // namespace quill
